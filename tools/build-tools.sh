#!/usr/bin/env bash
# Builds (or fetches from a tools mirror) several pinned tools, PADDOCK_TOOLS_JOBS at a
# time (default 2): one tool downloads its modules and links while another compiles,
# which keeps both cores of a small machine busy. Each tool is still built by
# build-tool.sh alone, from its own empty module cache. On a failure the running
# builds finish, nothing new starts, and the exit status is 1.
#
# Usage: build-tools.sh TOOL...
#   PADDOCK_TOOLS_MIRROR  when set, each tool is first fetched with `$PADDOCK tools fetch`
#                         (exit 0 fetched, 3 not in the mirror: build it, else stop)
#   PADDOCK               the paddock CLI (needed with a mirror)
set -uo pipefail
shopt -s nullglob

here=$(cd "$(dirname "$0")" && pwd)
jobs=${PADDOCK_TOOLS_JOBS:-2}
case $jobs in '' | *[!0-9]* | 0) echo "build-tools: PADDOCK_TOOLS_JOBS must be a positive number, not '$jobs'" >&2; exit 2 ;; esac
total=$#

one() { # NAME INDEX/COUNT
  if [ -n "${PADDOCK_TOOLS_MIRROR:-}" ]; then
    "${PADDOCK:?build-tools: PADDOCK must name the paddock CLI to fetch from a mirror}" tools fetch "$1" "$2"
    case $? in 0) return 0 ;; 3) ;; *) return 1 ;; esac
  fi
  "$here/build-tool.sh" "$1" "$2"
}

# Each build writes its exit status to a file: `wait -n` alone can miss the status of
# a build that ended before it was called.
status=$(mktemp -d)
trap 'rm -rf "$status"' EXIT
failed() {
  local f
  for f in "$status"/*; do [ "$(cat "$f")" = 0 ] || return 0; done
  return 1
}

i=0
for t in "$@"; do
  i=$((i + 1))
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  failed && break
  { one "$t" "$i/$total"; echo $? >"$status/$t"; } &
done
wait
if failed || [ "$(ls "$status" | wc -l)" -ne "$total" ]; then
  echo "tools: a build failed (its lines above name it and its log); run 'make tools' again once it is fixed" >&2
  exit 1
fi
