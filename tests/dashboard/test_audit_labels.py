"""The audit log in words: every action code the services write has a label, and details read as a definition list."""

from __future__ import annotations

import re
from pathlib import Path

from memory.audit_labels import ACTION_LABELS, action_label
from memory.services.audit import Actor, audit_record

SERVICES = Path(__file__).resolve().parents[2] / "memory" / "services"
LITERAL = re.compile(r'action="([a-z_]+\.[a-z_]+)"')


def test_every_action_code_the_services_write_has_a_label():
    written = {code for path in SERVICES.glob("*.py") for code in LITERAL.findall(path.read_text())}

    assert written and written <= set(ACTION_LABELS), written - set(ACTION_LABELS)
    assert action_label("knowledge.forget") == "Forgot a fact"
    assert action_label("page.outdated") == "Marked a turn outdated"


def test_the_log_shows_labels_and_details_as_a_definition_list(client, dpo_user, tenant, alice):
    detail = {"what": "user memory page", "page_ids": [3, 4]}
    audit_record(tenant=tenant, actor=Actor.system("test"), action="knowledge.forget", end_user=alice, detail=detail)
    client.force_login(dpo_user)

    body = client.get("/console/acme/audit/").content.decode()

    assert "Forgot a fact" in body and "<code>knowledge.forget</code>" in body
    assert "<dt>Page ids</dt><dd>3, 4</dd>" in body and "{&#x27;what&#x27;" not in body
