package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunPath(t *testing.T) {
	cases := []struct {
		verb, output, want string
	}{
		{"up", "policy: 0 errors\npaddock up: nothing changed: 41 unchanged, checked live in 0.4s\n", PathFast},
		{"up", "paddock up: repaired 1 object(s) changed out of band, 40 unchanged, checked live in 0.5s\n", PathFast},
		{"up", "paddock up: full run: the backend is gs://, which Paddock does not read\npaddock up: nothing changed\n", "full run: the backend is gs://, which Paddock does not read"},
		// A fallback is never read as fast, whatever follows it.
		{"up", "paddock up: full run: no checkpoint\npaddock up: nothing changed: 3 unchanged, checked live in 0.1s\n", "full run: no checkpoint"},
		{"drift", "paddock drift: compared 41 objects live (3 lists, 2 gets, 0 dry-runs) in 0.31s\nno drift\n", PathFast},
		{"drift", "paddock drift: full run: the state was written by another Pulumi\n", "full run: the state was written by another Pulumi"},
		// Another verb's line, or none, names no path.
		{"drift", "paddock up: nothing changed: 41 unchanged, checked live in 0.4s\n", PathUnsaid},
		{"up", "", PathUnsaid},
	}
	for _, c := range cases {
		if got := RunPath(c.verb, c.output); got != c.want {
			t.Errorf("RunPath(%s, %q) = %q, want %q", c.verb, c.output, got, c.want)
		}
	}
}

func TestPathText(t *testing.T) {
	all := PathRuns{Paths: []string{PathFast, PathFast, PathFast}}
	if got := all.PathText(); got != "fast (3 of 3)" || !all.AllFast() {
		t.Errorf("all fast: %q, AllFast %v", got, all.AllFast())
	}
	mixed := PathRuns{Paths: []string{PathFast, "full run: a", "full run: a", PathUnsaid}}
	want := "fast in 1 of 4; full run: a (2 of 4); " + PathUnsaid + " (1 of 4)"
	if got := mixed.PathText(); got != want || mixed.AllFast() {
		t.Errorf("mixed: %q, want %q; AllFast %v", got, want, mixed.AllFast())
	}
	if (PathRuns{}).AllFast() {
		t.Error("no runs read as all fast")
	}
}

// backendResults are the section's figures: file:// fast and in bounds,
// postgres:// in bounds but one drift fell back.
func backendResults() *Results {
	return &Results{Backends: []BackendRun{
		{Backend: BackendFile, Server: "a directory on local disk", Tenants: 1, Objects: 40, UpSeconds: 9,
			Noop:  PathRuns{Seconds: 0.8, Runs: []float64{0.8, 0.9, 0.7}, Paths: []string{PathFast, PathFast, PathFast}, Summary: "nothing changed"},
			Drift: PathRuns{Seconds: 0.7, Runs: []float64{0.7, 0.6, 0.8}, Paths: []string{PathFast, PathFast, PathFast}}},
		{Backend: BackendPostgres, Server: "PostgreSQL 15 on 127.0.0.1", Tenants: 1, Objects: 40, UpSeconds: 10,
			Noop:  PathRuns{Seconds: 0.9, Runs: []float64{0.9, 0.9, 0.9}, Paths: []string{PathFast, PathFast, PathFast}},
			Drift: PathRuns{Seconds: 1.1, Runs: []float64{1.1, 1.0, 1.2}, Paths: []string{PathFast, "full run: x", PathFast}}},
	}}
}

func TestJudgeBackends(t *testing.T) {
	verdicts := backendResults().judgeBackends()
	if len(verdicts) != 4 {
		t.Fatalf("verdicts = %+v", verdicts)
	}
	met := map[string]bool{}
	for _, v := range verdicts {
		if !v.Measured {
			t.Errorf("%s not measured: %s", v.Target, v.Value)
		}
		met[v.Target] = v.Met
	}
	for target, want := range map[string]bool{
		"paddock " + OpNoop + " on file:// ≤ 2 s at 1 tenant, fast path":      true,
		"paddock " + OpDrift + " on file:// ≤ 2 s at 1 tenant, fast path":     true,
		"paddock " + OpNoop + " on postgres:// ≤ 2 s at 1 tenant, fast path":  true,
		"paddock " + OpDrift + " on postgres:// ≤ 2 s at 1 tenant, fast path": false, // in time, but one run fell back
	} {
		got, ok := met[target]
		if !ok {
			t.Errorf("no verdict %q in %v", target, met)
		} else if got != want {
			t.Errorf("%q met = %v, want %v", target, got, want)
		}
	}

	slow := backendResults()
	slow.Backends[0].Noop.Seconds = TargetSmallSeconds + 0.01
	for _, v := range slow.judgeBackends() {
		if strings.Contains(v.Target, OpNoop+" on file://") && v.Met {
			t.Errorf("a no-op over the bound is met: %+v", v)
		}
	}

	none := &Results{Backends: []BackendRun{{Backend: BackendPostgres, NotMeasured: "no PostgreSQL"}}}
	for _, v := range none.judgeBackends() {
		if v.Met || v.Measured || !strings.Contains(v.Value, "not measured: no PostgreSQL") {
			t.Errorf("a backend not measured: %+v", v)
		}
	}
}

func TestReportBackendsSection(t *testing.T) {
	r := backendResults()
	r.Backends = append(r.Backends, BackendRun{Backend: "s3://", NotMeasured: "no | server"})
	var b bytes.Buffer
	r.writeBackends(&b)
	out := b.String()
	for _, want := range []string{
		"| file:// | a directory on local disk | 1 | 40 | 9.00 | 0.80 | fast (3 of 3) | 0.70 | fast (3 of 3) |",
		"| postgres:// | PostgreSQL 15 on 127.0.0.1 | 1 | 40 | 10.00 | 0.90 | fast (3 of 3) | 1.10 | fast in 2 of 3; full run: x (1 of 3) |",
		"| s3:// | – | – | – | not measured: no \\| server |",
		"run 3 times each",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestCarryBackends(t *testing.T) {
	old := backendResults()
	old.Paddock = &Build{Commit: "0123456789abcdef"}
	old.Date = "2026-12-01 10:00 UTC"
	res := &Results{}
	if !CarryBackends(res, old) {
		t.Fatal("nothing carried")
	}
	if len(res.Backends) != 2 || res.MeasuredOf(SectionBackends).Paddock.Commit != "0123456789abcdef" {
		t.Errorf("carried %+v measured by %+v", res.Backends, res.MeasuredOf(SectionBackends))
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "carried over from binary 0123456789ab") {
		t.Errorf("notes = %q", res.Notes)
	}
	// A run that measured them keeps its own.
	own := backendResults()
	own.Backends = own.Backends[:1]
	if CarryBackends(own, old) || len(own.Backends) != 1 {
		t.Errorf("a run's own figures were replaced: %+v", own.Backends)
	}
}

func TestHideSecrets(t *testing.T) {
	if got := hideSecrets("postgres://paddock:s3cret@127.0.0.1/db: s3cret", []string{"s3cret", ""}); strings.Contains(got, "s3cret") {
		t.Errorf("secret shown: %q", got)
	}
}
