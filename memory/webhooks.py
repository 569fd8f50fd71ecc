"""Webhooks' vocabulary and signatures (pure): the event types, the secret's form, and Standard Webhooks signing.

A delivery carries three headers (https://www.standardwebhooks.com): `webhook-id` (the event's id, the same on every
attempt and replay), `webhook-timestamp` (unix seconds) and `webhook-signature`, `v1,` and the base64 HMAC-SHA256 of
`{id}.{timestamp}.{body}` keyed with the secret's decoded bytes (the part after `whsec_`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24
EVENT_PREFIX = "evt_"
TEST_EVENT = "webhook.test"  # sent by "send test event" to one endpoint, whatever it subscribes to

# The event types an endpoint may subscribe to, and what each means (the console's checkboxes, the API's enum).
EVENT_TYPES: dict[str, str] = {
    "fact.learned": "A fact was learnt (promotion) or imported",
    "fact.superseded": "A newer fact replaced an earlier one",
    "fact.outdated": "A fact was marked no longer true",
    "item.flagged": "A fact or turn was flagged for a supervisor",
    "memory.forgotten": "Memory was forgotten (by a person or by retention)",
    "review.approved": "A fact or profile version was approved in review",
    "review.rejected": "A fact or profile version was rejected in review",
    "user.erased": "An end user was erased (GDPR)",
    "export.ready": "A GDPR export is ready to download",
    "legal_hold.placed": "A legal hold was placed on an end user",
    "legal_hold.released": "A legal hold was released",
    "dsr.due_soon": "A data-subject request is near its deadline",
}


def secret_generate() -> str:
    """A new endpoint secret: `whsec_` and 24 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def event_id_generate() -> str:
    return EVENT_PREFIX + secrets.token_urlsafe(18)


def body_of(payload: dict) -> bytes:
    """The exact bytes sent (and signed): compact JSON with sorted keys."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(*, secret: str, event_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header's value: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`."""
    signed = f"{event_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode()


def signature_verify(*, secret: str, event_id: str, timestamp: int, body: bytes, header: str) -> bool:
    """Whether one of the header's space-separated signatures is ours (a receiver's check; the tests use it)."""
    expected = signature(secret=secret, event_id=event_id, timestamp=timestamp, body=body)
    return any(hmac.compare_digest(expected, candidate) for candidate in header.split())


def headers_for(*, secret: str, event_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "MemoryOS-Webhooks/1",
        "webhook-id": event_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret=secret, event_id=event_id, timestamp=timestamp, body=body),
    }
