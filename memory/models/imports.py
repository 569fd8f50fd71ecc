"""Memory bundles imported for an end user: what was imported, once, and the bundles staged for a console import."""

from __future__ import annotations

from django.db import models

from memory.models.tenancy import EndUser, Tenant


class ImportStatus(models.TextChoices):
    STAGED = "staged", "Staged (dry run shown, not imported)"
    QUEUED = "queued", "Queued (a large bundle, imported in the background)"
    RUNNING = "running", "Importing"
    FAILED = "failed", "Failed"
    DONE = "done", "Imported"


HOLDS_BUNDLE = (ImportStatus.STAGED, ImportStatus.QUEUED, ImportStatus.RUNNING)


class MemoryImport(models.Model):
    """One memory bundle for one end user: staged by the console's dry run, then imported at most once.

    `fingerprint` is the sha256 of the bundle's memory (its canonical JSON, without the export's date and audit),
    so importing the same memory twice is recognised. A staged row holds the bundle until it is confirmed; the
    imported row keeps only what was created (`counts`), never the bundle itself. A large bundle is imported in the
    background (memory.services.import_jobs): its row is queued with the bundle, then running (`progress` in
    percent, a worker's lease, `attempts` fencing a stale worker), then done or failed (with `error`), without it.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memory_imports")
    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="memory_imports")
    fingerprint = models.CharField(max_length=64)
    status = models.CharField(max_length=8, choices=ImportStatus.choices)
    bundle = models.JSONField(null=True, blank=True)  # only while staged
    assistant_external_id = models.CharField(max_length=128, blank=True)  # the --assistant mapping, if any
    counts = models.JSONField(default=dict, blank=True)
    requested_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    imported_at = models.DateTimeField(null=True, blank=True)
    # A background import: who asked (the audit entry's actor), its progress and its worker's lease.
    actor = models.JSONField(default=dict, blank=True)  # {"kind", "id", "label"}
    request_id = models.CharField(max_length=64, blank=True)
    progress = models.IntegerField(default=0)  # percent
    error = models.TextField(blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["end_user", "fingerprint"],
                condition=models.Q(status="done"),
                name="memory_imported_once_per_user",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=HOLDS_BUNDLE) | models.Q(bundle__isnull=True),
                name="memory_import_keeps_no_bundle_once_done",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "end_user", "-created_at"], name="memory_import_user_recent")]

    def __str__(self) -> str:
        return f"import {self.fingerprint[:12]} for {self.end_user_id}"
