"""A real LoCoMo conversation through the real pipeline (offline mode, real embedder) groups turns by topic."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from evaluation import locomo
from memory.models import KnowledgeEntry, Page, ProfileVersion, Segment
from memory.models.tiers import Tier
from tests import builders

LOCOMO_DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"


def test_turns_pair_the_two_speakers_and_drop_nothing():
    conversation = {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Bo", "dia_id": "D1:1", "text": "Morning!"},
            {"speaker": "Ann", "dia_id": "D1:2", "text": "Hi Bo.", "blip_caption": "a photo of a dog"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Look at Rex."},
            {"speaker": "Bo", "dia_id": "D1:4", "text": "Cute!"},
            {"speaker": "Ann", "dia_id": "D1:5", "text": "Bye."},
        ],
        "session_2_date_time": "9:00 am on 9 May, 2023",
    }
    turns = locomo.conversation_turns(conversation)
    assert [(t.user_message, t.assistant_reply) for t in turns] == [
        (locomo.NO_MESSAGE, "Morning!"),
        ("Hi Bo. and shared a photo of a dog\nLook at Rex.", "Cute!"),
        ("Bye.", locomo.NO_REPLY),
    ]
    assert [t.dia_ids for t in turns] == [["D1:1"], ["D1:2", "D1:3", "D1:4"], ["D1:5"]]
    assert turns[0].at.isoformat() == "2023-05-08T13:56:00+00:00"


def mean_cosines(pages: list[Page]) -> tuple[float, float]:
    vectors = np.array([p.embedding for p in pages])
    segments = np.array([p.segment_id for p in pages])
    similarity = vectors @ vectors.T
    upper = np.triu_indices(len(pages), 1)
    same = (segments[:, None] == segments[None, :])[upper]
    return float(similarity[upper][same].mean()), float(similarity[upper][~same].mean())


@pytest.mark.slow
@pytest.mark.real_embedder
@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason=f"LoCoMo dev split not found at {LOCOMO_DEV}")
def test_a_locomo_conversation_is_grouped_into_topical_segments(db, django_capture_on_commit_callbacks):
    conversation = next(c for c in locomo.load(LOCOMO_DEV) if c["sample_id"] == "conv-26")["conversation"]
    turns = locomo.conversation_turns(conversation)
    space = builders.space_of(builders.end_user(tenant="locomo", external_id="caroline"))
    with django_capture_on_commit_callbacks(execute=True):
        for turn in turns:
            locomo_record(space, turn)
    pages = list(Page.objects.filter(space=space, tier=Tier.MID_TERM))
    stored_dia_ids = {d for p in Page.objects.filter(space=space) for d in p.source_meta["dia_ids"]}
    assert len(stored_dia_ids) == sum(
        len(v) for k, v in conversation.items() if k.startswith("session_") and isinstance(v, list)
    )
    assert all(p.segment_id is not None for p in pages)
    segments = Segment.objects.filter(space=space).count()
    assert 0.05 * len(pages) <= segments <= 0.5 * len(pages)
    sizes = Counter(p.segment_id for p in pages)
    assert max(sizes.values()) <= 0.4 * len(pages)  # no catch-all segment
    intra, inter = mean_cosines(pages)
    # pages of one segment are markedly more alike than pages of different segments (0.49 vs 0.32 when written)
    assert intra - inter >= 0.10, (intra, inter)
    assert ProfileVersion.objects.filter(end_user=space.end_user).exists()
    assert KnowledgeEntry.objects.filter(end_user=space.end_user).count() >= 10


def locomo_record(space, turn: locomo.LocomoTurn):
    return builders.turn(
        space,
        user_message=turn.user_message,
        assistant_reply=turn.assistant_reply,
        at=turn.at,
        source="import",
        source_meta={"dia_ids": turn.dia_ids, "session": turn.session},
    )
