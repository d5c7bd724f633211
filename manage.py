#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
    if sys.argv[1:2] == ["devstack"]:  # starts the services settings would otherwise ask for
        os.environ["AMTP_SERVICES_NOT_NEEDED"] = "1"
    from django.core.management import execute_from_command_line

    from amtp_site import tracing

    tracing.setup()  # only with OTEL_EXPORTER_OTLP_ENDPOINT (docs/operations.md#traces)

    execute_from_command_line(sys.argv)
