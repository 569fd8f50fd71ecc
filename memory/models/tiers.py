"""The three tiers: pages (STM and MTM), segments with their heat history, and long-term personal memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorCombinable, SearchVectorField
from django.db import models
from django.db.models.functions import Cast, Coalesce, Concat
from pgvector.django import VectorField

from memory.models.privacy import ReviewState
from memory.models.tenancy import Assistant, EndUser, MemorySpace

if TYPE_CHECKING:
    from memory.profile_withdrawal import ProfileChange


def vector_fields(model: type[models.Model]) -> tuple[str, ...]:
    """The names of a model's vector columns (embeddings), in field order."""
    return tuple(field.name for field in model._meta.concrete_fields if isinstance(field, VectorField))


def search_fields(model: type[models.Model]) -> tuple[str, ...]:
    """The names of a model's columns PostgreSQL derives for searching (generated, read only inside SQL)."""
    return tuple(field.name for field in model._meta.concrete_fields if isinstance(field, models.GeneratedField))


def topic_vector_of() -> Coalesce:
    """`Page.topic_vector` in SQL: the stored topic vector, else the page's own."""
    return Coalesce("topic_embedding", "embedding", output_field=HalfVectorField())


class HalfVectorField(VectorField):
    """A vector kept in half precision (pgvector's `halfvec`: two bytes a dimension instead of four), read and
    written as a VectorField's (a list of floats in Python, pgvector's text form in SQL).

    For the page vectors, which are most of a user's bytes: a page row of 2.4 KB held a 1.5 KB vector. Half
    precision keeps about three significant digits of each coordinate of a unit vector (a relative error under
    0.05 %), far below the differences between the cosines retrieval ranks by (see
    docs/decisions/0006-half-precision-page-vectors.md). Its statements compare a page vector with the question's
    cast to halfvec (`PAGE_COSINE`)."""

    description = "Vector in half precision"

    def db_type(self, connection) -> str:
        return "halfvec" if self.dimensions is None else f"halfvec({self.dimensions})"


def unread_fields(model: type[models.Model]) -> tuple[str, ...]:
    """The columns reads leave in the database: vectors and search columns, used inside SQL, never in Python."""
    return vector_fields(model) + search_fields(model)


class VarBitField(models.Field):
    """PostgreSQL's `bit varying`: a vector's binary quantisation (the one-bit codes of migrations 0016-0025)."""

    description = "Bit string of any length"

    def db_type(self, connection) -> str:
        return "bit varying"


class VectorQuerySet(models.QuerySet):
    """Queries of a model with vector columns, which most reads never need and should not load."""

    def without_vectors(self, *related: str) -> Self:
        """Defer every vector and search column of the model and of each `related` path (one followed by
        select_related): reads use them inside SQL, never in Python."""
        names = list(unread_fields(self.model))
        for path in related:
            model = self.model
            for part in path.split("__"):
                model = model._meta.get_field(part).related_model
            names += [f"{path}__{name}" for name in unread_fields(model)]
        return self.defer(*names)


class PageQuerySet(VectorQuerySet):
    """Pages, with the one name of the mid-term pages that wait to be placed into a segment."""

    def waiting_placement(self) -> Self:
        """Mid-term pages not yet placed into a segment: the condition of the `page_waiting_placement` index, which
        answers every read of them (STM_EVICT_SQL writes the same condition out)."""
        return self.filter(WAITING_PLACEMENT)


def space_lexeme(space_id: int) -> str:
    """The lexeme that names a space in its pages' `search` vectors, as tsquery input: 'space 42'. It holds a
    space, which no text-search parser puts in a lexeme, so no word of a message or a question can match it."""
    return f"'space {space_id}'"


class SpaceLexemeVector(SearchVectorCombinable, models.Func):
    """A one-lexeme tsvector naming the row's space (`space_lexeme`), built from `space_id` in SQL."""

    template = "(%(expressions)s)::tsvector"
    output_field = SearchVectorField()

    def __init__(self):
        quoted = Concat(
            models.Value("'space "),
            Cast("space_id", models.TextField()),
            models.Value("'"),
            output_field=models.TextField(),
        )
        super().__init__(quoted)


class SearchKeys(models.Func):
    """`search_keys(space, document)`: one int4 per lexeme of the document, hashing the space with the lexeme, so a
    GIN index over them lists each word's pages per space (migration 0019 creates the SQL function)."""

    function = "memory_search_keys"
    output_field = ArrayField(models.IntegerField())


def page_words(config: str = "english") -> SearchVector:
    """A page's searchable words: the message and the reply, the reply left out when the system wrote it."""
    return SearchVector(
        "user_message",
        models.Case(
            models.When(reply_source=ReplySource.SYSTEM, then=models.Value("")),
            default=models.F("assistant_reply"),
            output_field=models.TextField(),
        ),
        config=config,
    )


class Tier(models.TextChoices):
    SHORT_TERM = "stm", "Short-term"
    MID_TERM = "mtm", "Mid-term"


# Mid-term pages not yet placed into a segment (PageQuerySet.waiting_placement, the page_waiting_placement index).
WAITING_PLACEMENT = models.Q(tier=Tier.MID_TERM, segment__isnull=True)


IMPORTED_FROM = "imported from "


def imported_from(source_ref: str) -> str:
    """`source_ref` when it names another memory system (memory.importers), else "": a bundle's fingerprint or a
    chat reply's id means nothing to the person whose memory it is."""
    return source_ref if source_ref.startswith(IMPORTED_FROM) else ""


class PageSource(models.TextChoices):
    CHAT = "chat", "Chat"
    API = "api", "API"
    IMPORT = "import", "Import"
    DEMO = "demo", "Demo"


class ReplySource(models.TextChoices):
    """Who wrote a page's reply: memory is made only of what people and models said, never of system text."""

    ASSISTANT = "assistant", "The assistant"
    SYSTEM = "system", "System text (no model)"


class Page(models.Model):
    """One turn: the user's message and the assistant's reply.

    In STM while `tier` is stm. Evicted pages are mid-term; `segment` is null until the updating task has placed
    them ("pending"). `prev_page` links the dialogue chain and lives in the database, so it survives restarts.
    """

    item_kind: ClassVar[str] = "page"  # its name in memory.items and in audit entries' target_type

    # No index of its own: page_seq_per_space (space, seq) leads with it, as three other indexes do (migration 0036)
    space = models.ForeignKey(MemorySpace, on_delete=models.CASCADE, related_name="pages", db_index=False)
    seq = models.BigIntegerField()
    user_message = models.TextField()
    assistant_reply = models.TextField()
    at = models.DateTimeField()
    tier = models.CharField(max_length=3, choices=Tier.choices, default=Tier.SHORT_TERM)
    segment = models.ForeignKey("Segment", null=True, blank=True, on_delete=models.CASCADE, related_name="pages")
    prev_page = models.OneToOneField("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="next_page")
    chain_head = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="chain_members"
    )
    chain_summary = models.TextField(blank=True)
    topic_summary = models.TextField(blank=True)
    keywords = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    embedding = HalfVectorField(null=True, blank=True)
    # Stored only where it differs from `embedding` (a topic summary's vector, MEMORY_TOPIC_VECTOR=summary); NULL
    # means the page's own vector is its topic vector (read `topic_vector`), which saves a second copy of every vector.
    topic_embedding = HalfVectorField(null=True, blank=True)
    analysed = models.BooleanField(default=False)
    pinned = models.BooleanField(default=False)
    # Marked outdated by a person (memory.services.validity): what it said stopped being true at `valid_to`; it stays
    # readable as history and reaches a prompt only marked as earlier. `outdated_note` is the replacing value, if given.
    valid_to = models.DateTimeField(null=True, blank=True)
    outdated_note = models.TextField(blank=True, db_default="")
    # A reviewer rejected a fact this turn stated (memory.services.review): the turn stays readable as history but is
    # never retrieved or quoted into a prompt, unless it is pinned (kept on purpose).
    withheld = models.BooleanField(default=False, db_default=False)
    source = models.CharField(max_length=8, choices=PageSource.choices, default=PageSource.CHAT)
    source_ref = models.CharField(max_length=200, blank=True)
    source_meta = models.JSONField(default=dict, blank=True)
    # "system" for a reply generated without a model (the offline reply): kept in the transcript, never memory
    reply_source = models.CharField(max_length=9, choices=ReplySource.choices, default=ReplySource.ASSISTANT)
    created_at = models.DateTimeField(auto_now_add=True)
    # The lexical channel of retrieval: PostgreSQL keeps it in step with the text. 'english' stems ("painting",
    # "paintings" and "painted" meet) and drops stopwords; names are stemmed alike on both sides, so they still match.
    # A reply the system wrote (the offline reply) is never memory, so its words are not searched either. The last
    # lexeme names the page's space (`space_lexeme`, no word can match it): a tsquery that ANDs it in gets one space's
    # matches from the GIN index (the index cannot hold space_id itself: btree_gin is not available everywhere).
    search = models.GeneratedField(
        expression=page_words() + SpaceLexemeVector(),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # The full-text channel's index keys: one hash of (space, lexeme) per word of `search` (`SearchKeys`). The GIN
    # index over `search` keeps one posting list per word for every space, which a query walks whole, so its cost grew
    # with the number of users; over these keys a word's list holds one space's pages. A hash may collide (with
    # another word or another space's), so a match is confirmed against `search` and the page's space (exact).
    search_keys = models.GeneratedField(
        expression=SearchKeys("space_id", page_words()),
        output_field=ArrayField(models.IntegerField()),
        db_persist=True,
    )
    # Not a field here: the table's `embedding_code` column holds the embedding as two bits a dimension
    # (`memory_vector_code`, a three-level thermometer code), kept by a trigger on every insert and every update that
    # sets the vector (migration 0034). The vector channel ranks a space's pages by the codes' Hamming distance over a
    # small covering index (page_space_code) and re-ranks the best few hundred by exact cosine
    # (docs/decisions/0023-two-bit-first-pass.md). Python never reads or writes it.

    objects = PageQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "seq"], name="page_seq_per_space"),
            models.CheckConstraint(
                condition=~models.Q(tier="stm") | models.Q(segment__isnull=True), name="stm_page_has_no_segment"
            ),
        ]
        indexes = [
            models.Index(fields=["space", "tier", "seq"], name="page_space_tier_seq"),
            # retrieval asks for a space's pinned pages on every query: few rows, found without a scan
            models.Index(fields=["space"], condition=models.Q(pinned=True), name="page_space_pinned"),
            # a space's mid-term pages that wait for placement: counted on every turn that overflows STM, without
            # reading the space's thousands of entries in the other indexes (a few rows a space, none for most)
            models.Index(fields=["space", "seq"], condition=WAITING_PLACEMENT, name="page_waiting_placement"),
            # fastupdate off: a query would otherwise scan the whole pending list of new entries (up to 4 MB) until a
            # vacuum merged it; a page's insert costs a little more instead
            # (docs/decisions/0008-space-scoped-search-keys.md)
            GinIndex(fields=["search"], name="page_search", fastupdate=False),
            GinIndex(fields=["search_keys"], name="page_search_keys", fastupdate=False),
            # (page_space_code, over (space, id) INCLUDE (embedding_code), is migration 0034's: the vector channel's
            # first pass reads only it, an index-only scan; its second pass finds the pages it re-ranks by (space, id)
            # in the same leaves, not in the primary key; docs/decisions/0004-binary-first-pass.md)
        ]

    @property
    def text(self) -> str:
        return f"User: {self.user_message}\nAssistant: {self.assistant_reply}"

    @property
    def memory_reply(self) -> str:
        """The reply as memory may use it: empty when the system wrote it without a model."""
        return "" if self.reply_source == ReplySource.SYSTEM else self.assistant_reply

    @property
    def topic_vector(self):
        """The vector F compares with segment summaries: the stored topic vector, else the page's own."""
        return self.topic_embedding if self.topic_embedding is not None else self.embedding

    @property
    def imported_from(self) -> str:
        """The other memory system this turn came from ("imported from letta (message-1)"), else ""."""
        return imported_from(self.source_ref)

    @property
    def memory_text(self) -> str:
        """The turn as memory steps read it (embeddings, topics, facts): system text left out."""
        reply = self.memory_reply
        return f"User: {self.user_message}\nAssistant: {reply}" if reply else f"User: {self.user_message}"

    @property
    def end_user(self) -> EndUser:
        """Whose memory this is (the owner of its space)."""
        return self.space.end_user

    def __str__(self) -> str:
        return f"page {self.seq} of {self.space_id}"


class Segment(models.Model):
    """Pages grouped by topic. Heat is derived from the counters at read time (memory.heat)."""

    item_kind: ClassVar[str] = "segment"

    space = models.ForeignKey(MemorySpace, on_delete=models.CASCADE, related_name="segments")
    summary = models.TextField()
    keywords = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    embedding = VectorField(null=True, blank=True)
    n_visit = models.IntegerField(default=0)
    l_interaction = models.IntegerField(default=0)
    last_touched_at = models.DateTimeField()
    pinned = models.BooleanField(default=False)
    locked = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = VectorQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(n_visit__gte=0), name="segment_n_visit_non_negative"),
            models.CheckConstraint(condition=models.Q(l_interaction__gte=0), name="segment_l_interaction_non_negative"),
        ]
        indexes = [
            models.Index(fields=["space", "last_touched_at"], name="segment_space_touched"),
            # Retrieval shows a space's pinned segments on every turn: the few pinned, not all 200 of the space.
            models.Index(fields=["space"], condition=models.Q(pinned=True), name="segment_space_pinned"),
        ]

    @property
    def end_user(self) -> EndUser:
        """Whose memory this is (the owner of its space)."""
        return self.space.end_user

    def __str__(self) -> str:
        return self.summary[:80]


class HeatEvent(models.TextChoices):
    CREATED = "created", "Created"
    MERGED = "merged", "Merged"
    VISITED = "visited", "Visited"
    PROMOTED = "promoted", "Promoted"
    DECAYED = "decayed", "Decayed"
    EDITED = "edited", "Edited"


class HeatSample(models.Model):
    """A segment's heat and its components at one moment, and the event that changed it."""

    segment = models.ForeignKey(Segment, on_delete=models.CASCADE, related_name="heat_samples")
    space = models.ForeignKey(MemorySpace, on_delete=models.CASCADE, related_name="heat_samples")
    at = models.DateTimeField()
    n_visit = models.IntegerField()
    l_interaction = models.IntegerField()
    r_recency = models.FloatField()
    heat = models.FloatField()
    event = models.CharField(max_length=10, choices=HeatEvent.choices)

    class Meta:
        indexes = [models.Index(fields=["segment", "at"], name="heat_sample_segment_at")]


class SegmentVisit(models.Model):
    """A visit retrieval made to a segment, waiting to be counted: the request writes one small row, the worker
    folds waiting visits into N_visit, the last-touch time and the heat history (memory.services.visits)."""

    segment = models.ForeignKey(Segment, on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField()


class ProfileAuthor(models.TextChoices):
    SYSTEM = "system", "Automatic updating"
    OPERATOR = "operator", "Operator"
    END_USER = "end_user", "End user"


class ProfileVersion(models.Model):
    """One version of a user's profile; the newest is current. Older versions stay for audit."""

    item_kind: ClassVar[str] = "profile_version"
    # not a column: what approving it took out of its text, set on the version memory.services.review returns
    withdrawn: ProfileChange | None

    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="profile_versions")
    number = models.IntegerField()
    text = models.TextField()
    source_segment = models.ForeignKey(
        Segment, null=True, blank=True, on_delete=models.SET_NULL, related_name="profile_versions"
    )
    source_pages = models.ManyToManyField(Page, blank=True, related_name="profile_versions")
    author = models.CharField(max_length=10, choices=ProfileAuthor.choices, default=ProfileAuthor.SYSTEM)
    locked = models.BooleanField(default=False)
    # memory it was derived from was forgotten or corrected and a model must re-derive it: withheld from prompts
    stale = models.BooleanField(default=False)
    # pending and rejected versions never reach a prompt (memory.models.privacy.ReviewState)
    review_state = models.CharField(max_length=8, choices=ReviewState.choices, default=ReviewState.APPROVED)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = VectorQuerySet.as_manager()  # it has none of its own, but reads joining its segment defer that one's

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["end_user", "number"], name="profile_version_number_per_user"),
        ]


class KnowledgeKind(models.TextChoices):
    USER = "user", "About the user"
    ASSISTANT = "assistant", "About the assistant"


class KnowledgeEntry(models.Model):
    """A short, dated, self-contained fact. User knowledge belongs to the user; assistant knowledge to the
    assistant *and* the user it was learnt from (never shared across users)."""

    item_kind: ClassVar[str] = "knowledge"

    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="knowledge")
    assistant = models.ForeignKey(Assistant, null=True, blank=True, on_delete=models.CASCADE, related_name="knowledge")
    kind = models.CharField(max_length=9, choices=KnowledgeKind.choices)
    text = models.TextField()
    text_hash = models.CharField(max_length=64)
    embedding = VectorField(null=True, blank=True)
    source_pages = models.ManyToManyField(Page, blank=True, related_name="knowledge")
    source_segment = models.ForeignKey(
        Segment, null=True, blank=True, on_delete=models.SET_NULL, related_name="knowledge"
    )
    pinned = models.BooleanField(default=False)
    locked = models.BooleanField(default=False)
    # What the fact gives the value of ("drink", "home", "employer", "pet:dog"; memory.validity.Claim.slot), blank
    # when it names none: a later fact of the same slot with another value replaces it.
    slot = models.CharField(max_length=80, blank=True, db_default="")
    # When it became true (the time of the turn that said it) and, once replaced or marked outdated, when it stopped:
    # a fact with `valid_to` is history ("used to: coffee, until 27 Nov"), never current memory.
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    # ON DELETE SET NULL in the database (migration 0028), so forgetting a fact costs no query per fact it replaced;
    # the one it replaced stays history (forgetting "I now drink tea" does not make the coffee true again).
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="supersedes"
    )
    outdated_note = models.TextField(blank=True, db_default="")  # the replacing value given when marking it outdated
    # Where a fact came from when no turn of ours said it: "imported from mem0 (<id>)" (memory.importers), a bundle.
    source_ref = models.CharField(max_length=200, blank=True, db_default="")
    # pending and rejected facts never reach a prompt (memory.models.privacy.ReviewState)
    review_state = models.CharField(max_length=8, choices=ReviewState.choices, default=ReviewState.APPROVED)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = VectorQuerySet.as_manager()

    @property
    def imported_from(self) -> str:
        """The other memory system this fact came from ("imported from mem0 (m-1)"), else ""."""
        return imported_from(self.source_ref)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(kind="user", assistant__isnull=True))
                | (models.Q(kind="assistant", assistant__isnull=False)),
                name="assistant_knowledge_names_its_assistant",
            ),
            models.UniqueConstraint(
                fields=["end_user", "kind", "assistant", "text_hash"],
                nulls_distinct=False,
                name="knowledge_not_stored_twice",
            ),
            models.CheckConstraint(
                condition=~models.Q(superseded_by=models.F("id")), name="knowledge_not_superseded_by_itself"
            ),
        ]
        indexes = [
            models.Index(fields=["end_user", "kind", "created_at"], name="knowledge_owner_created"),
            # Retrieval reads a user's pinned facts on every turn: the few pinned, not all of the user's entries.
            models.Index(fields=["end_user"], condition=models.Q(pinned=True), name="knowledge_user_pinned"),
            # promotion looks up the user's current fact of a slot before storing a new value of it
            models.Index(
                fields=["end_user", "slot"],
                condition=models.Q(valid_to__isnull=True) & ~models.Q(slot=""),
                name="knowledge_current_slot",
            ),
        ]
