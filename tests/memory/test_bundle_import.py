"""Import of a memory bundle: the round trip keeps memory whole, a bad bundle is refused whole with its first
problem, a second import changes nothing, and pause, erasure and the audit trail are respected."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from django.utils import timezone

from memory.bundles import BundleInvalid, bundle_parse
from memory.models import AuditEntry, KnowledgeEntry, MemoryImport, Page, Segment
from memory.services.bundle_import import ImportRefused, bundle_stage, memory_import, memory_import_staged
from memory.services.gdpr import user_erase
from memory.services.tenancy import end_user_create
from memory.services.turns import EndUserClosed
from tests import builders
from tests.bundles import DPO, bundle_bytes, bundle_of, governed_memory, memory_of


@pytest.fixture
def alice_memory(alice, assistant, django_capture_on_commit_callbacks) -> dict:
    """Alice's governed memory, and what it looked like."""
    governed_memory(alice, assistant, django_capture_on_commit_callbacks)
    return memory_of(alice)


@pytest.fixture
def bundle(alice, alice_memory) -> dict:
    return bundle_of(alice)


def test_export_erase_import_gives_back_the_same_memory(alice, tenant, alice_memory, bundle):
    user_erase(end_user=alice, actor=DPO, legal_basis="GDPR Art. 17", dry_run=False)
    again = end_user_create(tenant=tenant, external_id="alice")

    result = memory_import(end_user=again, bundle=bundle, actor=DPO)

    assert memory_of(again) == alice_memory
    assert result.counts["pages"] == len(alice_memory["pages"]) and result.counts["pinned"] == 3
    assert any(sources for *_, sources in alice_memory["knowledge"]), "the facts keep their source pages"


def test_a_user_of_another_tenant_gets_the_same_memory_with_new_ids(alice, alice_memory, bundle, stranger):
    memory_import(end_user=stranger, bundle=bundle, actor=DPO)

    assert memory_of(stranger) == alice_memory
    old_ids = {p["id"] for space in bundle["memory"] for p in space["pages"]}
    assert not old_ids & set(Page.objects.filter(space__end_user=stranger).values_list("id", flat=True))
    assert memory_of(alice) == alice_memory  # the source is untouched


def test_every_vector_is_computed_again_by_this_installations_embedder(bundle, stranger, embedder):
    for page in bundle["memory"][0]["pages"]:
        page["embedding"] = [0.5, 0.5]  # another model's vector, of another size

    memory_import(end_user=stranger, bundle=bundle, actor=DPO)

    placed = Page.objects.filter(space__end_user=stranger, segment__isnull=False).order_by("seq")
    assert placed and all(builders.same_page_vector(p.embedding, embedder.embed([p.memory_text])[0]) for p in placed)
    assert all(s.embedding is not None for s in Segment.objects.filter(space__end_user=stranger))
    fact = KnowledgeEntry.objects.filter(end_user=stranger).first()
    assert np.allclose(fact.embedding, embedder.embed([fact.text])[0])


def test_importing_the_same_bundle_twice_changes_nothing_the_second_time(bundle, stranger):
    first = memory_import(end_user=stranger, bundle=bundle, actor=DPO)
    before = memory_of(stranger)

    second = memory_import(end_user=stranger, bundle=json.loads(json.dumps(bundle)), actor=DPO)

    assert second.already_imported and second.counts == first.counts
    assert memory_of(stranger) == before
    assert AuditEntry.objects.filter(action="memory.import", subject_id=stranger.pk).count() == 1
    assert MemoryImport.objects.filter(end_user=stranger).count() == 1


def test_a_dry_run_counts_what_would_be_created_and_creates_nothing(bundle, stranger):
    result = memory_import(end_user=stranger, bundle=bundle, actor=DPO, dry_run=True)

    assert result.dry_run and result.counts["pages"] == 12 and result.counts["segments"] >= 2
    assert result.assistants == {"ava": "ava"}
    assert not Page.objects.filter(space__end_user=stranger).exists()
    assert not AuditEntry.objects.filter(action="memory.import").exists()


def test_the_import_is_audited_with_its_counts_and_fingerprint(bundle, stranger):
    result = memory_import(end_user=stranger, bundle=bundle, actor=DPO, request_id="req-1")

    entry = AuditEntry.objects.get(action="memory.import")
    assert entry.subject_id == stranger.pk and entry.request_id == "req-1"
    assert entry.detail["fingerprint"] == result.fingerprint and entry.detail["counts"] == result.counts


VERSION_1_NUMBER = "$.profile_versions[1].number"


@pytest.mark.parametrize(
    ("break_it", "path"),
    [
        (lambda b: b["memory"][0]["pages"][1].update(at="yesterday"), "$.memory[0].pages[1].at"),
        (lambda b: b["knowledge"][0].update(source_page_ids=[999999]), "$.knowledge[0].source_page_ids[0]"),
        (lambda b: b["memory"][0]["pages"][2].update(segment_id=424242), "$.memory[0].pages[2].segment_id"),
        (lambda b: b.update(format="someone-else/2"), "$.format"),
        (
            lambda b: b["profile_versions"][1].update(number=b["profile_versions"][0]["number"]),
            "$.profile_versions[1].number",
        ),
        (lambda b: b["memory"][0]["pages"][0].update(user_message="a\x00b"), "$.memory[0].pages[0].user_message"),
        (lambda b: b["memory"][0]["segments"][0].update(n_visit=2**40), "$.memory[0].segments[0].n_visit"),
    ],
)
def test_a_bundle_that_fails_validation_is_refused_whole_naming_its_first_problem(bundle, stranger, break_it, path):
    break_it(bundle)

    with pytest.raises(BundleInvalid) as refused:
        memory_import(end_user=stranger, bundle=bundle, actor=DPO)

    assert refused.value.path == path and refused.value.reason
    assert not Page.objects.filter(space__end_user=stranger).exists()
    assert not KnowledgeEntry.objects.filter(end_user=stranger).exists()


def test_html_and_script_in_a_bundle_are_stored_as_text(bundle, stranger):
    hostile = "<script>alert('x')</script><img src=x onerror=alert(1)>"
    bundle["memory"][0]["pages"][0]["user_message"] = hostile
    bundle["knowledge"][0]["text"] = hostile

    memory_import(end_user=stranger, bundle=bundle, actor=DPO)

    assert Page.objects.filter(space__end_user=stranger, user_message=hostile).exists()
    assert KnowledgeEntry.objects.filter(end_user=stranger, text=hostile).exists()


def test_short_term_pages_past_this_installations_capacity_go_through_the_pipeline(
    bundle, stranger, settings, django_capture_on_commit_callbacks
):
    settings.MEMORY_STM_CAPACITY = 3
    with django_capture_on_commit_callbacks(execute=True):
        memory_import(end_user=stranger, bundle=bundle, actor=DPO)

    pages = Page.objects.filter(space__end_user=stranger)
    assert pages.filter(tier="stm").count() == 3
    assert not pages.filter(tier="mtm", segment__isnull=True).exists(), "the evicted pages were placed"
    assert pages.count() == 12


def test_pending_pages_of_the_bundle_are_placed_by_the_updating_task(
    bundle, stranger, django_capture_on_commit_callbacks
):
    for page in bundle["memory"][0]["pages"]:
        if page["tier"] == "mtm" and not page["pinned"]:
            page.update(segment_id=None, previous_page_id=None)
            break
    with django_capture_on_commit_callbacks(execute=True):
        memory_import(end_user=stranger, bundle=bundle, actor=DPO)

    assert not Page.objects.filter(space__end_user=stranger, tier="mtm", segment__isnull=True).exists()


def test_a_user_whose_memory_is_paused_is_refused(bundle, stranger):
    builders.pause(builders.space_of(stranger, stranger.tenant.assistants.get(external_id="ava")))

    with pytest.raises(ImportRefused, match="paused"):
        memory_import(end_user=stranger, bundle=bundle, actor=DPO)


def test_memory_that_already_holds_pages_is_refused(bundle, stranger):
    builders.turn(builders.space_of(stranger, stranger.tenant.assistants.get(external_id="ava")))

    with pytest.raises(ImportRefused, match="already holds 1 pages"):
        memory_import(end_user=stranger, bundle=bundle, actor=DPO)


def test_an_erased_or_deactivated_user_cannot_be_imported_into(bundle, stranger, bob):
    user_erase(end_user=stranger, actor=DPO, legal_basis="GDPR Art. 17", dry_run=False)
    with pytest.raises(EndUserClosed) as erased:
        memory_import(end_user=stranger, bundle=bundle, actor=DPO)
    assert erased.value.erased

    bob.is_active = False
    type(bob).objects.filter(pk=bob.pk).update(is_active=False)
    with pytest.raises(EndUserClosed) as deactivated:
        memory_import(end_user=bob, bundle=bundle, actor=DPO)
    assert not deactivated.value.erased


def test_a_missing_assistant_is_refused_unless_another_is_chosen(bundle, stranger):
    bundle["memory"][0]["assistant"]["external_id"] = "max"
    for entry in bundle["knowledge"]:
        if entry["assistant"] is not None:
            entry["assistant"] = "max"
    with pytest.raises(ImportRefused, match="no assistant 'max'"):
        memory_import(end_user=stranger, bundle=bundle, actor=DPO, dry_run=True)

    result = memory_import(end_user=stranger, bundle=bundle, actor=DPO, assistant_external_id="ava")

    assert result.assistants == {"max": "ava"}
    assert Page.objects.filter(space__end_user=stranger, space__assistant__external_id="ava").count() == 12


def test_a_staged_bundle_is_imported_once_confirmed_and_then_dropped(bundle, stranger):
    staged = bundle_stage(end_user=stranger, bundle=bundle, actor=DPO)
    assert bundle_stage(end_user=stranger, bundle=bundle, actor=DPO).pk == staged.pk

    memory_import_staged(staged=staged, actor=DPO)

    assert list(MemoryImport.objects.filter(end_user=stranger).values_list("status", "bundle")) == [("done", None)]


def test_erasure_deletes_the_users_imports_and_staged_bundles(bundle, stranger):
    bundle_stage(end_user=stranger, bundle=bundle, actor=DPO)

    erasure = user_erase(end_user=stranger, actor=DPO, legal_basis="GDPR Art. 17", dry_run=False)

    assert erasure.counts["memory_memoryimport"] == 1 and not MemoryImport.objects.exists()


# --- Parsing hostile input ------------------------------------------------------------------------------------


def test_a_bundle_past_the_size_limit_is_refused_before_it_is_parsed(settings):
    settings.MEMORY_IMPORT_MAX_BYTES = 1024
    with pytest.raises(BundleInvalid, match="MEMORY_IMPORT_MAX_BYTES"):
        bundle_parse(b'{"format": "' + b"x" * 2000 + b'"}')


@pytest.mark.parametrize("depth", [40, 200_000])
def test_a_deeply_nested_bundle_is_refused(depth):
    with pytest.raises(BundleInvalid, match="nested more than 32 levels"):
        bundle_parse(b"[" * depth + b"]" * depth)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [(b"\xff\xfe", "not UTF-8"), (b'{"a": NaN}', "NaN is not a JSON number"), (b"{", "not JSON")],
)
def test_text_that_is_not_json_is_refused_with_the_reason(raw, reason):
    with pytest.raises(BundleInvalid, match=reason):
        bundle_parse(raw)


def test_the_exports_zip_is_read_and_a_zip_bomb_refused(alice, alice_memory, settings):
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("export.json", bundle_bytes(alice))
    assert bundle_parse(packed.getvalue())["format"] == "memoryos-export/1"

    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("export.json", b" " * 5_000_000)
    settings.MEMORY_IMPORT_MAX_BYTES = 1_000_000
    with pytest.raises(BundleInvalid, match="unpacks to 5000000 bytes"):
        bundle_parse(bomb.getvalue())


def test_the_export_names_its_schema_version_and_validates_against_the_schema(bundle):
    from memory.bundles import bundle_validate

    assert bundle["schema_version"] == 1
    bundle_validate(bundle, now=timezone.now())


def test_a_pause_the_user_chose_is_kept(bundle, stranger):
    bundle["memory"][0]["memory_paused"] = True

    memory_import(end_user=stranger, bundle=bundle, actor=DPO)

    assert stranger.memory_spaces.get().paused
    assert Page.objects.filter(space__end_user=stranger).count() == 12, "nothing was dropped on the way in"


def test_a_bundle_from_before_schema_version_and_reply_source_is_read_as_version_1(bundle, stranger):
    del bundle["schema_version"]
    for page in bundle["memory"][0]["pages"]:
        del page["reply_source"]

    result = memory_import(end_user=stranger, bundle=bundle, actor=DPO)

    assert result.counts["pages"] == 12
    assert set(Page.objects.filter(space__end_user=stranger).values_list("reply_source", flat=True)) == {"assistant"}


def test_system_replies_stay_system_text(bundle, stranger):
    bundle["memory"][0]["pages"][-1]["reply_source"] = "system"

    memory_import(end_user=stranger, bundle=bundle, actor=DPO)

    assert Page.objects.filter(space__end_user=stranger, reply_source="system").count() == 1
