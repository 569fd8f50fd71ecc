"""Data-subject requests (GDPR Art. 15-18, 20): the case a data-protection officer works, from arrival to answer."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from memory.models.erasure_receipts import ErasureReceipt
from memory.models.tenancy import EndUser, Tenant


class RequestKind(models.TextChoices):
    ACCESS = "access", "Access / export"
    ERASURE = "erasure", "Erasure"
    RECTIFICATION = "rectification", "Rectification"
    RESTRICTION = "restriction", "Restriction"


class RequestChannel(models.TextChoices):
    EMAIL = "email", "Email"
    WEB_FORM = "web_form", "Web form"
    PHONE = "phone", "Phone"
    LETTER = "letter", "Letter"
    API = "api", "API"
    OTHER = "other", "Other"


class RequestStatus(models.TextChoices):
    OPEN = "open", "Open"
    IN_PROGRESS = "in_progress", "In progress"
    FULFILLED = "fulfilled", "Fulfilled"
    REFUSED = "refused", "Refused"
    WITHDRAWN = "withdrawn", "Withdrawn"


ANSWERED = (RequestStatus.FULFILLED, RequestStatus.REFUSED, RequestStatus.WITHDRAWN)


class DataSubjectRequest(models.Model):
    """One request from a data subject: when and how it came, who asked, how their identity was checked, its
    statutory deadline (one month, extendable by two with a reason), who acted, and what answered it.

    It is the controller's proof of having answered (Art. 5(2), 12), so erasing the user keeps it: the database
    clears `end_user` (migration 0029) and the external id, the receipt and the links stay. What it holds of the
    person is deliberately little: the external id as typed, the requester's name and contact as given, and the
    identity-check note (say how identity was checked, not the document's number); these are kept as records of a
    legal obligation (Art. 17(3)(b)) and go only with the tenant.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="data_subject_requests")
    # ON DELETE SET NULL in the database (migration 0029): an erasure keeps the request, with no query more
    end_user = models.ForeignKey(
        EndUser, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    external_id = models.CharField(max_length=200)  # as typed; matched to an end user when one has it
    kind = models.CharField(max_length=13, choices=RequestKind.choices)
    channel = models.CharField(max_length=8, choices=RequestChannel.choices)
    requester = models.CharField(max_length=300)  # name and contact as given
    identity_check = models.TextField(blank=True)
    received_at = models.DateTimeField()
    due_at = models.DateTimeField()  # received + one calendar month (Art. 12(3))
    extended_due_at = models.DateTimeField(null=True, blank=True)  # received + three months, with a reason
    extension_reason = models.TextField(blank=True)
    status = models.CharField(max_length=11, choices=RequestStatus.choices, default=RequestStatus.OPEN)
    outcome = models.TextField(blank=True)  # the refusal's reason, the withdrawal's or fulfilment's note
    answered_at = models.DateTimeField(null=True, blank=True)  # fulfilled, refused or withdrawn
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_label = models.CharField(max_length=200)  # the actor as audited (an API token has no account)
    # What fulfilled it: the export job (its row goes with an erasure, the id stays), the erasure receipt, and the
    # audit entries of the forgets, edits or pauses that answered it.
    export_job_id = models.BigIntegerField(null=True, blank=True)
    erasure_receipt = models.ForeignKey(
        ErasureReceipt, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    fulfilled_by_entries = ArrayField(models.BigIntegerField(), default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # the inbox: a tenant's requests by deadline
            models.Index(fields=["tenant", "due_at"], name="dsr_tenant_due"),
            models.Index(fields=["tenant", "external_id"], name="dsr_tenant_external_id"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(due_at__gt=models.F("received_at")), name="dsr_due_after_received"),
            models.CheckConstraint(
                condition=Q(extended_due_at__isnull=True, extension_reason="")
                | (Q(extended_due_at__gt=models.F("due_at")) & ~Q(extension_reason="")),
                name="dsr_extension_later_with_reason",
            ),
            models.CheckConstraint(
                condition=Q(status__in=ANSWERED, answered_at__isnull=False)
                | (~Q(status__in=ANSWERED) & Q(answered_at__isnull=True)),
                name="dsr_answered_when_closed",
            ),
            models.CheckConstraint(
                condition=~Q(status=RequestStatus.REFUSED) | ~Q(outcome=""), name="dsr_refused_with_reason"
            ),
            models.CheckConstraint(
                condition=~Q(status=RequestStatus.FULFILLED, kind=RequestKind.ACCESS) | Q(export_job_id__isnull=False),
                name="dsr_access_fulfilled_by_export",
            ),
            models.CheckConstraint(
                condition=~Q(status=RequestStatus.FULFILLED, kind=RequestKind.ERASURE)
                | Q(erasure_receipt__isnull=False)
                | ~Q(fulfilled_by_entries=[]),
                name="dsr_erasure_fulfilled_by_proof",
            ),
            models.CheckConstraint(condition=~Q(external_id=""), name="dsr_names_a_subject"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} request #{self.pk} ({self.external_id})"

    @property
    def deadline(self) -> datetime:
        """The due date that applies: the extended one when the deadline was extended."""
        return self.extended_due_at or self.due_at

    @property
    def answered(self) -> bool:
        return self.status in ANSWERED

    def overdue_at(self, now: datetime) -> bool:
        """Still unanswered after its deadline."""
        return not self.answered and self.deadline < now
