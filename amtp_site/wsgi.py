import gc
import os

from django.core.wsgi import get_wsgi_application

from amtp_site import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
tracing.setup()  # before the middleware is loaded; only with OTEL_EXPORTER_OTLP_ENDPOINT
application = get_wsgi_application()
# What is loaded by now (Django, the apps, the URLs) lives as long as the process: take it out
# of the collector's reach, so a full collection (which holds every thread of the process,
# mid-request) scans only what requests make. Under 50 clients it was behind most of the
# slowest POST /api/runs answers (docs/benchmarks.md).
gc.freeze()
