#!/usr/bin/env bash
# Installs the Debian packages only the test suites use: postgresql (the server
# binaries internal/pgtest starts on loopback for the postgres:// backend tests).
# Only missing packages are installed; with all of them present this touches
# nothing and needs no network. The Debian package's own cluster is not used
# (the tests run initdb in a temp dir), so it is not started here.
#
# Where apt-get is missing or this is not root it says so and exits 0: those
# tests then skip, saying why. As root (CI) a missing server fails them instead.
set -euo pipefail

packages=(postgresql)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "tools: test packages (${packages[*]}) installed"
  exit 0
fi

why=""
if ! command -v apt-get >/dev/null 2>&1; then
  why="no apt-get on this machine"
elif [ "$(id -u)" -ne 0 ]; then
  why="not root"
fi
if [ -n "$why" ]; then
  echo "tools: cannot install ${missing[*]} ($why); the PostgreSQL backend tests will skip"
  exit 0
fi

echo "tools: installing ${missing[*]} (apt-get)"
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
# Installing must not start the package's own server: the tests start theirs.
policy=/usr/sbin/policy-rc.d
placed=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && placed=1
fi
trap 'if [ -n "$placed" ]; then rm -f "$policy"; fi' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "tools: installed ${missing[*]} in $(( $(date +%s) - start ))s"
