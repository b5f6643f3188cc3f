#!/usr/bin/env bash
# run-lanes.sh runs the live tests in two lanes at once, each on a cluster of
# its own (lanes_test.go says which test runs where, README.md why):
#
#   node:    the local cluster's own live tests (internal/localcluster), then
#            the e2e suite's node lane, on the machine's one real node;
#   control: from the start, beside it, the e2e suite's control lane on a
#            cluster of kwok nodes in a PADDOCK_HOME of its own.
#
# Each part's whole output goes to its log in LOGDIR; the terminal gets each
# test's result as it ends, headed with its lane, and at the end each part's
# time and exit. When a part fails, its failed tests are printed again with
# every line they wrote (failures.awk), so one lane's failure never hides the
# other's results.
#
#   test/e2e/run-lanes.sh LOGDIR            the two lanes (make live)
#   E2E_LANES=serial test/e2e/run-lanes.sh LOGDIR
#                                           every e2e test on one real-node
#                                           cluster, one after another
#
# PADDOCK_BIN is the paddock binary under test (the Makefile's build).
set -uo pipefail
cd "$(dirname "$0")/../.."

logdir=${1:?usage: test/e2e/run-lanes.sh LOGDIR}
mkdir -p "$logdir"
logdir=$(cd "$logdir" && pwd)
mode=${E2E_LANES:-lanes}
case "$mode" in
lanes | serial) ;;
*)
	echo "run-lanes.sh: E2E_LANES=$mode: use lanes (the default) or serial" >&2
	exit 2
	;;
esac

# The e2e suite is compiled once; both lanes run the same binary.
suite="$logdir/e2e.test"
if ! go test -c -tags e2e -o "$suite" ./test/e2e; then
	echo "run-lanes.sh: the e2e suite does not compile" >&2
	exit 1
fi

# part NAME LOG CMD...: runs CMD with its output in LOG, shows each top-level
# test's result as it ends, and records the exit and the time in LOG.rc.
part() {
	local name=$1 log=$2 start=$SECONDS rc
	shift 2
	echo "[$name] started: $*"
	"$@" 2>&1 | tee "$log" | awk -v head="[$name] " '/^(--- (PASS|FAIL|SKIP)|ok |FAIL|PASS$|panic:|e2e:)/ { print head $0; fflush() }'
	rc=${PIPESTATUS[0]}
	echo "$rc $((SECONDS - start))" >"$log.rc"
	echo "[$name] exit $rc after $((SECONDS - start)) s (log: $log)"
	return "$rc"
}

lane() { # lane NAME: the e2e suite's tests of lane NAME ("" = every test)
	(cd test/e2e && PADDOCK_E2E_LANE=$1 exec "$suite" -test.v -test.count=1 -test.timeout 180m)
}

localcluster=(env PADDOCK_LIVE=1 go test -count=1 -timeout 30m -v -run TestLive ./internal/localcluster/)
parts=(localcluster)
rm -f "$logdir"/*.log.rc
if [ "$mode" = serial ]; then
	part localcluster "$logdir/localcluster.log" "${localcluster[@]}"
	part e2e "$logdir/e2e.log" lane ""
	parts+=(e2e)
else
	part control "$logdir/e2e-control.log" lane control &
	control=$!
	trap 'kill -TERM "$control" 2>/dev/null' INT TERM
	part localcluster "$logdir/localcluster.log" "${localcluster[@]}"
	part node "$logdir/e2e-node.log" lane node
	wait "$control"
	parts+=(node control)
fi

echo
echo "live tests:"
failed=0
for p in "${parts[@]}"; do
	log="$logdir/$p.log"
	[ "$p" = node ] || [ "$p" = control ] && log="$logdir/e2e-$p.log"
	read -r rc secs <"$log.rc" 2>/dev/null || { rc=unknown; secs=?; }
	echo "  $p: exit $rc, $secs s (log: $log)"
	# A skipped test is named with its reason (its last message before the
	# SKIP line): a skip never reads as a pass.
	skips=$(awk '/^=== RUN   [^\/]+$/ { reason = "" }
		/^    [A-Za-z0-9_]+\.go:[0-9]+: / { reason = $0; sub(/^ +/, "", reason) }
		/^--- SKIP: / { print "    skipped: " $3 ": " reason }' "$log")
	[ -z "$skips" ] || echo "$skips"
	# The control lane runs on kwok nodes by design: a test there that skips
	# for want of a container is in the wrong lane, and fails the run.
	if [ "$p" = control ] && grep -q kwok <<<"$skips"; then
		echo "    a test of the control lane skips on kwok nodes: place it in the node lane (test/e2e/lanes_test.go)"
		rc=1
	fi
	if [ "$rc" != 0 ]; then
		failed=1
		echo
		echo "$p: failed tests (full log: $log):"
		awk -f test/e2e/failures.awk "$log"
	fi
done
exit "$failed"
