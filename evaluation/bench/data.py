"""Benchmark fixture data: synthetic users with a full memory, written straight into the memory tables.

This is fixture data for `memory_bench`, not memory the product learnt: it is built with `bulk_create` in batches
(not through the services, which would take hours at 1,000 users) so that measurements start from the state the
services would have reached. Each user gets a full MTM (200 segments of about 30 pages), a full STM, 100 + 100
knowledge entries, a few profile versions, heat history and events. Segments are cold enough and their pages
analysed, as after promotion, so measuring does not start with a wave of promotions.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Count
from django.db.models.expressions import DatabaseDefault
from pgvector import HalfVector
from pgvector.psycopg.halfvec import register_halfvec_info
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb

from evaluation.bench.fakes import BenchEmbedder
from evaluation.bench.synthetic_text import TOPICS, TextGenerator
from memory.models import (
    Assistant,
    EndUser,
    HeatSample,
    KnowledgeEntry,
    MemoryEvent,
    MemorySpace,
    Page,
    PagePassage,
    ProfileVersion,
    Segment,
    Tenant,
)
from memory.models.events import EventKind
from memory.models.tiers import HalfVectorField, HeatEvent, KnowledgeKind, PageSource, Tier
from memory.text import passage_spans

PAGES_PER_SEGMENT = (20, 40)  # about 30 on average
# The share of mid-term turns whose reply is a detailed answer of LONG_REPLY_CHARS characters, long enough for 2-5
# passages of its own (memory.text.passage_spans), as in technical or planning chats.
LONG_TURN_SHARE = 0.1
LONG_REPLY_CHARS = (1_200, 4_000)
BATCH_SIZE = 2000
HISTORY_DAYS = 365
EVENTS_PER_USER = 40


@dataclass(frozen=True)
class BenchUser:
    end_user_id: int
    space_id: int
    pages: int


class Vectors:
    """Page, segment and knowledge vectors: topic-structured random-unit ones, or the real model's."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder

    def of(self, items: list[tuple[int, str]]) -> list[np.ndarray]:
        """Vectors for (topic index, text) pairs."""
        if isinstance(self.embedder, BenchEmbedder):
            return [self.embedder.topic_vector(topic, text) for topic, text in items]
        return list(self.embedder.embed([text for _, text in items]))


def full_users_build(
    *,
    tenant: Tenant,
    assistant: Assistant,
    count: int,
    vectors: Vectors,
    seed: int,
    now: datetime,
    interleave: int = 1,
    long_share: float = LONG_TURN_SHARE,
    on_user=None,
) -> list[BenchUser]:
    """`count` users of `tenant`, each with a full memory with `assistant`; one transaction per `interleave` users.

    The pages of each group of `interleave` users are written in time order across the group, as when users talk at
    once, so one user's pages spread over the table and its indexes; with 1 (the default) each user's pages lie
    together, which flatters every read of one user's memory. A `long_share` of the mid-term turns have a long reply
    and passages of their own, written in the same order.
    """
    if interleave < 1:
        raise ValueError("interleave must be at least 1")
    users = []
    for first in range(0, count, interleave):
        with transaction.atomic():
            group = [
                _user_start(tenant, assistant, f"bench-user-{number:05d}", vectors, seed + number, now, long_share)
                for number in range(first, min(first + interleave, count))
            ]
            copy_insert(Page, sorted((p for user in group for p in user.pages), key=lambda p: (p.at, p.space_id)))
            _passages_insert(group)
            built = [_user_finish(user, vectors, now) for user in group]
        for user in built:
            users.append(user)
            if on_user:
                on_user(user)
    return users


def kept_users(tenant: Tenant) -> list[BenchUser]:
    """The full users an earlier run built in `tenant` and kept (--keep), for measuring again without building."""
    spaces = (
        MemorySpace.objects.filter(tenant=tenant, end_user__external_id__startswith="bench-user-")
        .annotate(page_count=Count("pages"))
        .order_by("id")
    )
    return [BenchUser(end_user_id=s.end_user_id, space_id=s.id, pages=s.page_count) for s in spaces]


@dataclass
class _UserInBuild:
    """A user whose segments are stored and whose pages are made but not yet stored."""

    end_user: EndUser
    space: MemorySpace
    generator: TextGenerator
    topics: list[int]
    segments: list[Segment]
    pages: list[Page]
    passages: list[tuple[Page, int, int, np.ndarray]]  # (page, start, end, vector) of the long pages


def _user_start(
    tenant: Tenant,
    assistant: Assistant,
    external_id: str,
    vectors: Vectors,
    seed: int,
    now: datetime,
    long_share: float,
) -> _UserInBuild:
    generator = TextGenerator(seed)
    end_user = EndUser.objects.create(tenant=tenant, external_id=external_id, display_name=external_id.title())
    space = MemorySpace.objects.create(tenant=tenant, end_user=end_user, assistant=assistant)
    topics = [generator.random.randrange(len(TOPICS)) for _ in range(settings.MEMORY_MTM_CAPACITY)]
    segments = _segments_build(space, topics, generator, vectors, now)
    long_turns = _LongTurns(long_share, random.Random(f"long-turns-{seed}"))
    pages = _pages_make(space, segments, topics, generator, vectors, now, long_turns)
    passages = _passages_make(pages, topics, segments, vectors)
    return _UserInBuild(end_user, space, generator, topics, segments, pages, passages)


def _user_finish(user: _UserInBuild, vectors: Vectors, now: datetime) -> BenchUser:
    """The rest of a user's memory, once its pages are stored (they have ids)."""
    space, generator = user.space, user.generator
    _heat_history_build(space, user.segments, now)
    _knowledge_build(space, user.pages, user.topics, generator, vectors, now)
    _profile_build(user.end_user, user.topics, generator)
    _events_build(space, user.pages, user.segments)
    MemorySpace.objects.filter(pk=space.pk).update(next_seq=len(user.pages) + 1)
    return BenchUser(end_user_id=user.end_user.id, space_id=space.id, pages=len(user.pages))


def _segments_build(
    space: MemorySpace, topics: list[int], generator: TextGenerator, vectors: Vectors, now: datetime
) -> list[Segment]:
    summaries = [generator.summary(TOPICS[t]) for t in topics]
    embeddings = vectors.of(list(zip(topics, summaries, strict=True)))
    segments = [
        Segment(
            space=space,
            summary=summary,
            keywords=generator.keywords(TOPICS[topic]),
            embedding=embedding,
            n_visit=generator.random.randint(0, 3),
            l_interaction=generator.random.randint(0, 1),
            last_touched_at=now - timedelta(days=generator.random.uniform(0, HISTORY_DAYS)),
        )
        for topic, summary, embedding in zip(topics, summaries, embeddings, strict=True)
    ]
    return Segment.objects.bulk_create(segments, batch_size=BATCH_SIZE)


@dataclass(frozen=True)
class _LongTurns:
    """Which mid-term turns get a long reply: `share` of them, drawn from `random` (not the text generator's own
    sequence, so a build without long turns writes the same memory as before they existed)."""

    share: float
    random: random.Random

    def applied(self, turn: tuple[str, str], topic: int, generator: TextGenerator) -> tuple[str, str]:
        if not self.share or self.random.random() >= self.share:
            return turn
        chars = self.random.randint(*LONG_REPLY_CHARS)
        return turn[0], generator.long_reply(TOPICS[topic], chars, self.random)


def _pages_make(
    space: MemorySpace,
    segments: list[Segment],
    topics: list[int],
    generator: TextGenerator,
    vectors: Vectors,
    now: datetime,
    long_turns: _LongTurns,
) -> list[Page]:
    """About 30 pages per segment, in time order, then a full STM, not yet stored; the vector of a page is its topic
    vector."""
    placed = [
        (segment, topic, long_turns.applied(generator.turn(TOPICS[topic]), topic, generator))
        for segment, topic in zip(segments, topics, strict=True)
        for _ in range(generator.random.randint(*PAGES_PER_SEGMENT))
    ]
    stm_topics = [generator.random.choice(topics) for _ in range(settings.MEMORY_STM_CAPACITY)]
    stm = [(None, topic, generator.turn(TOPICS[topic])) for topic in stm_topics]
    rows = placed + stm
    texts = [f"User: {user}\nAssistant: {reply}" for _, _, (user, reply) in rows]
    embeddings = vectors.of([(topic, text) for (_, topic, _), text in zip(rows, texts, strict=True)])
    start, step = now - timedelta(days=HISTORY_DAYS), timedelta(days=HISTORY_DAYS) / (len(rows) + 1)
    pages = []
    for seq, ((segment, _, (user, reply)), embedding) in enumerate(zip(rows, embeddings, strict=True), start=1):
        in_stm = segment is None
        pages.append(
            Page(
                space=space,
                seq=seq,
                user_message=user,
                assistant_reply=reply,
                at=start + seq * step,
                tier=Tier.SHORT_TERM if in_stm else Tier.MID_TERM,
                segment=segment,
                chain_summary="" if in_stm else segment.summary[:300],
                topic_summary="" if in_stm else user[:220],
                keywords=[] if in_stm else list(segment.keywords),
                embedding=None if in_stm else embedding,
                topic_embedding=None,  # the page's own vector is its topic vector (Page.topic_vector)
                analysed=not in_stm,
                source=PageSource.DEMO,
                source_ref="memory_bench",
            )
        )
    return pages


def _passages_make(
    pages: list[Page], topics: list[int], segments: list[Segment], vectors: Vectors
) -> list[tuple[Page, int, int, np.ndarray]]:
    """The passages of the long mid-term pages, each with the vector of its own text (its topic's, for fake
    embeddings), as memory.services.passages stores them; short-term pages have no vectors yet."""
    topic_of = {segment.pk: topic for segment, topic in zip(segments, topics, strict=True)}
    texts = [(page, page.memory_text) for page in pages if page.segment_id is not None]
    spans = [
        (page, start, end, topic_of[page.segment_id], text[start:end])
        for page, text in texts
        for start, end in passage_spans(text)
    ]
    found = vectors.of([(topic, text) for _, _, _, topic, text in spans])
    return [(page, start, end, vector) for (page, start, end, _, _), vector in zip(spans, found, strict=True)]


def _passages_insert(group: list[_UserInBuild]) -> None:
    """The group's passages, once its pages have ids, in the order their pages were written."""
    passages = sorted((p for user in group for p in user.passages), key=lambda p: (p[0].at, p[0].space_id, p[1]))
    rows = [
        PagePassage(page_id=page.pk, space_id=page.space_id, start=start, end=end, embedding=vector)
        for page, start, end, vector in passages
    ]
    if rows:
        copy_insert(PagePassage, rows)


def copy_insert(model: type[models.Model], objs: list[models.Model]) -> list[models.Model]:
    """Insert `objs` with one binary COPY (vectors as raw floats) and set their ids; about 20 times faster than
    bulk_create for rows with two 384-dimension vectors. Ids are taken from the table's sequence first.

    Every concrete column is written from the instances, so fields added later are written too (generated columns
    are left to PostgreSQL).
    """
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key or getattr(f, "generated", False))]
    table = model._meta.db_table
    with connection.cursor() as wrapper:
        cursor = wrapper.cursor  # the psycopg cursor: adapters registered on it stay on it
        register_vector_info(cursor, TypeInfo.fetch(cursor.connection, "vector"))
        register_halfvec_info(cursor, TypeInfo.fetch(cursor.connection, "halfvec"))
        cursor.execute(
            f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) FROM generate_series(1, %s)", [len(objs)]
        )
        for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
            obj.pk = pk
        types = _column_types(cursor, table, [f.column for f in fields])
        columns = ", ".join(connection.ops.quote_name(c) for c in ["id", *(f.column for f in fields)])
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", *types])
            for obj in objs:
                copy.write_row([obj.pk, *(_copy_value(f, obj) for f in fields)])
    return objs


def _column_types(cursor, table: str, columns: list[str]) -> list[str]:
    cursor.execute(
        "SELECT a.attname, t.typname, e.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A' "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped",
        [table],
    )
    names = {name: (f"{element}[]" if element else typname) for name, typname, element in cursor.fetchall()}
    return [names[column] for column in columns]


def _copy_value(field: models.Field, obj: models.Model):
    value = field.pre_save(obj, add=True)  # auto_now_add fills created_at
    if isinstance(value, DatabaseDefault):  # a field left to its database default: COPY writes that value itself
        value = field.db_default.value if hasattr(field.db_default, "value") else field.db_default
    if isinstance(field, models.JSONField) and value is not None:
        return Jsonb(value)
    if isinstance(field, HalfVectorField) and value is not None:
        return HalfVector(np.asarray(value, dtype=np.float32))
    return value


def _heat_history_build(space: MemorySpace, segments: list[Segment], now: datetime) -> None:
    samples = []
    for segment in segments:
        for event, n_visit in ((HeatEvent.CREATED, 0), (HeatEvent.MERGED, segment.n_visit)):
            samples.append(
                HeatSample(
                    segment=segment,
                    space=space,
                    at=segment.last_touched_at,
                    n_visit=n_visit,
                    l_interaction=segment.l_interaction,
                    r_recency=1.0,
                    heat=n_visit + segment.l_interaction + 1.0,
                    event=event,
                )
            )
    HeatSample.objects.bulk_create(samples, batch_size=BATCH_SIZE)


def _knowledge_build(
    space: MemorySpace, pages: list[Page], topics: list[int], generator: TextGenerator, vectors: Vectors, now: datetime
) -> None:
    capacity = settings.MEMORY_KNOWLEDGE_CAPACITY
    wanted = []
    for kind, assistant_id in ((KnowledgeKind.USER, None), (KnowledgeKind.ASSISTANT, space.assistant_id)):
        for number in range(capacity):
            topic = generator.random.choice(topics)
            at = now - timedelta(days=HISTORY_DAYS * (capacity - number) / capacity)
            text = f"{generator.fact(TOPICS[topic], at, kind)} (#{number})"  # numbered: never a duplicate
            wanted.append((kind, assistant_id, topic, text))
    embeddings = vectors.of([(topic, text) for _, _, topic, text in wanted])
    entries = KnowledgeEntry.objects.bulk_create(
        [
            KnowledgeEntry(
                end_user_id=space.end_user_id,
                assistant_id=assistant_id,
                kind=kind,
                text=text,
                text_hash=hashlib.sha256(text.lower().encode()).hexdigest(),
                embedding=embedding,
            )
            for (kind, assistant_id, _, text), embedding in zip(wanted, embeddings, strict=True)
        ],
        batch_size=BATCH_SIZE,
    )
    through = KnowledgeEntry.source_pages.through
    links = [through(knowledgeentry_id=e.id, page_id=generator.random.choice(pages).id) for e in entries]
    through.objects.bulk_create(links, batch_size=BATCH_SIZE)


def _profile_build(end_user: EndUser, topics: list[int], generator: TextGenerator) -> None:
    chosen = [TOPICS[t] for t in dict.fromkeys(topics)]
    ProfileVersion.objects.bulk_create(
        [
            ProfileVersion(end_user=end_user, number=number, text=generator.profile(chosen[: 4 * number]))
            for number in (1, 2, 3)
        ]
    )


def _events_build(space: MemorySpace, pages: list[Page], segments: list[Segment]) -> None:
    events = []
    for number in range(EVENTS_PER_USER):
        page = pages[-(number + 1) - settings.MEMORY_STM_CAPACITY]
        kind = EventKind.PROMOTION if number % 5 == 0 else EventKind.STM_OVERFLOW
        events.append(
            MemoryEvent(
                tenant_id=space.tenant_id,
                end_user_id=space.end_user_id,
                space=space,
                kind=kind,
                mode="llm",
                target_type="segment" if kind == EventKind.PROMOTION else "page",
                target_id=page.segment_id if kind == EventKind.PROMOTION else page.id,
                detail={"placed_page_ids": [page.id]},
                llm_calls=2 if kind == EventKind.PROMOTION else 1,
                prompt_tokens=600,
                completion_tokens=120,
            )
        )
    MemoryEvent.objects.bulk_create(events)


def bench_tenant_delete(*, tenant: Tenant) -> None:
    """Remove a benchmark tenant and all its memory.

    The big tables go first by plain SQL (the ORM's cascade would load every page, vectors included, into memory);
    what is left, a few rows per user, goes through the ORM cascade so that rows of other apps are handled too.
    Foreign keys are deferred to commit in PostgreSQL, so the order inside the transaction is free.
    """
    users = f"SELECT id FROM {EndUser._meta.db_table} WHERE tenant_id = %s"
    spaces = f"SELECT id FROM {MemorySpace._meta.db_table} WHERE tenant_id = %s"
    knowledge = f"SELECT id FROM {KnowledgeEntry._meta.db_table} WHERE end_user_id IN ({users})"
    profiles = f"SELECT id FROM {ProfileVersion._meta.db_table} WHERE end_user_id IN ({users})"
    statements = [
        f"DELETE FROM {KnowledgeEntry.source_pages.through._meta.db_table} WHERE knowledgeentry_id IN ({knowledge})",
        f"DELETE FROM {ProfileVersion.source_pages.through._meta.db_table} WHERE profileversion_id IN ({profiles})",
        f"DELETE FROM {KnowledgeEntry._meta.db_table} WHERE end_user_id IN ({users})",
        f"DELETE FROM {ProfileVersion._meta.db_table} WHERE end_user_id IN ({users})",
        f"DELETE FROM {HeatSample._meta.db_table} WHERE space_id IN ({spaces})",
        f"DELETE FROM {Page._meta.db_table} WHERE space_id IN ({spaces})",
        f"DELETE FROM {Segment._meta.db_table} WHERE space_id IN ({spaces})",
    ]
    with transaction.atomic():
        with connection.cursor() as cursor:
            # The run's own reads of its synthetic users (the user pages record them) go with its tenant: the audit
            # trail's guard lets a delete through only under this maintenance flag, for this transaction alone.
            cursor.execute("SELECT set_config('memoryos.audit_maintenance', 'on', true)")
            for statement in statements:
                cursor.execute(statement, [tenant.id])
        tenant.delete()
