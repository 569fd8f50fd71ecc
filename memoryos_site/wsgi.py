"""WSGI entry point (gunicorn memoryos_site.wsgi; runserver and `make run` load it too)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")
application = get_wsgi_application()

# Imported after the app registry is ready.
from memory.embeddings import embedder_warm_in_background  # noqa: E402
from memoryos_site.collector import loaded_objects_freeze, site_loaded  # noqa: E402

# What loading left alive is frozen out of the garbage collector's full collections (docs/decisions/0022).
site_loaded()
# The embedding model takes seconds to load: load it now, in the background, so the first message is as fast as the
# rest (EMBEDDING_WARM_AT_START=false turns this off), and freeze it too once loaded.
embedder_warm_in_background(why="web", then=lambda: loaded_objects_freeze(collect=False))
