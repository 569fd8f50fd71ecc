"""python manage.py demo_seed: the demo tenant, its operators and end users, and a few conversations."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from memory.management import demo
from memory.models import Assistant, EndUser, Page
from memory.services.tenancy import assistant_create, end_user_create, operator_create, tenant_create
from memory.services.turns import turn_record

TURN_GAP = timedelta(minutes=3)


class Command(BaseCommand):
    help = (
        "Create the demo tenant 'demo' with the assistant Ava, operators admin, supervisor, agent and dpo, and end "
        "users alice and bob (password: DEMO_PASSWORD), and record a few conversations. Idempotent."
    )

    def handle(self, *args: object, **options: object) -> None:
        password = settings.DEMO_PASSWORD
        tenant = tenant_create(slug=demo.TENANT_SLUG, name=demo.TENANT_NAME)
        assistant = assistant_create(
            tenant=tenant, external_id=demo.ASSISTANT_ID, name=demo.ASSISTANT_NAME, persona=demo.ASSISTANT_PERSONA
        )
        for username, role in demo.OPERATORS:
            operator_create(username=username, password=password, tenant=tenant, role=role)
        now = timezone.now()
        for person in demo.END_USERS:
            end_user = end_user_create(
                tenant=tenant,
                external_id=person.external_id,
                display_name=person.display_name,
                email=person.email,
                username=person.external_id,
                password=password,
            )
            recorded = _conversations_record(end_user=end_user, assistant=assistant, person=person, now=now)
            if recorded:
                self.stdout.write(f"Recorded {recorded} turns for {person.external_id}.")
            else:
                self.stdout.write(f"{person.external_id} already has conversations; none added.")
        self.stdout.write(f"Demo tenant '{tenant.slug}' is ready with the assistant {assistant.name}.")
        self.stdout.write(demo.demo_logins(password))


def _conversations_record(*, end_user: EndUser, assistant: Assistant, person: demo.DemoUser, now: datetime) -> int:
    """Record the person's demo conversations, unless they already have pages (so reruns add nothing)."""
    if Page.objects.filter(space__end_user=end_user).exists():
        return 0
    count = 0
    for topic in person.topics:
        started = now - timedelta(days=topic.days_ago)
        for index, (user_message, assistant_reply) in enumerate(topic.turns):
            turn_record(
                end_user=end_user,
                assistant=assistant,
                user_message=user_message,
                assistant_reply=assistant_reply,
                at=started + index * TURN_GAP,
                source="demo",
                source_ref=f"demo:{person.external_id}:{count + 1}",
            )
            count += 1
    return count
