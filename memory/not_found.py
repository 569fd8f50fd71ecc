"""What a missing object is called when an interface answers 404, in one wording for the console, the chat, the API
and the integrations: "No such user.", by the model whose selector raised DoesNotExist (memory.selectors).

Each interface adapts a miss once (the console's `get_or_404`, the API's `get_or_not_found`, the integrations'
`problem_of`) and reads its words here; a model not listed is "No such object.".
"""

from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist

from memory.items import ITEM_KINDS
from memory.models import (
    ApiToken,
    Assistant,
    DataSubjectRequest,
    EndUser,
    ErasureReceipt,
    Escalation,
    ExportJob,
    Membership,
    MemoryImport,
    PersonalDataScan,
    RetentionRun,
    Tenant,
    WebhookDelivery,
    WebhookEndpoint,
)

# By the exception a selector raises: `<entity>_get` raises its model's DoesNotExist.
NOUNS: dict[type[ObjectDoesNotExist], str] = {
    Tenant.DoesNotExist: "tenant",
    EndUser.DoesNotExist: "user",
    Assistant.DoesNotExist: "assistant",
    Membership.DoesNotExist: "operator",
    ApiToken.DoesNotExist: "API token",
    ExportJob.DoesNotExist: "export",
    MemoryImport.DoesNotExist: "import",
    ErasureReceipt.DoesNotExist: "erasure receipt",
    DataSubjectRequest.DoesNotExist: "data subject request",
    RetentionRun.DoesNotExist: "retention run",
    PersonalDataScan.DoesNotExist: "personal data scan",
    Escalation.DoesNotExist: "escalation",
    WebhookEndpoint.DoesNotExist: "webhook endpoint",
    WebhookDelivery.DoesNotExist: "webhook delivery",
}
# The memory items by their registry's labels (django-stubs knows DoesNotExist on concrete models, not type[Model]).
NOUNS |= {kind.model.DoesNotExist: kind.label for kind in ITEM_KINDS.values()}  # type: ignore[attr-defined]


def not_found_message(missing: ObjectDoesNotExist | type[ObjectDoesNotExist]) -> str:
    """The words for a miss, given the DoesNotExist a selector raised (or its class: `EndUser.DoesNotExist`)."""
    noun = NOUNS.get(missing if isinstance(missing, type) else type(missing))
    return f"No such {noun or 'object'}."
