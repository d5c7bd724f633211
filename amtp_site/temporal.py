"""The Temporal client, from settings. Retries are Temporal's own (the SDK client adds none)."""

from __future__ import annotations

from django.conf import settings
from temporalio.client import Client


async def connect() -> Client:
    return await Client.connect(
        settings.TEMPORAL_ADDRESS,
        namespace=settings.TEMPORAL_NAMESPACE,
        api_key=settings.TEMPORAL_API_KEY or None,
        tls=settings.TEMPORAL_TLS,
    )
