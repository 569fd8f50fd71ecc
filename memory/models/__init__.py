"""Every domain model of MemoryOS: tenancy, the three memory tiers, and the record of what updating did."""

from memory.models.audit import ActorKind, AuditEntry
from memory.models.events import EmbeddingState, MemoryEvent
from memory.models.tenancy import Assistant, EndUser, Membership, MemorySpace, Role, Tenant
from memory.models.tiers import HeatSample, KnowledgeEntry, Page, ProfileVersion, Segment

__all__ = [
    "ActorKind",
    "AuditEntry",
    "Assistant",
    "EmbeddingState",
    "EndUser",
    "HeatSample",
    "KnowledgeEntry",
    "Membership",
    "MemoryEvent",
    "MemorySpace",
    "Page",
    "ProfileVersion",
    "Role",
    "Segment",
    "Tenant",
]
