"""What each audit action code means, in words a person reads: the one table the audit log, its CSV and every other
screen that names an action read (a code missing here shows as itself; tests/dashboard/test_audit_labels.py checks
that every code the services write has a label)."""

from __future__ import annotations

ITEM_WORDS = {"page": "a turn", "segment": "a topic", "knowledge": "a fact", "profile": "the profile"}
ITEM_VERBS = {
    "forget": "Forgot {}",
    "pin": "Pinned {}",
    "unpin": "Unpinned {}",
    "lock": "Locked {}",
    "unlock": "Unlocked {}",
    "outdated": "Marked {} outdated",
    "current": "Marked {} current again",
    "edit": "Edited {}",
    "approve": "Approved {}",
    "reject": "Rejected {}",
}

ACTION_LABELS: dict[str, str] = {
    **{
        f"{kind}.{verb}": label.format(words)
        for kind, words in ITEM_WORDS.items()
        for verb, label in ITEM_VERBS.items()
    },
    "api_token.create": "Created an API token",
    "api_token.revoke": "Revoked an API token",
    "audit.prune": "Pruned old audit entries",
    "dsr.open": "Logged a data-subject request",
    "dsr.start": "Started work on a data-subject request",
    "dsr.extend": "Extended a data-subject request's deadline",
    "dsr.fulfil": "Fulfilled a data-subject request",
    "dsr.refuse": "Refused a data-subject request",
    "dsr.held": "A legal hold stopped a data-subject request",
    "dsr.withdraw": "Recorded a data-subject request as withdrawn",
    "escalation.open": "Flagged for a supervisor",
    "escalation.resolve": "Resolved a flag",
    "escalation.dismiss": "Dismissed a flag",
    "gdpr.erasure": "Erased a user (GDPR)",
    "gdpr.export": "Exported a user's memory (GDPR)",
    "knowledge.drop": "Dropped a fact",
    "knowledge.reject_forget": "Rejected a fact and forgot its turns",
    "knowledge.supersede": "Replaced a fact with a newer one",
    "legal_hold.place": "Placed a legal hold",
    "legal_hold.release": "Released a legal hold",
    "membership.invite": "Invited an operator",
    "membership.role": "Changed an operator's role",
    "membership.remove": "Removed an operator",
    "memory.import": "Imported memory",
    "memory.pause": "Paused memory",
    "memory.resume": "Resumed memory",
    "memory.read": "Read memory",
    "page.paused_drop": "Did not keep a turn (memory paused)",
    "page.use_again": "Used a withheld turn again",
    "page.withhold": "Withheld a turn",
    "personal_data.pattern_timeout": "A personal-data pattern timed out",
    "personal_data.policy_update": "Changed the personal-data policy",
    "personal_data.reveal": "Revealed masked personal data",
    "personal_data.scan_start": "Started a personal-data scan",
    "profile.stale": "Marked the profile stale",
    "profile.withdraw": "Withdrew the profile",
    "reply.memory_injected": "Used memory in a reply",
    "retention.chat_replies": "Retention removed reply records",
    "retention.pages": "Retention removed turns",
    "retention.policy": "Changed the retention policy",
    "retention.run_requested": "Asked for a retention run now",
    "segment.evict": "Evicted a topic (capacity)",
    "webhook.create": "Added a webhook endpoint",
    "webhook.update": "Changed a webhook endpoint",
    "webhook.rotate_secret": "Gave a webhook endpoint a new secret",
    "webhook.delete": "Deleted a webhook endpoint",
    "webhook.test": "Sent a test event to a webhook endpoint",
    "webhook.replay": "Replayed a webhook delivery",
}


def action_label(code: str) -> str:
    """The action in words ("Forgot a fact" for knowledge.forget); an unknown code as itself."""
    return ACTION_LABELS.get(code, code)
