"""On a phone (390 px) a confirmation shows fixed at the bottom of the screen, near the thumb that acted, instead of
at the top of a page scrolled away from: the flash messages and the memory page's note after an HTMX swap."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

APP_CSS = Path(settings.BASE_DIR) / "static" / "css" / "app.css"
PHONE_RULES = re.compile(r"@media \(max-width: 48rem\) \{(?P<body>(?:[^{}]*\{[^{}]*\})*[^{}]*)\}")


def _phone_rule(selector: str) -> str:
    """The declarations of `selector` inside the narrow-screen media queries of app.css."""
    for media in PHONE_RULES.finditer(APP_CSS.read_text()):
        for rule in re.finditer(r"(?P<selectors>[^{}]+)\{(?P<declarations>[^{}]*)\}", media["body"]):
            if selector in [part.strip() for part in rule["selectors"].split(",")] and "fixed" in rule["declarations"]:
                return rule["declarations"]
    return ""


def test_flash_messages_are_fixed_at_the_bottom_of_a_phones_screen():
    rule = _phone_rule(".messages")

    assert "position: fixed" in rule and "bottom:" in rule


def test_the_memory_pages_note_after_a_swap_is_fixed_at_the_bottom_too():
    rule = _phone_rule(".memory-body > .message")

    assert "position: fixed" in rule and "bottom:" in rule


def test_the_messages_region_is_announced_to_screen_readers():
    template = (Path(settings.BASE_DIR) / "templates" / "base.html").read_text()

    assert '<ul class="messages" role="status">' in template
