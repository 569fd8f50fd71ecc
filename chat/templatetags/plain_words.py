"""Memory told back to the end user in plain words: the second person ("You are vegetarian"), never the internal
wording the steps store ("Profile (offline mode, extractive):", "The user is …")."""

from __future__ import annotations

from django import template

from memory.statements import to_user
from memory.steps.offline_steps import PROFILE_HEADER

register = template.Library()


@register.filter
def to_you(text: str) -> str:
    """A stored statement as said to the user: "The user is vegetarian." -> "You are vegetarian."."""
    return to_user(text or "")


@register.filter
def profile_for_you(text: str) -> list[str]:
    """A profile's lines said to the user, without the header the offline steps write or the list dashes."""
    lines = (line.strip() for line in (text or "").splitlines())
    return [to_user(line.removeprefix("- ")) for line in lines if line and line != PROFILE_HEADER]
