"""WSGI entry point (gunicorn memoryos_site.wsgi; runserver and `make run` load it too)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")
application = get_wsgi_application()

# The embedding model takes seconds to load: load it now, in the background, so the first message is as fast as the
# rest (EMBEDDING_WARM_AT_START=false turns this off). Imported after the app registry is ready.
from memory.embeddings import embedder_warm_in_background  # noqa: E402

embedder_warm_in_background(why="web")
