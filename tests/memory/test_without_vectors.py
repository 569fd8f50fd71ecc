"""without_vectors(): reads leave every embedding and search column in the database, the model's own and its
relations'."""

from __future__ import annotations

from memory.models import KnowledgeEntry, Page, Segment
from memory.models.tiers import search_fields, vector_fields
from tests import builders


def test_the_vector_columns_are_read_from_the_models_fields():
    assert vector_fields(Page) == ("embedding", "topic_embedding")
    assert vector_fields(Segment) == ("embedding",)
    assert vector_fields(KnowledgeEntry) == ("embedding",)


def test_the_search_columns_are_the_generated_ones():
    assert search_fields(Page) == ("search", "search_keys")
    assert search_fields(Segment) == ()


def test_it_defers_every_vector_and_search_column_of_the_model():
    for model in (Page, Segment, KnowledgeEntry):
        deferred = frozenset(vector_fields(model) + search_fields(model))
        assert model.objects.without_vectors().query.deferred_loading == (deferred, True)


def test_it_defers_the_vector_columns_of_related_rows_too():
    deferred, _ = Page.objects.without_vectors("prev_page", "segment").query.deferred_loading
    assert deferred == {
        "embedding",
        "topic_embedding",
        "search",
        "search_keys",
        "prev_page__embedding",
        "prev_page__topic_embedding",
        "prev_page__search",
        "prev_page__search_keys",
        "segment__embedding",
    }


def test_a_page_read_without_vectors_loads_them_only_when_asked(space, django_assert_num_queries):
    builders.turn(space, user_message="I bake sourdough every Sunday")
    page = Page.objects.filter(space=space).without_vectors().get()
    assert page.get_deferred_fields() == {"embedding", "topic_embedding", "search", "search_keys"}
    assert page.user_message == "I bake sourdough every Sunday"
    with django_assert_num_queries(1):
        _ = page.embedding
    assert "embedding" not in page.get_deferred_fields()
