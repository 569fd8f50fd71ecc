"""Moving the test database's schema to a migration and back, for the migration tests."""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes("memory")


def page_before(targets, *, space, segment, user_message: str = "Hello.", assistant_reply: str = "Noted.", **fields):
    """A mid-term page written through the Page model as it was at `targets` (today's model has columns an older
    schema lacks), embedded from its message like builders.page's."""
    from django.db.models import F

    from tests.builders import T0, _vector

    apps = MigrationExecutor(connection).loader.project_state(targets).apps
    pages, spaces = apps.get_model("memory", "Page"), apps.get_model("memory", "MemorySpace")
    seq = spaces.objects.get(pk=space.pk).next_seq
    page = pages.objects.create(
        space_id=space.pk, seq=seq, user_message=user_message, assistant_reply=assistant_reply, at=T0, tier="mtm",
        segment_id=segment.pk, embedding=_vector(user_message), **fields,
    )  # fmt: skip
    spaces.objects.filter(pk=space.pk).update(next_seq=F("next_seq") + 1)
    return page
