"""The console and the API offer the same actions on each kind of memory item: exactly those memory.items lists.

Read from the outside: the console's buttons (its template tag) and edit forms, the API's PATCH serializers and
forget routes (resolved from the URLs), the update services' keywords, and the tables of actions and routes that the
HTTP tests walk, so a kind or flag added to the registry but not to an interface (or the reverse) fails here.
"""

from __future__ import annotations

import inspect

import pytest
from django.urls import resolve

from api.views.memory_items import ItemForgetView, ItemMarkView, ItemView
from dashboard.templatetags.console import memory_actions
from dashboard.views.actions import EDIT_FORMS
from memory.items import FLAG_ACTIONS, ITEM_KINDS, ItemKind
from memory.services.governance import FLAG_VERBS
from tests.api.routes import ROUTES
from tests.builders import T0
from tests.dashboard.test_actions import ACTIONS as CONSOLE_TESTED_ACTIONS

KINDS = list(ITEM_KINDS.values())
API_PATHS = {"page": "pages", "segment": "segments", "knowledge": "knowledge", "profile_version": "profile-versions"}
WHO = {"actor", "reason", "request_id"}


def console_actions(kind: ItemKind) -> set[str]:
    """Every button the console shows on an item of this kind, with its flags all clear and all set (and, for the
    kinds that have one, its validity ended and not)."""
    shown = set()
    for state in (False, True):
        dated = {"valid_to": T0 if state else None} if kind.dated else {}
        item = kind.model(**dict.fromkeys(kind.flags, state), **dated)
        shown |= {action for action, _label in memory_actions(kind.name, item)}
    return shown


def api_views(kind: ItemKind) -> tuple[type, type]:
    item = resolve(f"/api/v1/{API_PATHS[kind.name]}/1/").func.view_class
    forget = resolve(f"/api/v1/{API_PATHS[kind.name]}/1/forget/").func.view_class
    return item, forget


def api_patch_fields(kind: ItemKind) -> set[str]:
    return set(api_views(kind)[0].patch_class().fields) - {"reason"}


def api_marks(kind: ItemKind) -> set[str]:
    """The outdated and current routes the API has for this kind (each of its own view, reading the registry)."""
    marks = set()
    for action in ("outdated", "current"):
        view = resolve(f"/api/v1/{API_PATHS[kind.name]}/1/{action}/").func.view_class
        if issubclass(view, ItemMarkView) and view.kind is kind and view.action == action:
            marks.add(action)
    return marks


def api_actions(kind: ItemKind) -> set[str]:
    """What the API lets a client do to an item of this kind: its PATCH fields as actions, outdated and current,
    and forget."""
    fields = api_patch_fields(kind)
    actions = {verb for flag in fields & FLAG_VERBS.keys() for verb in FLAG_VERBS[flag]}
    actions |= {"edit"} if fields - FLAG_VERBS.keys() else set()
    forget = api_views(kind)[1]
    actions |= api_marks(kind)
    return actions | ({"forget"} if issubclass(forget, ItemForgetView) and forget.kind is kind else set())


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_the_console_and_the_api_offer_the_actions_the_registry_lists(kind):
    assert console_actions(kind) == set(kind.actions) == api_actions(kind)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_the_api_reads_and_changes_each_kind_through_the_registry(kind):
    item_view, forget_view = api_views(kind)

    assert issubclass(item_view, ItemView) and item_view.kind is kind
    assert issubclass(forget_view, ItemForgetView) and forget_view.kind is kind


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_the_console_the_api_and_the_service_edit_the_same_fields(kind):
    service = inspect.signature(kind.update).parameters
    console_form = EDIT_FORMS.get(kind.name)

    assert api_patch_fields(kind) == set(kind.flags) | set(kind.editable)
    assert set(service) - WHO - {kind.param} == set(kind.flags) | set(kind.editable)
    assert all(parameter.kind is inspect.Parameter.KEYWORD_ONLY for parameter in service.values())
    if kind.editable:
        assert set(console_form.base_fields) - {"reason"} == set(kind.editable)
    else:
        assert console_form is None


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_each_kind_is_its_models_kind_with_its_models_flags(kind):
    """Governance reads both from the item itself (item_kind, and the flag fields its model has)."""
    flag_fields = {field.name for field in kind.model._meta.concrete_fields} & FLAG_VERBS.keys()

    assert kind.model.item_kind == kind.name
    assert set(kind.flags) == flag_fields
    assert kind.get.__name__ == f"{kind.name}_get"


def test_each_flag_has_an_action_that_sets_it_and_one_that_clears_it():
    assert FLAG_ACTIONS == {
        "pin": ("pinned", True),
        "unpin": ("pinned", False),
        "lock": ("locked", True),
        "unlock": ("locked", False),
    }


def test_the_http_tests_walk_every_action_and_route_of_the_registry():
    registry = {(kind.name, action) for kind in KINDS for action in kind.actions}
    api_routes = {(route.method, route.path.split("/")[0]) for route in ROUTES if route.addresses_an_object}

    assert set(CONSOLE_TESTED_ACTIONS) == registry
    for kind in KINDS:
        assert {("patch", API_PATHS[kind.name]), ("post", API_PATHS[kind.name])} <= api_routes
    marked = {route.path.split("/")[0] for route in ROUTES if route.path.endswith(("/outdated/", "/current/"))}
    assert marked == {API_PATHS[kind.name] for kind in KINDS if kind.dated}
