"""Every domain model of MemoryOS: tenancy, the three memory tiers, and the record of what updating did."""

from memory.models.api_tokens import ApiToken
from memory.models.audit import ActorKind, AuditEntry
from memory.models.chat_replies import ChatReply, ReplyStatus
from memory.models.data_subject_requests import (
    DataSubjectRequest,
    RequestChannel,
    RequestKind,
    RequestStatus,
)
from memory.models.erasure_receipts import ErasureReceipt
from memory.models.escalations import Escalation, EscalationState
from memory.models.events import EmbeddingState, MemoryEvent
from memory.models.exports import ExportJob, JobStatus
from memory.models.idempotency import IdempotentRequest
from memory.models.imports import ImportStatus, MemoryImport
from memory.models.job_leases import JobKind, JobLease
from memory.models.passages import PagePassage
from memory.models.privacy import (
    PersonalDataAction,
    PersonalDataPolicy,
    PersonalDataScan,
    ReviewMode,
    ReviewState,
    ScanStatus,
)
from memory.models.retention import AuditAnchor, LegalHold, RetentionPolicy, RetentionRun, RunStatus
from memory.models.tenancy import Assistant, EndUser, Membership, MemorySpace, Role, Tenant
from memory.models.tiers import HeatSample, KnowledgeEntry, Page, ProfileVersion, Segment, SegmentVisit
from memory.models.webhooks import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent

__all__ = [
    "ActorKind",
    "ApiToken",
    "Assistant",
    "AuditAnchor",
    "AuditEntry",
    "ChatReply",
    "DataSubjectRequest",
    "DeliveryStatus",
    "EmbeddingState",
    "EndUser",
    "ErasureReceipt",
    "Escalation",
    "EscalationState",
    "ExportJob",
    "HeatSample",
    "IdempotentRequest",
    "ImportStatus",
    "JobKind",
    "JobLease",
    "JobStatus",
    "KnowledgeEntry",
    "LegalHold",
    "Membership",
    "MemoryEvent",
    "MemoryImport",
    "MemorySpace",
    "Page",
    "PagePassage",
    "PersonalDataAction",
    "PersonalDataPolicy",
    "PersonalDataScan",
    "ProfileVersion",
    "ReplyStatus",
    "RequestChannel",
    "RequestKind",
    "RequestStatus",
    "RetentionPolicy",
    "RetentionRun",
    "ReviewMode",
    "ReviewState",
    "Role",
    "RunStatus",
    "ScanStatus",
    "Segment",
    "SegmentVisit",
    "Tenant",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WebhookEvent",
]
