from django.db import migrations, models


def mark_offline_replies(apps, schema_editor):
    """Pages whose chat reply was the offline one hold system text: mark them so memory leaves it out."""
    Page = apps.get_model("memory", "Page")
    Page.objects.filter(reply__mode="offline").update(reply_source="system")


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0007_profile_stale"),
    ]

    operations = [
        migrations.AddField(
            model_name="page",
            name="reply_source",
            field=models.CharField(
                choices=[("assistant", "The assistant"), ("system", "System text (no model)")],
                default="assistant",
                max_length=9,
            ),
        ),
        migrations.RunPython(mark_offline_replies, migrations.RunPython.noop),
    ]
