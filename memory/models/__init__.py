"""Every domain model of MemoryOS: tenancy, the three memory tiers, and the record of what updating did."""

from memory.models.audit import ActorKind, AuditEntry
from memory.models.events import EmbeddingState, MemoryEvent
from memory.models.integration import (
    ApiToken,
    ChatReply,
    ErasureReceipt,
    ExportJob,
    IdempotentRequest,
    JobKind,
    JobLease,
    JobStatus,
    ReplyStatus,
)
from memory.models.retention import AuditAnchor, LegalHold, RetentionPolicy, RetentionRun, RunStatus
from memory.models.tenancy import Assistant, EndUser, Membership, MemorySpace, Role, Tenant
from memory.models.tiers import HeatSample, KnowledgeEntry, Page, ProfileVersion, Segment

__all__ = [
    "ActorKind",
    "ApiToken",
    "Assistant",
    "AuditAnchor",
    "AuditEntry",
    "ChatReply",
    "EmbeddingState",
    "EndUser",
    "ErasureReceipt",
    "ExportJob",
    "HeatSample",
    "IdempotentRequest",
    "JobKind",
    "JobLease",
    "JobStatus",
    "KnowledgeEntry",
    "LegalHold",
    "Membership",
    "MemoryEvent",
    "MemorySpace",
    "Page",
    "ProfileVersion",
    "ReplyStatus",
    "RetentionPolicy",
    "RetentionRun",
    "Role",
    "RunStatus",
    "Segment",
    "Tenant",
]
