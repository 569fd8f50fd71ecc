"""Passages: overlapping windows of a long page, each with a vector of its own, so every part of the page is found."""

from __future__ import annotations

from django.db import models

from memory.models.tenancy import MemorySpace
from memory.models.tiers import HalfVectorField, Page, VectorQuerySet


class PagePassage(models.Model):
    """One window of a page's memory text (`Page.memory_text[start:end]`, spans from `memory.text.passage_spans`).

    Only pages longer than one window have passages: the embedder reads about the first 1,000 characters of a text,
    so the page's own vector says nothing of the rest. The vector channel ranks a page by the best of its own cosine
    and its passages' (max-passage scoring, Dai & Callan 2019). No text is kept here: the excerpt is cut from the
    page, so redacting or correcting the page leaves nothing behind but vectors, which are computed again with it.

    The foreign keys cascade in the database (`ON DELETE CASCADE`, created by migration 0025), not in Django:
    deleting pages or spaces (forget, erase, retention, import replacing memory) takes their passages with them, and
    no delete sends one more statement. Their indexes are the constraint's and `passage_space_code`.
    """

    page = models.ForeignKey(
        Page, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="passages"
    )
    space = models.ForeignKey(
        MemorySpace, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    start = models.IntegerField()
    end = models.IntegerField()
    embedding = HalfVectorField()
    # Not a field here, as for pages: the table's `embedding_code` (two bits a dimension, kept by a trigger; migration
    # 0034) is what the vector channel's first pass ranks a space's passages by, over the covering index
    # passage_space_code, before it re-ranks the best few hundred by exact cosine.

    objects = VectorQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["page", "start"], name="passage_start_per_page"),
            models.CheckConstraint(condition=models.Q(start__gte=0, end__gt=models.F("start")), name="passage_span"),
        ]
        # passage_space_code (space, id) INCLUDE (embedding_code), migration 0034's, serves the first pass (an
        # index-only scan) and the space's foreign key

    def __str__(self) -> str:
        return f"passage {self.start}–{self.end} of page {self.page_id}"
