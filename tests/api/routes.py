"""Every route of the API with the scope it needs and a valid body: the tables the scope and tenant tests walk."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # with {page}, {segment}, {knowledge}, {profile}, {receipt}, {export}, {escalation}, {dsr}, {user}, ...
    # ... {assistant}, {webhook} and {delivery}
    scope: str
    body: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"

    def url(self, ids: dict) -> str:
        return "/api/v1/" + self.path.format(**ids)

    @property
    def addresses_an_object(self) -> bool:
        return "{" in self.path


REASON = {"reason": "The customer asked"}
EMPTY_BUNDLE = {
    "format": "memoryos-export/1",
    "schema_version": 1,
    "end_user": {"external_id": "someone"},
    "memory": [],
    "profile_versions": [],
    "knowledge": [],
}

ROUTES = [
    Route(
        "post", "turns/", "write", {"user": "alice", "assistant": "ava", "user_message": "a", "assistant_reply": "b"}
    ),
    Route("post", "retrieve/", "read", {"user": "alice", "assistant": "ava", "query": "beagle"}),
    Route("post", "chat/", "write", {"user": "alice", "assistant": "ava", "message": "hello"}),
    Route("get", "users/", "read"),
    Route("post", "users/", "write", {"external_id": "zoe"}),
    Route("get", "users/{user}/", "read"),
    Route("post", "users/{user}/deactivate/", "write", REASON),
    Route("post", "users/{user}/activate/", "write", REASON),
    Route("post", "users/{user}/memory-pause/", "write", {"assistant": "ava", "paused": True} | REASON),
    Route("get", "users/{user}/profile/", "read"),
    Route("post", "users/{user}/profile/", "write", {"text": "Likes dogs."} | REASON),
    Route("get", "users/{user}/export/", "govern"),
    Route("post", "users/{user}/export/", "govern"),
    Route("post", "users/{user}/erasure/", "govern", {"dry_run": True, "reason": "Asked to be forgotten"}),
    Route("post", "users/{user}/import/", "govern", {"dry_run": True, "bundle": EMPTY_BUNDLE}),
    Route("get", "assistants/", "read"),
    Route("post", "assistants/", "write", {"external_id": "max", "name": "Max"}),
    Route("get", "assistants/{assistant}/", "read"),
    Route("post", "assistants/{assistant}/deactivate/", "write", REASON),
    Route("post", "assistants/{assistant}/activate/", "write", REASON),
    Route("get", "pages/", "read"),
    Route("get", "pages/{page}/", "read"),
    Route("patch", "pages/{page}/", "write", {"pinned": True} | REASON),
    Route("post", "pages/{page}/forget/", "write", REASON),
    Route("post", "pages/{page}/outdated/", "write", {"replacement": "Biscuit is a basset now"} | REASON),
    Route("post", "pages/{page}/current/", "write", REASON),
    Route("get", "segments/", "read"),
    Route("get", "segments/{segment}/", "read"),
    Route("patch", "segments/{segment}/", "write", {"locked": True} | REASON),
    Route("post", "segments/{segment}/forget/", "write", REASON),
    Route("get", "segments/{segment}/heat/", "read"),
    Route("get", "knowledge/", "read"),
    Route("get", "knowledge/{knowledge}/", "read"),
    Route("patch", "knowledge/{knowledge}/", "write", {"text": "Alice has two beagles."} | REASON),
    Route("post", "knowledge/{knowledge}/forget/", "write", REASON),
    Route("post", "knowledge/{knowledge}/outdated/", "write", {"replacement": "Alice has a basset."} | REASON),
    Route("post", "knowledge/{knowledge}/current/", "write", REASON),
    Route("get", "profile-versions/", "read"),
    Route("get", "profile-versions/{profile}/", "read"),
    Route("patch", "profile-versions/{profile}/", "write", {"locked": True} | REASON),
    Route("post", "profile-versions/{profile}/forget/", "write", REASON),
    Route("get", "audit/", "govern"),
    Route("get", "erasure-receipts/", "govern"),
    Route("get", "erasure-receipts/{receipt}/", "govern"),
    Route("get", "exports/{export}/", "govern"),
    Route("get", "exports/{export}/download/", "govern"),
    Route("get", "imports/{import}/", "govern"),
    Route("get", "escalations/", "write"),
    Route("post", "escalations/", "read", {"kind": "knowledge", "id": 1, "note": "Is this still true?"}),
    Route("post", "escalations/{escalation}/resolve/", "write", {"resolution": "Marked outdated"}),
    Route("get", "data-subject-requests/", "govern"),
    Route(
        "post", "data-subject-requests/", "govern", {"kind": "erasure", "user": "alice", "requester": "Alice, by email"}
    ),
    Route("get", "data-subject-requests/{dsr}/", "govern"),
    Route("post", "data-subject-requests/{dsr}/extend/", "govern", {"note": "Many requests at once"}),
    Route("post", "data-subject-requests/{dsr}/fulfil/", "govern", {"note": "Corrected her address"}),
    Route("post", "data-subject-requests/{dsr}/refuse/", "govern", {"note": "Manifestly unfounded"}),
    Route("post", "data-subject-requests/{dsr}/withdraw/", "govern"),
    Route("get", "review/knowledge/", "govern"),
    Route("post", "review/knowledge/{knowledge}/", "govern", {"decision": "approve"}),
    Route("get", "review/profile-versions/", "govern"),
    Route("post", "review/profile-versions/{profile}/", "govern", {"decision": "reject"} | REASON),
    Route("get", "webhooks/", "govern"),
    Route("post", "webhooks/", "govern", {"url": "https://hooks.example.com/new", "event_types": ["user.erased"]}),
    Route("get", "webhooks/{webhook}/", "govern"),
    Route("patch", "webhooks/{webhook}/", "govern", {"enabled": False}),
    Route("delete", "webhooks/{webhook}/", "govern"),
    Route("post", "webhooks/{webhook}/secret/", "govern"),
    Route("post", "webhooks/{webhook}/test/", "govern"),
    Route("get", "webhooks/{webhook}/deliveries/", "govern"),
    Route("post", "webhook-deliveries/{delivery}/replay/", "govern"),
]

SCOPES = ("read", "write", "govern")
