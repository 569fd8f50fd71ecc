"""A tenant's government-id patterns run in linear time (RE2): `Q(a|aa)+$`, which a backtracking engine's guard
accepted, costs a long message milliseconds, twenty such patterns included; a pattern RE2 cannot run is refused
when saved, with a message saying why and what to do."""

from __future__ import annotations

import time

import pytest

from memory.models import PersonalDataPolicy
from memory.personal_data import Detector
from memory.services.audit import Actor
from memory.services.personal_data import PolicyError, personal_data_policy_update, text_for_storage

EVADING = r"Q(a|aa)+$"
LINE = "Q" + "a" * 60 + "!"  # before: each line split 2^60 ways, until the timeout


def test_the_pattern_that_evaded_the_guard_is_saved_and_costs_a_long_message_milliseconds(tenant):
    patterns = [EVADING] + [f"Q{n}(a|aa)+$" for n in range(19)]  # the 20 a tenant may have
    personal_data_policy_update(
        tenant=tenant, actor=Actor.system("test"), reason="test", government_id="do_not_store",
        government_id_patterns=patterns,
    )  # fmt: skip
    message = "\n".join([LINE] * 150)

    started = time.process_time()
    stored = text_for_storage(tenant=tenant, text=message)
    cpu = time.process_time() - started

    print(f"CPU for 20 patterns on a 150-line message: {cpu * 1000:.1f} ms")
    assert cpu < 0.5 and stored == message  # nothing withheld: every line was checked


def test_the_detector_runs_tenant_patterns_on_re2():
    detector = Detector.configured(government_id_patterns=[EVADING])

    assert type(detector.government_ids[0]).__module__.startswith("re2")
    assert detector.find("id Qaaaa!") == [] and detector.find("Qaa")[0].category == "government_id"


@pytest.mark.parametrize("pattern", [r"(?=\d)\d{9}", r"(\d)\1{8}", r"(?<!x)\d{9}"])
def test_a_pattern_re2_cannot_run_is_refused_at_save_with_a_clear_message(tenant, pattern):
    with pytest.raises(PolicyError) as refused:
        personal_data_policy_update(
            tenant=tenant, actor=Actor.system("test"), reason="test", government_id_patterns=[pattern]
        )

    assert "cannot be run in linear time" in str(refused.value) and "rewrite it" in str(refused.value)
    assert not PersonalDataPolicy.objects.filter(tenant=tenant).exists()


def test_a_pattern_saved_before_the_check_still_costs_a_message_a_bounded_time(tenant):
    PersonalDataPolicy.objects.create(
        tenant=tenant, government_id="do_not_store", government_id_patterns=[f"(?=Q){n}?Q(a|aa)+$" for n in range(20)]
    )
    message = "\n".join([LINE] * 150)

    started = time.process_time()
    stored = text_for_storage(tenant=tenant, text=message)
    cpu = time.process_time() - started

    print(f"CPU for 20 look-ahead patterns on a 150-line message: {cpu:.2f} s")
    assert cpu < 1.5 and LINE not in stored  # what could not be checked in time is withheld, never stored
