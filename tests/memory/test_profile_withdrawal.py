"""Finding a rejected fact in a profile's text: the offline line form, a sentence nearly verbatim inside prose, and a
paraphrase (reported, never cut)."""

from __future__ import annotations

from memory.profile_withdrawal import profile_without
from memory.steps.offline_steps import PROFILE_HEADER

OFFLINE = f"{PROFILE_HEADER}\n- The user likes tea.\n- 2026-01-04: The user sees a therapist.\n- The user bakes bread."


def test_it_removes_the_offline_line_of_a_fact_whatever_its_case_spacing_and_date():
    withdrawal = profile_without(OFFLINE, ["the user  SEES a therapist"])

    assert withdrawal.text == f"{PROFILE_HEADER}\n- The user likes tea.\n- The user bakes bread."
    assert withdrawal.removed == ["- 2026-01-04: The user sees a therapist."]


def test_it_removes_a_sentence_that_states_the_fact_nearly_verbatim_and_keeps_the_rest_of_the_line():
    prose = "Ann lives in Leeds. The user sees a therapist weekly. She bakes bread."

    withdrawal = profile_without(prose, ["The user sees a therapist every week."])

    assert withdrawal.text == "Ann lives in Leeds. She bakes bread."
    assert withdrawal.removed == ["The user sees a therapist weekly."]


def test_a_paraphrase_is_reported_not_cut():
    prose = "Ann has been seeing a therapist about her anxiety."

    withdrawal = profile_without(prose, ["The user sees a therapist for anxiety."])

    assert (withdrawal.text, withdrawal.changed) == (prose, False)
    assert withdrawal.needs_rederiving


def test_a_profile_that_never_states_the_fact_is_unchanged():
    withdrawal = profile_without(OFFLINE, ["The user owns a red bicycle."])

    assert (withdrawal.text, withdrawal.removed, withdrawal.paraphrased) == (OFFLINE, [], [])


def test_a_profile_left_with_only_its_header_becomes_empty():
    withdrawal = profile_without(f"{PROFILE_HEADER}\n- The user likes tea.", ["The user likes tea."])

    assert withdrawal.text == ""
