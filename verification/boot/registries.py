"""The package registries an app's install may reach: the ones the worker itself is configured
for, read once from pip's and npm's own configuration (``PIP_INDEX_URL`` / ``pip config``,
``npm config get registry``), so an operator behind a mirror gets the mirror, and nothing else.
Local (``file:``) indexes are the worker's, not the box's: they are left out.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from urllib.parse import urlsplit

PYPI = "https://pypi.org/simple"
PYPI_FILES = "files.pythonhosted.org"  # where pypi.org's simple index points for the files
NPM = "https://registry.npmjs.org/"
INSIDE_PROXY = "http://127.0.0.1:3128"  # the box's bridge to the proxy (verification.sandbox)


def _ask(command: list[str]) -> str:
    try:
        answer = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    value = answer.stdout.strip().strip("'\"")
    return value if answer.returncode == 0 and value not in ("", "undefined", "null") else ""


@functools.cache
def pip_index() -> str:
    url = os.environ.get("PIP_INDEX_URL") or _ask(
        [sys.executable, "-m", "pip", "config", "get", "global.index-url"]
    )
    return url if urlsplit(url).scheme in ("http", "https") else PYPI


@functools.cache
def npm_registry() -> str:
    url = os.environ.get("npm_config_registry") or (
        _ask(["npm", "config", "get", "registry"]) if shutil.which("npm") else ""
    )
    return url if urlsplit(url).scheme in ("http", "https") else NPM


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


def allowed() -> tuple[str, list[str]]:
    """The proxy policy's (target URL, allowed hosts): the npm registry, pip's index (and
    pypi.org's file host when that is the index). All are allow-listed by name, as the
    operator configured them: a mirror on a private network is reached as such."""
    hosts = [_host_port(npm_registry()), _host_port(pip_index())]
    if urlsplit(pip_index()).hostname == "pypi.org":
        hosts.append(f"{PYPI_FILES}:443")
    return npm_registry(), hosts


def environment() -> dict[str, str]:
    """What the install commands are given: the registries, the proxy, no user configuration."""
    return {
        "HTTP_PROXY": INSIDE_PROXY,
        "HTTPS_PROXY": INSIDE_PROXY,
        "http_proxy": INSIDE_PROXY,
        "https_proxy": INSIDE_PROXY,
        "PIP_INDEX_URL": pip_index(),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "npm_config_registry": npm_registry(),
        "npm_config_proxy": INSIDE_PROXY,
        "npm_config_https_proxy": INSIDE_PROXY,
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        "npm_config_update_notifier": "false",
    }
