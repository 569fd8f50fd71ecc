"""A server process freezes what loading left alive out of the garbage collector's full collections, so no request
pauses while a collection walks the whole app (docs/decisions/0022-loaded-objects-frozen.md)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import types

import pytest
from celery import current_app
from django.core.exceptions import ImproperlyConfigured

from memoryos_site import celery as celery_module
from memoryos_site.collector import broker_client_load, loaded_objects_freeze


@pytest.fixture(autouse=True)
def thawed_after():
    yield
    gc.unfreeze()  # the test process itself keeps collecting everything


def test_what_is_alive_is_frozen_and_what_comes_later_is_not():
    kept = [["loaded"]]
    frozen = loaded_objects_freeze()
    later = [["made for a request"]]
    collected = {id(found) for found in gc.get_objects()}  # the generations a collection walks

    assert frozen > 1000  # the test process has loaded the site
    assert id(kept[0]) not in collected and id(later[0]) in collected


def test_the_web_process_imports_its_views_and_freezes_them_as_it_loads(tmp_path):
    script = (
        "import gc, sys\nimport memoryos_site.wsgi\nprint(gc.get_freeze_count(), 'integrations.proxy' in sys.modules)\n"
    )
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "memoryos_site.settings", "EMBEDDING_WARM_AT_START": "false"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    frozen, views = done.stdout.split()
    assert int(frozen) > 100_000 and views == "True"


def test_the_web_process_loads_the_broker_client_before_it_freezes():
    # the transport class the first queued task would use: made before the freeze, it is never walked again
    script = (
        "import gc, sys\nimport memoryos_site.wsgi\nfrom memoryos_site.celery import app\n"
        "transport = app.connection_for_write().get_transport_cls()\n"
        "walked = {id(found) for found in gc.get_objects()}\n"
        "print(transport.__module__, id(transport) in walked)\n"
    )
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "memoryos_site.settings", "EMBEDDING_WARM_AT_START": "false"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    module, walked = done.stdout.split()
    assert module.startswith("kombu.transport.") and walked == "False"


def test_a_broker_url_no_transport_serves_stops_the_web_process_with_a_clear_error(monkeypatch):
    monkeypatch.setattr(current_app.conf, "broker_url", "nosuchbroker://host/0")

    with pytest.raises(ImproperlyConfigured, match="CELERY_BROKER_URL names a broker"):
        broker_client_load()


def test_a_worker_process_freezes_what_it_loaded_as_it_starts(settings):
    settings.EMBEDDING_WARM_AT_START = False
    gc.unfreeze()

    celery_module.embedder_warm_in_pool_process()
    assert gc.get_freeze_count() > 1000

    gc.unfreeze()
    solo = types.SimpleNamespace(pool=type("TaskPool", (), {"__module__": "celery.concurrency.solo"})())
    celery_module.embedder_warm_in_worker(sender=solo)
    assert gc.get_freeze_count() > 1000
