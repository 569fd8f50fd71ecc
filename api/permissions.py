"""Scope checks: each view names the scope (read, write, govern) its methods need; tokens and roles grant them."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.permissions import BasePermission

from api.access import principal_of


def scope_required(request, view) -> str:
    method = "GET" if request.method in ("HEAD", "OPTIONS") else request.method
    return view.required_scopes[method]


class HasScope(BasePermission):
    """The caller is authenticated and holds the scope that `view.required_scopes[method]` names."""

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers 401 with the Bearer challenge
        scope = scope_required(request, view)
        if scope not in principal_of(request).scopes:
            raise exceptions.PermissionDenied(f"This needs the '{scope}' scope.")
        return True
