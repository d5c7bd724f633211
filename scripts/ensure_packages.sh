#!/usr/bin/env bash
# Make sure the Debian packages that run generated tests are installed: Chromium's headless
# shell (the browser the tests drive; Playwright's own download cannot be fetched on our
# machines) and bubblewrap (the sandbox every execution of generated code runs in). Safe to run
# repeatedly.
set -euo pipefail

missing=()
[ -x /usr/bin/chromium-headless-shell ] || missing+=(chromium-headless-shell)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "Missing Debian packages: ${missing[*]} (verification runs generated tests in" >&2
    echo "Chromium inside a bubblewrap sandbox). Install them as root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
echo "Installed ${missing[*]}."
