"""python manage.py memory_import FILE_OR_DIR [--from bundle|mem0|letta|memoryos] --tenant SLUG --user EXTERNAL_ID
[--assistant ID] [--dry-run]."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from memory.bundles import BundleInvalid
from memory.importers import BUNDLE, FORMATS, bundle_from_path
from memory.models import Tenant
from memory.services.audit import Actor
from memory.services.bundle_import import ImportRefused, ImportResult, memory_import
from memory.services.gdpr import end_user_for_turn
from memory.services.turns import EndUserClosed

ACTOR = Actor.system("manage.py memory_import")


class Command(BaseCommand):
    help = (
        "Import a memory bundle (a GDPR export's export.json, or the export's zip) into the end user EXTERNAL_ID of "
        "the tenant SLUG, created if new. Pages keep their times; pins, locks, profile history and the facts' "
        "source pages are kept; every vector is computed again. A bundle already imported for the user changes "
        "nothing. --dry-run says what would be created and changes nothing. --from reads another memory system's "
        "export instead (docs/importing.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="export.json or the export's zip; for --from memoryos, a user's directory")
        parser.add_argument(
            "--from", dest="source_format", choices=list(FORMATS), default=BUNDLE, help="the file's format"
        )
        parser.add_argument("--tenant", required=True, help="the tenant's slug")
        parser.add_argument("--user", required=True, help="the end user's external id (created if new)")
        parser.add_argument(
            "--assistant", default="", help="import into this assistant (default: the assistant the bundle names)"
        )
        parser.add_argument("--dry-run", action="store_true", help="validate and count, change nothing")

    def handle(
        self, *args, file: str, source_format: str, tenant: str, user: str, assistant: str, dry_run: bool, **opts
    ):
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant {tenant!r}: create it with `python manage.py tenant_create {tenant}`")
        bundle = _bundle_read(source_format, Path(file), user)
        try:
            with transaction.atomic():
                end_user = end_user_for_turn(tenant=found, external_id=user)
                result = memory_import(
                    end_user=end_user, bundle=bundle, actor=ACTOR, assistant_external_id=assistant, dry_run=dry_run
                )
                if dry_run:
                    transaction.set_rollback(True)  # a user created only to plan against is not kept
        except BundleInvalid as exc:
            raise CommandError(f"the bundle is refused: {exc}") from None
        except ImportRefused as exc:
            raise CommandError(f"not imported: {exc}") from None
        except EndUserClosed as exc:
            raise CommandError(f"not imported: {exc}") from None
        self.stdout.write(_report(result, user))


def _bundle_read(source_format: str, path: Path, user: str) -> dict:
    """The parsed bundle (mapped from another system's export); a huge file is refused without reading it."""
    try:
        return bundle_from_path(source_format, path, external_id=user)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    except BundleInvalid as exc:
        raise CommandError(
            f"the {'bundle' if source_format == BUNDLE else source_format + ' export'} is refused: {exc}"
        ) from None


def _report(result: ImportResult, user: str) -> str:
    if result.already_imported:
        return f"This bundle was already imported for {user}; nothing changed (fingerprint {result.fingerprint})."
    verb = "Would create" if result.dry_run else "Created"
    lines = [f"{verb} for {user} (fingerprint {result.fingerprint}):"]
    lines += [f"  {kind.replace('_', ' ')}: {count}" for kind, count in result.counts.items()]
    lines += [f"  memory with {source!r} -> assistant {target!r}" for source, target in result.assistants.items()]
    lines += [f"  not imported, {kind.replace('_', ' ')}: {n}" for kind, n in result.skipped.items() if n]
    return "\n".join(lines)
