"""The default US social security number pattern, stored in each tenant's policy, rewritten without look-aheads so
that RE2 runs it in linear time (issue 29, finding 5). Other patterns are left as the tenant saved them: one RE2
cannot run keeps running on `regex` with a time limit until the tenant saves it again."""

from django.db import migrations

LOOK_AHEAD = r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b"
LINEAR = (
    r"\b(?:00[1-9]|0[1-9]\d|[1-578]\d\d|6[0-57-9]\d|66[0-57-9])-(?:0[1-9]|[1-9]\d)-"
    r"(?:000[1-9]|00[1-9]\d|0[1-9]\d\d|[1-9]\d\d\d)\b"
)


def _rewrite(apps, old: str, new: str) -> None:
    policies = apps.get_model("memory", "PersonalDataPolicy").objects.filter(government_id_patterns__contains=[old])
    for policy in policies:
        policy.government_id_patterns = [new if p == old else p for p in policy.government_id_patterns]
        policy.save(update_fields=["government_id_patterns"])


def forwards(apps, schema_editor) -> None:
    _rewrite(apps, LOOK_AHEAD, LINEAR)


def backwards(apps, schema_editor) -> None:
    _rewrite(apps, LINEAR, LOOK_AHEAD)


class Migration(migrations.Migration):
    dependencies = [("memory", "0025_page_passages")]

    operations = [migrations.RunPython(forwards, backwards)]
