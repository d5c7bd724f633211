#!/usr/bin/env bash
# Make sure Debian's Chromium is installed for the browser tests (tests/test_browser.py).
# Playwright's own `playwright install` downloads a browser build, which this project's machines
# cannot fetch; Debian's package comes from the apt mirror instead. Safe to run repeatedly.
set -euo pipefail

if [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "Chromium is missing: the browser tests need Debian's 'chromium' package." >&2
    echo "Install it as root: apt-get update && apt-get install -y chromium" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
echo "Installed $(chromium --version 2>/dev/null || echo chromium)."
