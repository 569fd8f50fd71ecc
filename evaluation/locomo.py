"""Reading LoCoMo-format conversations as turns for the memory pipeline.

`speaker_a` plays the user and `speaker_b` the assistant. Consecutive utterances of one speaker are joined, each
(user, assistant) pair becomes one page, and no utterance is dropped: a session that opens with `speaker_b` yields a
page whose user side is marked "(no message)", one that ends with `speaker_a` a page whose reply is "(no reply)".
Image captions are rendered as "... and shared <caption>". Every page keeps the `dia_id`s it holds.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

NO_MESSAGE = "(no message)"
NO_REPLY = "(no reply)"
SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass
class LocomoTurn:
    """One page to record: the user's side, the assistant's side, when, and the dia_ids it covers."""

    user_message: str
    assistant_reply: str
    at: datetime
    session: int
    dia_ids: list[str] = field(default_factory=list)


def load(path: str | Path) -> list[dict]:
    """The conversations of a LoCoMo JSON file (a list of samples with `conversation` and `qa`)."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, list):
        raise ValueError(f"{path} is not a LoCoMo file: expected a JSON list of conversations")
    return data


def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware datetime (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def utterance_text(turn: dict) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} and shared {caption}".strip()
    return text


def _utterances(session: list[dict]) -> list[tuple[str, str, list[str]]]:
    """Consecutive turns of one speaker joined into one utterance: (speaker, text, dia_ids)."""
    joined: list[tuple[str, str, list[str]]] = []
    for turn in session:
        speaker, text, dia_id = turn.get("speaker", ""), utterance_text(turn), str(turn.get("dia_id", ""))
        if joined and joined[-1][0] == speaker:
            previous = joined[-1]
            joined[-1] = (speaker, f"{previous[1]}\n{text}", [*previous[2], dia_id])
        else:
            joined.append((speaker, text, [dia_id]))
    return joined


def conversation_turns(conversation: dict) -> list[LocomoTurn]:
    """Every session of one conversation as pages, in session order, a minute apart within a session."""
    user = conversation["speaker_a"]
    sessions = sorted(int(m.group(1)) for key in conversation if (m := SESSION_KEY.match(key)))
    turns: list[LocomoTurn] = []
    for number in sessions:
        session = conversation.get(f"session_{number}")
        if not isinstance(session, list) or not session:
            continue
        start = session_time(conversation[f"session_{number}_date_time"])
        pending: LocomoTurn | None = None
        for speaker, text, dia_ids in _utterances(session):
            at = start + timedelta(minutes=len(turns))
            if speaker == user:
                if pending is not None:
                    pending.assistant_reply = NO_REPLY
                    turns.append(pending)
                pending = LocomoTurn(text or NO_MESSAGE, "", at, number, dia_ids)
            elif pending is None:
                turns.append(LocomoTurn(NO_MESSAGE, text or NO_REPLY, at, number, dia_ids))
            else:
                pending.assistant_reply = text or NO_REPLY
                pending.dia_ids.extend(dia_ids)
                turns.append(pending)
                pending = None
        if pending is not None:
            pending.assistant_reply = NO_REPLY
            turns.append(pending)
    return turns
