"""Scope checks: each view names the scope (read, write, govern) its methods need; tokens and roles grant them."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.permissions import BasePermission

from api.access import principal_of


def scope_required(request, view) -> str | None:
    """The scope the request's method needs; None for a method the view does not handle (DRF answers 405)."""
    method = "GET" if request.method in ("HEAD", "OPTIONS") else request.method
    scope = view.required_scopes.get(method)
    if scope is None and hasattr(view, method.lower()):
        raise exceptions.PermissionDenied(f"{method} is not open to tokens here.")  # a view that forgot its scope
    return scope


class HasScope(BasePermission):
    """The caller is authenticated and holds the scope that `view.required_scopes[method]` names."""

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers 401 with the Bearer challenge
        scope = scope_required(request, view)
        if scope is not None and scope not in principal_of(request).scopes:
            raise exceptions.PermissionDenied(f"This needs the '{scope}' scope.")
        return True
