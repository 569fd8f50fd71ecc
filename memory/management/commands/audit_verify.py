"""python manage.py audit_verify [--tenant SLUG]: check the audit hash chains; exit 1 at the first broken link."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.models import Tenant
from memory.selectors.governance import audit_verify


class Command(BaseCommand):
    help = "Verify the tamper-evident audit trail of one tenant (or every tenant)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", help="tenant slug (default: every tenant)")

    def handle(self, *args, tenant: str | None = None, **options) -> None:
        tenants = Tenant.objects.order_by("slug")
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"no tenant with slug {tenant!r}")
        broken = False
        for each in tenants:
            report = audit_verify(tenant=each)
            if report.ok:
                anchored = f" after #{report.anchored_after} (removed by retention)" if report.anchored_after else ""
                self.stdout.write(f"{each.slug}: OK, {report.checked} entries{anchored}")
            else:
                broken = True
                self.stdout.write(
                    f"{each.slug}: BROKEN at entry {report.first_broken_seq}: {report.problem} "
                    f"({report.checked} entries before it verify)"
                )
        if broken:
            raise CommandError("the audit trail does not verify")
