"""Retrieval's rows made into model instances: the same instances `Model.from_db` makes, with or without
`Model.__init__`."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models.signals import post_init

from memory.models import KnowledgeEntry, Page, ProfileVersion, Segment
from memory.retrieval import rows
from tests import builders

pytestmark = pytest.mark.django_db


def _rows(model, extra: str = "") -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {rows.columns(model)}{extra} FROM {model._meta.db_table} ORDER BY id")
        return cursor.fetchall()


def _from_db(model, row: tuple):
    """What `Manager.raw` would make of the row: the fields' conversions, then `Model.from_db`."""
    names, compiler, converters = rows._reading(model)
    (converted,) = compiler.apply_converters([row], converters) if converters else [row]
    return model.from_db(connection.alias, frozenset(names), list(converted)[: len(names)])


def _state(instance) -> tuple:
    return instance._state.adding, instance._state.db


@pytest.fixture
def memory(space):
    builders.segment_with_pages(space, summary="hiking mountains dog", messages=["hiking with my dog", "rain"])
    builders.knowledge(space.end_user, text="The user hikes in the mountains")
    builders.profile(space.end_user, text="The user likes hiking.")
    return space


@pytest.mark.parametrize("model", [Page, Segment, KnowledgeEntry, ProfileVersion])
def test_each_model_a_retrieval_reads_is_made_without_its_init(model):
    assert rows._plainly_set(model)


@pytest.mark.parametrize("model", [Page, Segment, KnowledgeEntry, ProfileVersion])
def test_instances_made_without_init_equal_those_from_db_field_for_field(memory, model):
    found = _rows(model)
    assert found
    for made, expected in zip(rows.instances(model, found), [_from_db(model, r) for r in found], strict=True):
        assert made.__dict__.keys() - {"_state"} == expected.__dict__.keys() - {"_state"}
        assert {k: v for k, v in made.__dict__.items() if k != "_state"} == {
            k: v for k, v in expected.__dict__.items() if k != "_state"
        }
        assert _state(made) == _state(expected) == (False, connection.alias)
        assert made.get_deferred_fields() == expected.get_deferred_fields()


def test_extra_columns_follow_the_fields_as_attributes(memory):
    (page, *_) = rows.instances(Page, _rows(Page, ", 0.25 AS cosine"), extra=("cosine",))
    assert rows.extra_float(page, "cosine") == 0.25
    assert page.user_message == "hiking with my dog"


def test_a_made_instance_saves_as_an_update_and_loads_what_was_not_read(memory):
    (page, *_) = rows.instances(Page, _rows(Page))
    page.user_message = "hiking with my two dogs"
    page.save(update_fields=["user_message"])
    assert Page.objects.get(pk=page.pk).user_message == "hiking with my two dogs"
    assert page.segment.summary == "hiking mountains dog"  # a foreign key read by its id, then followed


def test_when_a_receiver_listens_for_init_instances_go_through_init(memory):
    heard = []

    def listen(sender, instance, **kwargs):
        heard.append(instance)

    post_init.connect(listen, sender=Page)
    try:
        made = rows.instances(Page, _rows(Page))
    finally:
        post_init.disconnect(listen, sender=Page)
    assert heard == made and len(made) == 2
