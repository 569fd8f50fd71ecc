"""Reads of a tenant's personal data policy: the row, or the defaults a tenant without one works under."""

from __future__ import annotations

from memory.models import PersonalDataPolicy, Tenant


def personal_data_policy_or_default(*, tenant: Tenant | int) -> PersonalDataPolicy:
    """The tenant's policy, or (unsaved) the defaults when it has none: one query, no write."""
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    policy = PersonalDataPolicy.objects.filter(tenant_id=tenant_id).first()
    return policy or PersonalDataPolicy(tenant_id=tenant_id)
