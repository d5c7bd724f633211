import gc
import os

from django.core.asgi import get_asgi_application

from amtp_site import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
tracing.setup()  # before the middleware is loaded; only with OTEL_EXPORTER_OTLP_ENDPOINT
django_application = get_asgi_application()

from amtp_site.bodies import BoundedBodies  # noqa: E402  (needs the settings loaded above)

# Django reads a whole body before any middleware runs: bound it here, chunked or not.
application = BoundedBodies(django_application)
gc.freeze()  # what is loaded by now lives as long as the process: see wsgi.py
