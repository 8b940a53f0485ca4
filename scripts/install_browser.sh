#!/usr/bin/env bash
# Install Debian Chromium (+ chromedriver) for the browser tests (tests/browser/).
# Idempotent: does nothing when /usr/bin/chromium and /usr/bin/chromedriver exist;
# otherwise runs `apt-get update` once and installs the missing packages.
# Needs root (or sudo). Playwright drives this system Chromium; `playwright install` is never used.
set -euo pipefail

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)

if [ ${#need[@]} -eq 0 ]; then
  echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install_browser.sh: need root (or sudo) to install ${need[*]}" >&2; exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y "${need[@]}"
/usr/bin/chromium --version
