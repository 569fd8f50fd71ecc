"""A tenant's personal data policy as a write applies it: its compiled detector and its do-not-store masking of a
text (the policy row, or the defaults, is read by `memory.selectors.personal_data`).

It sits below `memory.services.audit`, which masks what people type into an audit entry with it; every other
redactor (`memory.services.personal_data`) is built on it too, and audits a government-id pattern's timeout, which
this module cannot (the audit module imports it).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from memory.models import PersonalDataAction, PersonalDataPolicy, Tenant
from memory.personal_data import Detector, mask_findings
from memory.selectors.personal_data import personal_data_policy_or_default


@lru_cache(maxsize=256)
def _detector(region: str, patterns: tuple[str, ...]) -> Detector:
    return Detector.configured(region=region, government_id_patterns=patterns)


def detector_for(policy: PersonalDataPolicy) -> Detector:
    """The policy's detector (compiled once per region and set of patterns)."""
    return _detector(policy.phone_region, tuple(policy.government_id_patterns))


def do_not_store_mask(*, tenant: Tenant | int, policy: PersonalDataPolicy | None = None) -> Callable[[str], str] | None:
    """The tenant's `do_not_store` categories masked in a text, or None when the tenant stores every category.

    One query, none when the caller passes the tenant's `policy`. A government-id pattern that runs out of time
    still masks the lines it could not check (`Detector.find`), but the timeout is not audited from here:
    `memory.services.personal_data.storage_redactor` does that, for every write path but the audit log's own
    entries."""
    policy = policy or personal_data_policy_or_default(tenant=tenant)
    categories = policy.categories_at_least(PersonalDataAction.DO_NOT_STORE)
    if not categories:
        return None
    detector = detector_for(policy)
    return lambda text: mask_findings(text, detector.find(text, categories)) if text else text
