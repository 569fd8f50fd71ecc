"""Tenants, their assistants and end users, operators' roles, and the memory space of one (user, assistant) pair."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Tenant(models.Model):
    """An organisation that deploys assistants."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Assistant(models.Model):
    """A persona within a tenant; integrators address it by `external_id`."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="assistants")
    external_id = models.CharField(max_length=128)
    name = models.CharField(max_length=200)
    persona = models.TextField(blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="assistant_external_id_per_tenant"),
        ]

    def __str__(self) -> str:
        return self.name


class EndUser(models.Model):
    """A person the assistant talks to. May log in to chat through `account`."""

    # No index of its own: end_user_external_id_per_tenant and end_user_recent lead with it (migration 0036)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="end_users", db_index=False)
    external_id = models.CharField(max_length=128)
    display_name = models.CharField(max_length=200, blank=True)
    email = models.EmailField(blank=True)
    account = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="end_user"
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_active_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="end_user_external_id_per_tenant"),
        ]
        indexes = [models.Index(fields=["tenant", "-last_active_at"], name="end_user_recent")]

    def __str__(self) -> str:
        return self.display_name or self.external_id


class Role(models.TextChoices):
    AGENT = "agent", "Agent"
    SUPERVISOR = "supervisor", "Supervisor"
    DPO = "dpo", "Data-protection officer"
    ADMIN = "admin", "Admin"


class Membership(models.Model):
    """An operator's role in one tenant."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="one_role_per_tenant"),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="membership_role_known"),
        ]


class MemorySpace(models.Model):
    """The memory of one end user with one assistant. Its row is the lock that orders that pair's turns."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memory_spaces")
    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="memory_spaces")
    assistant = models.ForeignKey(Assistant, on_delete=models.CASCADE, related_name="memory_spaces")
    next_seq = models.BigIntegerField(default=1)
    paused = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["end_user", "assistant"], name="one_space_per_user_and_assistant"),
        ]

    def __str__(self) -> str:
        return f"{self.end_user} with {self.assistant}"
