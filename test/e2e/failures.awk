# failures.awk reads the log of `go test -v ./test/e2e/...` and prints, for
# each top-level test that failed, every line it and its subtests wrote, in
# order: the tests that run in parallel interleave their output in the log
# (go test heads each switch with "=== CONT" or "=== NAME"), and this puts
# each failed test's lines back together under its name. Then what was
# written outside any test (TestMain's set-up and tear-down) and a panic, if
# the run had one (a panic or the -timeout ends every test at once).
#
#	awk [-v keep=80] [-v keepmsgs=40] -f test/e2e/failures.awk e2e.log
#
# A failed test that wrote more than keep lines shows its last keepmsgs
# messages (the first line of each t.Log/t.Error/t.Fatal), then its last keep
# lines; the log has all.

function top(name) {
	sub(/\/.*/, "", name)
	return name
}

function add(test, line) {
	if (!(test in count)) {
		count[test] = 0
	}
	lines[test, count[test]++] = line
}

# A test's own messages: the first line of each t.Log, t.Error and t.Fatal
# (terratest's command output, logger.go, is left to the tail), cut at 300
# characters: a failure followed by a long dump still shows.
function message(line) {
	return line ~ /^ +[A-Za-z0-9_]+\.go:[0-9]+: / && line !~ /^ +logger\.go:/
}

function show(test, title,    n, i, from, m, msgs) {
	n = count[test]
	print ""
	print "=== " title
	m = 0
	for (i = 0; i < n; i++) {
		if (message(lines[test, i])) {
			msgs[m++] = lines[test, i]
		}
	}
	if (m > 0 && n > keep) {
		from = (m > keepmsgs) ? m - keepmsgs : 0
		print "  its messages, the first line of each" (from > 0 ? " (the last " keepmsgs ")" : "") ":"
		for (i = from; i < m; i++) {
			print substr(msgs[i], 1, 300)
		}
		print "  its last " keep " lines:"
	}
	from = (n > keep) ? n - keep : 0
	if (from > 0) {
		print "    (" from " earlier line(s) left out: the full log has them)"
	}
	for (i = from; i < n; i++) {
		print lines[test, i]
	}
}

BEGIN {
	if (keep == "") {
		keep = 80
	}
	if (keepmsgs == "") {
		keepmsgs = 40
	}
	cur = ""
	panicking = 0
}

panicking {
	add(" panic", $0)
	next
}

/^panic: / {
	panicking = 1
	add(" panic", $0)
	next
}

# A test starts, pauses, resumes or writes again: what follows is its own.
/^=== (RUN|PAUSE|CONT|NAME) / {
	cur = top($3)
	if ($2 == "RUN" && index($3, "/") > 0) {
		add(cur, $0) # a subtest's start shows where its lines begin
	}
	next
}

# A test's result (indented for a subtest). A top-level test has written its
# last line: whatever follows without a header is no test's.
/^ *--- (PASS|FAIL|SKIP): / {
	name = $3
	t = top(name)
	add(t, $0)
	if ($2 == "FAIL:" && name == t && !(t in failed)) {
		failed[t] = 1
		order[nfailed++] = t
	}
	cur = (name == t) ? "" : t
	next
}

# The package's own result lines.
/^(ok|FAIL|PASS)(\t|$)/ {
	cur = ""
	next
}

{
	if (cur == "") {
		add(" outside", $0)
	} else {
		add(cur, $0)
	}
}

END {
	for (i = 0; i < nfailed; i++) {
		show(order[i], order[i] " failed; its output (and its subtests'):")
	}
	if (count[" outside"] > 0) {
		show(" outside", "written outside any test (TestMain: the local cluster's set-up and tear-down):")
	}
	if (count[" panic"] > 0) {
		show(" panic", "the test binary panicked (a test's panic, or -timeout: it names the tests that were running):")
	}
	if (nfailed == 0 && count[" panic"] == 0) {
		print ""
		print "=== no test reported a failure: see the log's end"
	}
}
