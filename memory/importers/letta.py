"""A Letta agent file (.af) -> a memory bundle: the "human" block a profile version, user/assistant messages turns.

Input: Letta's AgentFileSchema (letta-ai/agent-file): `{"agents": [{"id", "name", "block_ids", "messages": [{"id",
"role", "content": [{"type": "text", "text"}], "tool_calls", "created_at"}]}], "blocks": [{"id", "label", "value"}],
"tools", "files", "sources", ...}`. Formats and what is dropped: docs/importing.md.
"""

from __future__ import annotations

import json

from memory.importers.common import bundle_new, expect, iso_time, page_new, profile_add, refuse, space_new, text_at

SYSTEM = "letta"
HUMAN = "human"  # the core-memory block about the person the agent talks to


def letta_bundle(data: object, *, external_id: str) -> dict:
    """The bundle of `data` (a parsed .af) for the end user `external_id`; BundleInvalid if malformed."""
    agent_file = expect(data, dict, "$", "an agent file (a JSON object with `agents` and `blocks`)")
    agents = expect(agent_file.get("agents"), list, "$.agents", "a list of agents")
    if len(agents) != 1:
        raise refuse("$.agents", f"holds {len(agents)} agents; import an agent file of one agent")
    agent = expect(agents[0], dict, "$.agents[0]", "an agent")
    bundle = bundle_new(external_id=external_id)
    human = _human_block(agent, expect(agent_file.get("blocks", []), list, "$.blocks", "a list of blocks"))
    if human:
        profile_add(bundle, human, at=None)
    pages = _pages(expect(agent.get("messages", []), list, "$.agents[0].messages", "a list of messages"))
    if pages:
        name = text_at(agent, "name", "$.agents[0]", required=False) or SYSTEM
        bundle["memory"].append(space_new(name, pages))
    return bundle


def _human_block(agent: dict, blocks: list) -> str:
    """The value of the agent's "human" block (blocks the agent names by id; all of them if it names none)."""
    ids = set(expect(agent.get("block_ids") or [], list, "$.agents[0].block_ids", "a list of block ids"))
    for index, block in enumerate(blocks):
        block = expect(block, dict, f"$.blocks[{index}]", "a block")
        if block.get("label") == HUMAN and (not ids or block.get("id") in ids):
            return text_at(block, "value", f"$.blocks[{index}]", required=False)
    return ""


def _pages(messages: list) -> list[dict]:
    """One page per user message answered by the assistant: the user's text and the assistant's next reply."""
    pages: list[dict] = []
    asked: tuple[str, dict, str] | None = None  # the user's text, origin and time, waiting for a reply
    for index, message in enumerate(messages):
        path = f"$.agents[0].messages[{index}]"
        message = expect(message, dict, path, "a message")
        text = _text(message, path)
        if message.get("role") == "user" and text:
            origin = {"system": SYSTEM, "id": str(message.get("id", ""))[:200]}
            asked = (text, origin, iso_time(message.get("created_at"), f"{path}.created_at"))
        elif message.get("role") == "assistant" and text and asked:
            user, origin, at = asked
            pages.append(page_new(len(pages) + 1, user=user, reply=text, at=at, origin=origin))
            asked = None
    return pages


def _text(message: dict, path: str) -> str:
    """What the message said to the other side: its text parts, or (older agents) send_message's argument."""
    content = message.get("content") or []
    if isinstance(content, str):
        parts = [content]
    else:
        content = expect(content, list, f"{path}.content", "a list of content parts")
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    text = "\n".join(p for p in parts if isinstance(p, str)).strip()
    if message.get("role") == "assistant" and not text:
        text = _sent_message(message.get("tool_calls") or [])
    return _user_message(text) if message.get("role") == "user" else text


def _sent_message(calls: list) -> str:
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and function.get("name") == "send_message":
            return str(_json_object(function.get("arguments")).get("message", "")).strip()
    return ""


def _user_message(text: str) -> str:
    """Older agents wrap what the user typed as `{"type": "user_message", "message": ...}`; heartbeats and
    login events are system noise, not the user speaking."""
    wrapped = _json_object(text)
    if not wrapped:
        return text
    return str(wrapped.get("message", "")).strip() if wrapped.get("type") == "user_message" else ""


def _json_object(text: object) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
