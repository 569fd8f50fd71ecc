"""The audit log screen: filters, CSV export, chain verification naming the first broken link; govern only."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from dashboard.views.audit import csv_cell
from memory.models import AuditEntry
from memory.services.audit import Actor
from memory.services.governance import memory_flag_set, memory_read_record
from tests.dashboard.conftest import HX

URL = "/console/acme/audit/"


@pytest.fixture
def trail(alice, bob, alice_space):
    """Reads and changes about Alice and Bob by two operators."""
    from memory.models import KnowledgeEntry

    sam, kim = Actor("operator", "901", "sam"), Actor("operator", "902", "kim")
    memory_read_record(actor=sam, end_user=alice, what="user memory page")
    memory_read_record(actor=kim, end_user=bob, what="user memory page")
    fact = KnowledgeEntry.objects.filter(end_user=alice).first()
    memory_flag_set(item=fact, flag="pinned", value=True, actor=kim, reason="Keep the diet in mind")
    return fact


def _rows(response):
    return list(response.context["page"].object_list)


def test_it_lists_entries_newest_first_with_names(client, dpo_user, trail):
    client.force_login(dpo_user)

    response = client.get(URL)

    assert [e.action for e in _rows(response)] == ["knowledge.pin", "memory.read", "memory.read"]
    body = response.content.decode()
    assert "Keep the diet in mind" in body and "Alice" in body and "Bob" in body and "kim" in body


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"user": "bob"}, ["memory.read"]),
        ({"user": "Alice"}, ["knowledge.pin", "memory.read"]),
        ({"actor": "kim"}, ["knowledge.pin", "memory.read"]),
        ({"action": "knowledge.pin"}, ["knowledge.pin"]),
        ({"since": "2000-01-01", "until": "2000-01-02"}, []),
    ],
)
def test_it_filters_by_user_actor_action_and_date(client, dpo_user, trail, filters, expected):
    client.force_login(dpo_user)

    assert [e.action for e in _rows(client.get(URL, filters))] == expected


def test_todays_date_range_keeps_todays_entries(client, dpo_user, trail):
    client.force_login(dpo_user)
    today = timezone.now().date()

    rows = _rows(client.get(URL, {"since": today - timedelta(days=1), "until": today}))

    assert len(rows) == 3


def test_with_htmx_only_the_results_are_rendered(client, dpo_user, trail):
    client.force_login(dpo_user)

    body = client.get(URL, {"actor": "sam"}, **HX).content.decode()

    assert body.lstrip().startswith('<div id="results">') and "<html" not in body


def test_the_csv_holds_the_filtered_entries(client, dpo_user, trail):
    client.force_login(dpo_user)

    response = client.get("/console/acme/audit.csv", {"actor": "kim"})

    assert response["Content-Type"].startswith("text/csv") and "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["action"] for r in rows] == ["knowledge.pin", "memory.read"]
    assert rows[0]["reason"] == "Keep the diet in mind" and rows[0]["end_user"] == "Alice" and rows[0]["actor"] == "kim"


def test_verifying_an_intact_chain_says_so(client, dpo_user, trail):
    client.force_login(dpo_user)

    page = client.get("/console/acme/audit/verify/")
    fragment = client.get("/console/acme/audit/verify/", **HX)

    assert "The chain verifies" in page.content.decode() and "<html" in page.content.decode()
    first = AuditEntry.objects.order_by("seq").first().created_at
    assert f"Chain intact: 3 entries since {first:%Y-%m-%d}." in page.content.decode()
    assert "Chain intact: 3 entries" in fragment.content.decode() and "<html" not in fragment.content.decode()


def test_verifying_a_tampered_chain_names_the_first_broken_entry(client, admin_user, trail):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")  # behind the append-only trigger's back
        cursor.execute("UPDATE memory_auditentry SET reason = 'nothing happened' WHERE seq = 3")
        cursor.execute("SET LOCAL session_replication_role = origin")
    client.force_login(admin_user)

    body = client.get("/console/acme/audit/verify/", **HX).content.decode()

    assert "broken at entry #3, written " in body and "its content was changed" in body and "knowledge.pin" in body


@pytest.mark.parametrize("role_user", ["agent_user", "supervisor_user"])
def test_the_audit_screens_need_govern(client, request, trail, role_user):
    client.force_login(request.getfixturevalue(role_user))

    for url in (URL, "/console/acme/audit.csv", "/console/acme/audit/verify/"):
        assert client.get(url).status_code == 403


def test_another_tenants_audit_is_404(client, other_operator, trail):
    client.force_login(other_operator)

    assert client.get(URL).status_code == 404
    assert client.get("/console/globex/audit/").status_code == 200
    assert AuditEntry.objects.filter(tenant__slug="globex").count() == 0


def _csv(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_a_superscript_digit_in_the_user_filter_is_a_search_not_a_crash(client, dpo_user, trail):
    client.force_login(dpo_user)

    response = client.get(URL, {"user": "²"})

    assert response.status_code == 200 and _rows(response) == []


def test_csv_cells_that_start_like_a_formula_are_neutralised(client, dpo_user, alice, trail):
    from memory.models import KnowledgeEntry

    fact = KnowledgeEntry.objects.filter(end_user=alice).first()
    actor = Actor("end_user", str(alice.pk), "alice")
    for i, reason in enumerate(['=HYPERLINK("http://evil.example","x")', "+1", "-1", "@SUM(A1)"]):
        memory_flag_set(item=fact, flag="pinned", value=bool(i % 2), actor=actor, reason=reason)
    client.force_login(dpo_user)

    rows = _csv(client.get("/console/acme/audit.csv", {"actor": "alice"}))

    assert sorted(r["reason"] for r in rows) == sorted(
        ['\'=HYPERLINK("http://evil.example","x")', "'+1", "'-1", "'@SUM(A1)"]
    )


def test_csv_cells_that_start_with_a_tab_or_carriage_return_are_neutralised_too():
    assert [csv_cell(v) for v in ["\tx", "\rx", "plain", 7]] == ["'\tx", "'\rx", "plain", 7]


def test_the_csv_detail_column_is_json(client, dpo_user, trail):
    client.force_login(dpo_user)

    rows = _csv(client.get("/console/acme/audit.csv", {"action": "memory.read"}))

    assert rows and all(json.loads(r["detail"])["what"] == "user memory page" for r in rows)


@pytest.mark.parametrize("dates", [{"since": "2024-02-30"}, {"since": "2024-03-02", "until": "2024-03-01"}])
def test_an_invalid_date_is_a_form_error_that_keeps_the_other_filters(client, dpo_user, trail, dates):
    client.force_login(dpo_user)

    response = client.get(URL, {"user": "alice", **dates})

    assert response.status_code == 200 and response.context["form"].errors
    assert _rows(response) and {e.end_user.external_id for e in _rows(response)} == {"alice"}


def test_the_csv_with_an_invalid_filter_answers_400_rather_than_the_whole_log(client, dpo_user, trail):
    client.force_login(dpo_user)

    response = client.get("/console/acme/audit.csv", {"user": "alice", "since": "2024-02-30"})

    assert response.status_code == 400 and b"since" in response.content


def test_a_from_date_after_the_to_date_is_an_error_shown_with_the_results_not_an_empty_log(client, dpo_user, trail):
    client.force_login(dpo_user)
    today = timezone.now().date()

    response = client.get(URL, {"since": today + timedelta(days=2), "until": today - timedelta(days=2)}, **HX)

    body = response.content.decode()
    assert body.lstrip().startswith('<div id="results">') and 'role="alert"' in body
    assert "is before “From”" in body and "no date range is applied" in body
    assert len(_rows(response)) == 3  # the range is not applied, rather than showing nothing


def test_an_end_user_acting_on_their_own_memory_is_shown_and_found_by_name(client, dpo_user, alice, trail):
    memory_flag_set(item=trail, flag="pinned", value=False, actor=Actor.end_user(alice), reason="Mine to change")
    client.force_login(dpo_user)

    for actor in ("alice", "Alic", str(alice.pk)):
        rows = _rows(client.get(URL, {"actor": actor}))
        assert [(e.action, e.end_user_actor) for e in rows] == [("knowledge.unpin", "Alice")], actor
    body = client.get(URL, {"actor": "alice"}).content.decode()
    assert "Alice" in body and "the end user" not in body
    assert _rows(client.get(URL, {"actor": "bob"})) == []


def test_hide_reads_leaves_only_changes(client, dpo_user, trail):
    client.force_login(dpo_user)

    assert [e.action for e in _rows(client.get(URL, {"hide_reads": "on"}))] == ["knowledge.pin"]
    assert len(_rows(client.get(URL))) == 3
