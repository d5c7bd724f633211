"""The web's Temporal client (amtp_site.temporal.call): one connection per process and per
connection settings, reused by every request; a failed connection is not kept."""

from __future__ import annotations

import pytest
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

from amtp_site import temporal

pytestmark = pytest.mark.django_db


async def system_info(client):
    return await client.workflow_service.get_system_info(GetSystemInfoRequest())


@pytest.fixture
def connects(monkeypatch) -> list[str]:
    made: list[str] = []
    real = temporal.connect

    async def counting():
        from django.conf import settings

        made.append(settings.TEMPORAL_ADDRESS)
        return await real()

    monkeypatch.setattr(temporal, "connect", counting)
    monkeypatch.setattr(temporal, "_loop", None)  # start from a process that never connected
    return made


def test_requests_share_one_connection_until_the_address_changes(connects, settings):
    clients = [temporal.call(lambda client: _same(client)) for _ in range(3)]
    assert clients[0] is clients[1] is clients[2]
    assert temporal.call(system_info).server_version
    assert connects == [settings.TEMPORAL_ADDRESS]

    real = settings.TEMPORAL_ADDRESS
    settings.TEMPORAL_ADDRESS = "127.0.0.1:1"  # nothing listens: fails, and is not kept
    with pytest.raises(RuntimeError):
        temporal.call(system_info)
    with pytest.raises(RuntimeError):
        temporal.call(system_info)
    settings.TEMPORAL_ADDRESS = real
    assert temporal.call(system_info).server_version
    assert connects == [real, "127.0.0.1:1", "127.0.0.1:1"]


async def _same(client):
    return client


def test_tls_settings_choose_plain_tls_or_mtls(settings, tmp_path):
    """API key: TLS with the system's roots. Certificate files: mTLS with their bytes."""
    from temporalio.service import TLSConfig

    settings.TEMPORAL_TLS = False
    assert temporal.tls_config() is False
    settings.TEMPORAL_TLS = True
    assert temporal.tls_config() is True
    (tmp_path / "c.pem").write_bytes(b"CERT")
    (tmp_path / "k.pem").write_bytes(b"KEY")
    settings.TEMPORAL_TLS_CLIENT_CERT_FILE = str(tmp_path / "c.pem")
    settings.TEMPORAL_TLS_CLIENT_KEY_FILE = str(tmp_path / "k.pem")
    assert temporal.tls_config() == TLSConfig(client_cert=b"CERT", client_private_key=b"KEY")
