"""python manage.py memory_cluster: keep each user's pages together on disk (a maintenance-window task)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from memory.services.page_order import PageScatter, page_scatter, pages_cluster


class Command(BaseCommand):
    help = (
        "Rewrite the page table so that each user's pages lie together (PostgreSQL's CLUSTER on the space's page "
        "sequence). Retrieval and writes to memory wait until it ends: run it in a maintenance window. --check "
        "only reports how scattered the pages are."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="report how scattered the pages lie; change nothing")

    def handle(self, *args, **options) -> None:
        self.stdout.write(f"Before: {_described(page_scatter())}")
        if options["check"]:
            return
        self.stdout.write("Rewriting the page table in (space, seq) order; memory waits until it ends…")
        seconds = pages_cluster()
        self.stdout.write(f"After: {_described(page_scatter())}")
        self.stdout.write(self.style.SUCCESS(f"Done in {seconds:.1f} s."))


def _described(scatter: PageScatter) -> str:
    ratio = "unknown until the table is analysed" if scatter.ratio is None else f"{scatter.ratio:.2f}"
    return (
        f"{scatter.pages} pages of {scatter.spaces} sampled users lie on {scatter.table_pages} table pages; "
        f"scatter {ratio} (1.00: each user's pages together)"
    )
