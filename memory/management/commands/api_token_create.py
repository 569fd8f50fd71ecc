"""python manage.py api_token_create --tenant SLUG --scopes read,write,govern: prints only the new token."""

from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from memory.models import Tenant
from memory.services.api_tokens import SCOPES, api_token_create
from memory.services.audit import Actor


class Command(BaseCommand):
    help = (
        "Create an API token for the tenant SLUG with the given scopes and print it (only it, on stdout, so scripts "
        "can capture it). The token is shown once; only its hash is stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="the tenant's slug, e.g. demo")
        parser.add_argument("--scopes", required=True, help=f"comma-separated, from {','.join(SCOPES)}")
        parser.add_argument("--name", default="", help="a label shown in the audit log (default: 'API token')")
        parser.add_argument(
            "--expires-days", type=int, default=None, help="days until the token expires (default: never)"
        )

    def handle(self, *args: object, tenant: str, scopes: str, name: str, expires_days: int | None, **opts) -> None:
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant {tenant!r}: create it with `python manage.py tenant_create {tenant}`")
        if expires_days is not None and expires_days < 1:
            raise CommandError("--expires-days must be at least 1")
        expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
        try:
            created = api_token_create(
                tenant=found,
                name=name or "API token (manage.py)",
                scopes=scopes,
                actor=Actor.system("manage.py api_token_create"),
                expires_at=expires_at,
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(created.secret)
