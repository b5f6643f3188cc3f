#!/usr/bin/env bash
# Builds one pinned upstream tool from its own module under tools/NAME and caches it
# under $PADDOCK_HOME/tools/NAME-VERSION-HASH (HASH covers the tool module, its recipe
# and this script). A cached build is reused; a failed build leaves nothing behind and
# names the step that failed and its log.
#
# Each tool's recipe is tools/NAME/build.sh. Its first lines declare the pin it builds
# ("# pin: PULUMI_VERSION"); it runs as its own bash process with -euo pipefail, in
# the tool's directory, with OUT (the bin directory to fill) and every pin exported.
# Running it as a separate process, never as the condition of an `if`, is what keeps
# errexit on for every step: bash ignores `set -e` inside a function or subshell that
# is tested by `if`/`||`, which once let a failed step pass unnoticed.
#
# Every build gets a private, empty Go module cache that is deleted afterwards, so
# each rebuild of a tool, on any machine, is a fresh-machine build: a recipe that reads
# a module before anything downloaded it fails here, not only on a newcomer's laptop.
# The shared Go build cache still makes rebuilds of unchanged packages fast.
#
# Usage: build-tool.sh NAME [INDEX/COUNT]
#   PADDOCK_TOOLS_SRC   directory holding the tool modules (default: this directory)
#   PADDOCK_TOOLS_HEARTBEAT  seconds between progress lines while building (default 30)
set -euo pipefail

name=${1:?usage: build-tool.sh NAME [INDEX/COUNT]}
of=${2:+[$2] }
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
root=$(cd "$(dirname "$0")/.." && pwd)
tools_src=${PADDOCK_TOOLS_SRC:-$root/tools}
# shellcheck disable=SC1091
set -a; source "$root/internal/pins/versions.env"; set +a
home=${PADDOCK_HOME:-$HOME/.paddock}
src="$tools_src/$name"
recipe="$src/build.sh"
[ -f "$recipe" ] || { echo "build-tool: no recipe $recipe (each tool needs tools/NAME/build.sh)" >&2; exit 2; }

pin=$(sed -n 's/^# pin: *\([A-Z0-9_]*\) *$/\1/p' "$recipe" | head -n 1)
[ -n "$pin" ] || { echo "build-tool: $recipe lacks a '# pin: VERSIONS_ENV_KEY' line" >&2; exit 2; }
version=${!pin:-}
[ -n "$version" ] || { echo "build-tool: $recipe pins $pin, which internal/pins/versions.env does not set" >&2; exit 2; }

hash=$(cd "$src" && cat go.mod go.sum build.sh $(ls ./*.go 2>/dev/null) "$self" | sha256sum | cut -c1-12)
dest="$home/tools/$name-$version-$hash"
mkdir -p "$home/bin" "$home/tools" "$home/logs"

link() { for f in "$dest"/bin/*; do ln -sfn "$f" "$home/bin/$(basename "$f")"; done; }

if [ -f "$dest/.complete" ]; then
  link
  echo "tools: ${of}$name $version (cached)"
  exit 0
fi

tmp="$dest.partial"
modcache="$home/tools/.gomodcache-$name-$$"
log="$home/logs/build-$name.log"
cleanup() {
  local rc=$?
  set +e
  [ -n "${beat:-}" ] && { kill "$beat"; wait "$beat"; } 2>/dev/null
  # The module cache is read-only by design; make it writable to remove it.
  [ -d "$modcache" ] && { chmod -R u+w "$modcache"; rm -rf "$modcache"; }
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
# Private module caches of builds that were killed (a kill -9 runs no trap).
for d in "$home/tools/.gomodcache-$name-"*; do
  if [ -d "$d" ] && ! kill -0 "${d##*-}" 2>/dev/null; then chmod -R u+w "$d"; rm -rf "$d"; fi
done
rm -rf "$tmp"; mkdir -p "$tmp/bin"
start=$(date +%s)
echo "tools: ${of}building $name $version (log: $log)"

# A heartbeat for the long first run: elapsed time and how many packages the Go
# toolchain has compiled so far (the recipe builds with -v into the log).
(
  every=${PADDOCK_TOOLS_HEARTBEAT:-30}
  while sleep "$every"; do
    n=$(grep -vc -e '^+' -e '^step:' -e '^go: downloading' "$log" 2>/dev/null || true)
    d=$(grep -c '^go: downloading' "$log" 2>/dev/null || true)
    s=$(grep '^step:' "$log" 2>/dev/null | tail -n 1 | cut -c7- || true)
    echo "tools: ${of}building $name $version: $(( $(date +%s) - start ))s, ${s:+$s, }$d modules downloaded, $n packages compiled"
  done
) &
beat=$!

set +e
(
  cd "$src"
  export OUT="$tmp/bin" GOMODCACHE="$modcache" GOFLAGS="${GOFLAGS:-} -modcacherw" CGO_ENABLED=0
  exec bash -euo pipefail "$recipe"
) >"$log" 2>&1
rc=$?
set -e

if [ "$rc" -ne 0 ]; then
  echo "tools: ${of}building $name $version FAILED (exit $rc) after $(( $(date +%s) - start ))s; last lines of $log:" >&2
  tail -n 20 "$log" >&2
  echo "tools: fix the cause (network to the Go module proxy? disk space? the step named above?) and run 'make tools' again." >&2
  exit 1
fi
missing=0
for f in "$tmp"/bin/*; do [ -x "$f" ] || missing=1; done
if [ "$missing" -ne 0 ] || [ -z "$(ls -A "$tmp/bin")" ]; then
  echo "tools: ${of}building $name $version FAILED: its recipe exited 0 but left no executable in OUT; see $log" >&2
  exit 1
fi
rm -rf "$dest"; mv "$tmp" "$dest"; touch "$dest/.complete"
link
echo "tools: ${of}built $name $version in $(( $(date +%s) - start ))s"
