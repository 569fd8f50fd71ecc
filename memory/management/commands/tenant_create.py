"""python manage.py tenant_create SLUG: a tenant with its default assistant `ava`."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.models import Tenant
from memory.services.tenancy import tenant_create


class Command(BaseCommand):
    help = "Create the tenant SLUG with the assistant 'ava' (Ava). Idempotent: an existing tenant is kept."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="lower-case letters, digits and hyphens, e.g. acme")
        parser.add_argument("--name", default="", help="display name (default: from the slug)")

    def handle(self, *args: object, slug: str, name: str, **options: object) -> None:
        existed = Tenant.objects.filter(slug=slug).exists()
        try:
            tenant = tenant_create(slug=slug, name=name)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        state = "already exists" if existed else "created"
        self.stdout.write(f"Tenant '{tenant.slug}' ({tenant.name}) {state}, with the assistant 'ava'.")
