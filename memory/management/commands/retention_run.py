"""python manage.py retention_run [--dry-run] [--tenant SLUG]: carry out (or only show) the retention policies."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.models import Tenant
from memory.selectors.retention import retention_plan, retention_tenants
from memory.services.retention import TIER_WORDS, retention_run

MAX_BATCHES = 1000  # a guard: each batch removes something or the command stops


class Command(BaseCommand):
    help = "Run the retention policy of one tenant (or every tenant with one) in batches until nothing is due."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", help="tenant slug (default: every tenant with a policy)")
        parser.add_argument("--dry-run", action="store_true", help="show what the next batch removes; change nothing")

    def handle(self, *args, tenant: str | None = None, dry_run: bool = False, **options) -> None:
        tenants = Tenant.objects.filter(pk__in=retention_tenants()).order_by("slug")
        if tenant:
            tenants = Tenant.objects.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"no tenant with slug {tenant!r}")
        for each in tenants:
            if dry_run:
                self._show(each)
            else:
                self._run(each)

    def _show(self, tenant: Tenant) -> None:
        plan = retention_plan(tenant=tenant)
        more = " (and more in later batches)" if plan.more else ""
        self.stdout.write(f"{tenant.slug}: the next run would remove{more}:")
        for tier, count in plan.counts().items():
            self.stdout.write(f"  {TIER_WORDS[tier]}: {count}")
        if plan.held_users:
            self.stdout.write(f"  ({plan.held_users} user(s) under legal hold left out)")

    def _run(self, tenant: Tenant) -> None:
        for batch in range(1, MAX_BATCHES + 1):
            run = retention_run(tenant=tenant, trigger="command")
            if run is None:
                raise CommandError(f"{tenant.slug}: another retention run is in progress; try again later")
            removed = ", ".join(f"{TIER_WORDS[t]} {n}" for t, n in run.removed.items() if n) or "nothing"
            receipts = run.receipts.count()
            self.stdout.write(f"{tenant.slug}: run {run.pk} (batch {batch}) removed {removed}; {receipts} receipt(s)")
            if not run.more or not sum(run.removed.values()):
                return
