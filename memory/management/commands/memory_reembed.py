"""python manage.py memory_reembed: re-embed all stored memory with the configured embedding model."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from memory.embeddings import get_embedder
from memory.services.reembed import memory_reembed


class Command(BaseCommand):
    help = "Re-embed every page, segment and knowledge entry with the configured embedding model."

    def handle(self, *args, **options) -> None:
        embedder = get_embedder()
        self.stdout.write(f"Re-embedding with {embedder.name} ({embedder.dimension} dimensions)…")
        counts = memory_reembed(
            embedder=embedder, progress=lambda what, n: self.stdout.write(f"  {what}: {n}", ending="\n")
        )
        summary = ", ".join(f"{n} {what}" for what, n in counts.items())
        self.stdout.write(self.style.SUCCESS(f"Done: {summary}."))
