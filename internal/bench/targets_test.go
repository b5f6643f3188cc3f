package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// format4 is a run of the binary's default at 1 and 100 tenants, each
// figure set just inside or just outside its target.
func format4() *Results {
	const gib = 1 << 30
	return &Results{
		Format: ResultsFormat, Date: "2026-12-02 00:00 UTC", Machine: "test",
		Paddock:  &Build{Commit: "fedcba987654", Binary: "/x/bin/paddock", SHA256: strings.Repeat("cd", 32)},
		Versions: map[string]string{"pulumi": "v3"},
		Provision: []Sample{
			{Tool: ToolPaddock, Op: OpCreate, Tenants: 1, Objects: 36, Resources: 47, Seconds: 15, TreePeakRSS: 500 << 20},
			{Tool: ToolPaddock, Op: OpNoop, Tenants: 1, Objects: 36, Resources: 47, Seconds: 1.99, Summary: "paddock up: nothing changed (checked 36 objects live in 0.3s)"},
			{Tool: ToolPaddock, Op: OpDrift, Tenants: 1, Objects: 36, Resources: 47, Seconds: 2.01},
			{Tool: ToolPaddock, Op: OpDestroy, Tenants: 1, Objects: 36, Resources: 47, Seconds: 6.1},
			{Tool: ToolFloor, Op: OpCreate, Tenants: 1, Objects: 36, Seconds: 10},
			{Tool: ToolFloor, Op: OpDestroy, Tenants: 1, Objects: 36, Seconds: 4},

			// Below 100 tenants only the 15 s bound applies.
			{Tool: ToolPaddock, Op: OpNoop, Tenants: 10, Objects: 216, Resources: 281, Seconds: 15},
			{Tool: ToolPaddock, Op: OpDrift, Tenants: 10, Objects: 216, Resources: 281, Seconds: 15.01},

			{Tool: ToolPaddock, Op: OpCreate, Tenants: 100, Objects: 2016, Resources: 2621, Seconds: 68.5, TreePeakRSS: 834 << 20},
			// 0.1 s per 100 of 2,621 resources is 2.621 s.
			{Tool: ToolPaddock, Op: OpNoop, Tenants: 100, Objects: 2016, Resources: 2621, Seconds: 2.62, TreePeakRSS: 187 << 20},
			{Tool: ToolPaddock, Op: OpDrift, Tenants: 100, Objects: 2016, Resources: 2621, Seconds: 2.63, TreePeakRSS: 2 * gib},
			{Tool: ToolPaddock, Op: OpNoopFull, Tenants: 100, Objects: 2016, Resources: 2621, Seconds: 102.6, TreePeakRSS: 3 * gib},
			{Tool: ToolPaddock, Op: OpDestroy, Tenants: 100, Objects: 2016, Resources: 2621, Seconds: 45, TreePeakRSS: 577 << 20},
			{Tool: ToolFloor, Op: OpCreate, Tenants: 100, Objects: 2016, Seconds: 45},
			{Tool: ToolFloor, Op: OpDestroy, Tenants: 100, Objects: 2016, Seconds: 30},

			// 0.1 s per 100 of 26,021 resources is 26 s: the 15 s bound
			// is the one that holds here.
			{Tool: ToolPaddock, Op: OpNoop, Tenants: 1000, Objects: 20016, Resources: 26021, Seconds: 15, TreePeakRSS: gib},
			{Tool: ToolPaddock, Op: OpDrift, Tenants: 1000, Objects: 20016, Resources: 26021, Seconds: 15.5, TreePeakRSS: 2*gib + 1},
		},
	}
}

func verdicts(r *Results) map[string]TargetVerdict {
	out := map[string]TargetVerdict{}
	for _, t := range r.Targets {
		out[t.Target] = t
	}
	return out
}

func TestTargetsJudgedAtTheirBounds(t *testing.T) {
	r := format4()
	r.Analyse()
	want := map[string]struct {
		met   bool
		value string
	}{
		"paddock no-op up ≤ 2 s at 1 tenant":                                   {true, "1.99 s"},
		"paddock drift ≤ 2 s at 1 tenant":                                      {false, "2.01 s"},
		"paddock no-op up ≤ 15 s (10 tenants)":                                 {true, "15.00 s"},
		"paddock drift ≤ 15 s (10 tenants)":                                    {false, "15.01 s"},
		"paddock no-op up ≤ 0.1 s per 100 resources and ≤ 15 s (100 tenants)":  {true, "0.100 s per 100 (2.62 s for 2621 resources)"},
		"paddock drift ≤ 0.1 s per 100 resources and ≤ 15 s (100 tenants)":     {false, "0.100 s per 100 (2.63 s for 2621 resources)"},
		"paddock no-op up ≤ 0.1 s per 100 resources and ≤ 15 s (1000 tenants)": {true, "0.058 s per 100 (15.00 s for 26021 resources)"},
		"paddock drift ≤ 0.1 s per 100 resources and ≤ 15 s (1000 tenants)":    {false, "0.060 s per 100 (15.50 s for 26021 resources)"},
		"paddock create ≤ 1.5x the parallel SSA floor (1 tenant)":              {true, "1.50x (15.00 s vs 10.00 s)"},
		"paddock create ≤ 1.5x the parallel SSA floor (100 tenants)":           {false, "1.52x (68.50 s vs 45.00 s)"},
		"paddock destroy ≤ 1.5x the destroy floor (1 tenant)":                  {false, "1.52x (6.10 s vs 4.00 s)"},
		"paddock destroy ≤ 1.5x the destroy floor (100 tenants)":               {true, "1.50x (45.00 s vs 30.00 s)"},
		"whole process tree ≤ 2048 MiB (1 tenant, paddock runs)":               {true, "create 500 MiB"},
		"whole process tree ≤ 2048 MiB (100 tenants, paddock runs)":            {true, "create 834 MiB, no-op up 187 MiB, drift 2048 MiB, destroy 577 MiB"},
		"whole process tree ≤ 2048 MiB (1000 tenants, paddock runs)":           {false, "no-op up 1024 MiB, drift 2048 MiB"},
	}
	got := verdicts(r)
	// The 1,000-tenant run holds no create or destroy: those are reported
	// as not measured at the limit.
	for _, name := range []string{"paddock create ≤ 1.5x the parallel SSA floor (1000 tenants)", "paddock destroy ≤ 1.5x the destroy floor (1000 tenants)"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s judged without a floor at that size", name)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d targets judged, want %d: %+v", len(got), len(want), r.Targets)
	}
	for name, w := range want {
		v, ok := got[name]
		if !ok {
			t.Errorf("target %q not judged", name)
			continue
		}
		if !v.Measured || v.Met != w.met || v.Value != w.value {
			t.Errorf("%s: measured %v met %v %q, want met %v %q", name, v.Measured, v.Met, v.Value, w.met, w.value)
		}
	}

	// The --full no-op's 3 GiB is contrast, not the default: it never
	// fails the memory target.
	r.Analyse()
	if v := verdicts(r)["whole process tree ≤ 2048 MiB (100 tenants, paddock runs)"]; !v.Met {
		t.Errorf("memory of 2 GiB judged not met: %+v", v)
	}
}

// A size the run did not reach is reported, as not measured, never as met,
// and so is every target at the spec's limit of 1,000 tenants.
func TestTargetsOfAMissingSizeAreNotMeasured(t *testing.T) {
	r := format4()
	var small []Sample
	for _, s := range r.Provision {
		if s.Tenants == 1 && s.Op != OpDestroy {
			small = append(small, s)
		}
	}
	r.Provision = small
	r.Analyse()
	got := verdicts(r)
	for _, name := range []string{
		"paddock no-op up ≤ 0.1 s per 100 resources and ≤ 15 s",
		"paddock drift ≤ 0.1 s per 100 resources and ≤ 15 s",
		"paddock destroy ≤ 1.5x the destroy floor",
		"paddock no-op up ≤ 0.1 s per 100 resources and ≤ 15 s (1000 tenants)",
		"paddock drift ≤ 0.1 s per 100 resources and ≤ 15 s (1000 tenants)",
		"paddock create ≤ 1.5x the parallel SSA floor (1000 tenants)",
		"paddock destroy ≤ 1.5x the destroy floor (1000 tenants)",
		"whole process tree ≤ 2048 MiB (1000 tenants, paddock runs)",
	} {
		v, ok := got[name]
		if !ok || v.Measured || v.Met || v.Verdict() != "not measured" {
			t.Errorf("%s: %+v (present %v)", name, v, ok)
		}
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| paddock drift ≤ 0.1 s per 100 resources and ≤ 15 s (1000 tenants) | no run at this size | not measured |") {
		t.Errorf("the report does not say the 1,000-tenant target was not measured:\n%s", b.String())
	}
}

// format3JSON is results of the format before, as the committed ones of
// binary 9ccc838: "paddock" was every-step, "paddock-final" final.
const format3JSON = `{"format": 3, "date": "2026-12-01 05:35 UTC", "machine": "m",
 "paddock": {"commit": "9ccc83836a7d", "binary": "/b/paddock", "sha256": "7f4dccbf0150aaaa"},
 "versions": {"pulumi": "v3.274.1"},
 "provision": [
  {"tool": "paddock-final", "op": "create", "tenants": 1, "objects": 36, "resources": 47, "seconds": 15.65},
  {"tool": "paddock-final", "op": "no-op up", "tenants": 1, "objects": 36, "resources": 47, "seconds": 25.51},
  {"tool": "paddock-final", "op": "drift", "tenants": 1, "objects": 36, "resources": 47, "seconds": 18.66},
  {"tool": "paddock-final", "op": "destroy", "tenants": 1, "objects": 36, "resources": 47, "seconds": 30.89},
  {"tool": "paddock", "op": "create", "tenants": 1, "objects": 36, "resources": 47, "seconds": 29.38, "phases": {"start": 2, "update": 25.93, "finish": 1.45}},
  {"tool": "paddock", "op": "destroy", "tenants": 1, "objects": 36, "resources": 47, "seconds": 50.92},
  {"tool": "paddock", "op": "create", "tenants": 10, "objects": 216, "resources": 281, "seconds": 174.76},
  {"tool": "paddock-final", "op": "destroy", "tenants": 10, "objects": 216, "resources": 281, "seconds": 50.36},
  {"tool": "ssa-floor", "op": "create", "tenants": 1, "objects": 36, "seconds": 13.01}
 ]}`

func readFormat3(t *testing.T) *Results {
	t.Helper()
	file := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(file, []byte(format3JSON), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadResults(file)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFormat3IsUpgraded(t *testing.T) {
	r := readFormat3(t)
	if r.Format != ResultsFormat || r.UpgradedFrom != 3 {
		t.Errorf("format %d from %d, want %d from 3", r.Format, r.UpgradedFrom, ResultsFormat)
	}
	if err := r.Identified(); err != nil {
		t.Errorf("format 3 names its binary, the upgrade must keep it: %v", err)
	}
	if s, ok := r.Find(ToolPaddockEveryStep, OpCreate, 10); !ok || s.Seconds != 174.76 {
		t.Errorf("format 3's paddock (every-step then) is not paddock-every-step: %+v %v", s, ok)
	}
	if s, ok := r.Find(ToolPaddockFinal, OpNoop, 1); !ok || s.Seconds != 25.51 {
		t.Errorf("paddock-final lost: %+v %v", s, ok)
	}
	for _, s := range r.Provision {
		if s.Tool == ToolPaddock {
			t.Errorf("a format-3 sample still claims to be the crash-safe default: %+v", s)
		}
	}
	// Rendered, its targets are judged on --checkpoints final, named so.
	r.Analyse()
	if v := verdicts(r)["paddock no-op up (final checkpoint) ≤ 2 s at 1 tenant"]; !v.Measured || v.Met || v.Value != "25.51 s" {
		t.Errorf("format-3 no-op target: %+v", v)
	}
	// Upgrading twice changes nothing more.
	r.Upgrade()
	if s, ok := r.Find(ToolPaddockEveryStep, OpCreate, 10); !ok || s.Seconds != 174.76 || r.UpgradedFrom != ResultsFormat {
		t.Errorf("second upgrade: %+v %v, from %d", s, ok, r.UpgradedFrom)
	}
}

func TestBeforeAfterFromTheReplacedResults(t *testing.T) {
	old := readFormat3(t)
	r := format4()
	r.Provision = append(r.Provision,
		Sample{Tool: ToolPaddock, Op: OpCreate, Tenants: 10, Seconds: 17.4},
		Sample{Tool: ToolPaddock, Op: OpDestroy, Tenants: 10, Seconds: 15.8},
	)
	r.Baseline = BaselineOf(old)
	if r.Baseline == nil || r.Baseline.Paddock.Commit != "9ccc83836a7d" {
		t.Fatalf("baseline of format-3 results: %+v", r.Baseline)
	}
	if len(r.Baseline.Quoted) != len(Issue14Quoted) {
		t.Errorf("the issue's 100-tenant figures must join a format-3 baseline: %+v", r.Baseline.Quoted)
	}
	type key struct {
		label   string
		tenants int
	}
	got := map[key]BeforeAfterRow{}
	for _, row := range r.BeforeAfter() {
		got[key{row.Label, row.Tenants}] = row
	}
	want := map[key]BeforeAfterRow{
		{"create, crash-safe default", 1}:                           {Before: 29.38, After: 15, Source: "every-step checkpoints, Paddock 9ccc83836a7d"},
		{"create, crash-safe default", 10}:                          {Before: 174.76, After: 17.4, Source: "every-step checkpoints, Paddock 9ccc83836a7d"},
		{"create (before: --checkpoints final, not crash-safe)", 1}: {Before: 15.65, After: 15, Source: "--checkpoints final, Paddock 9ccc83836a7d"},
		{"no-op up", 1}:                        {Before: 25.51, After: 1.99, Source: "--checkpoints final, Paddock 9ccc83836a7d"},
		{"no-op up", 100}:                      {Before: 115.9, After: 2.62, Source: "--checkpoints final, " + issue14Source},
		{"drift", 1}:                           {Before: 18.66, After: 2.01, Source: "--checkpoints final, Paddock 9ccc83836a7d"},
		{"drift", 100}:                         {Before: 118.1, After: 2.63, Source: "--checkpoints final, " + issue14Source},
		{"destroy", 1}:                         {Before: 30.89, After: 6.1, Source: "--checkpoints final, Paddock 9ccc83836a7d"},
		{"destroy", 10}:                        {Before: 50.36, After: 15.8, Source: "--checkpoints final, Paddock 9ccc83836a7d"},
		{"destroy", 100}:                       {Before: 317.6, After: 45, Source: "--checkpoints final, " + issue14Source},
		{"destroy, every-step checkpoints", 1}: {Before: 50.92, After: 0, Source: "every-step checkpoints, Paddock 9ccc83836a7d"},
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("no row %v", k)
			continue
		}
		if g.Before != w.Before || g.After != w.After || g.Source != w.Source {
			t.Errorf("%v: before %.2f after %.2f %q, want %.2f %.2f %q", k, g.Before, g.After, g.Source, w.Before, w.After, w.Source)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d rows, want %d: %+v", len(got), len(want), got)
	}

	r.Analyse()
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, line := range []string{
		"| no-op up | 1 | 25.51 | --checkpoints final, Paddock 9ccc83836a7d | 1.99 | 12.8x |",
		"| destroy | 100 | 317.60 | --checkpoints final, quoted from issue 14 (its 2026-11-29 run), not measured by this harness | 45.00 | 7.1x |",
		"| destroy, every-step checkpoints | 1 | 50.92 | every-step checkpoints, Paddock 9ccc83836a7d | – | – |",
		"Before: the results this run replaced (Paddock 9ccc83836a7d, 2026-12-01 05:35 UTC)",
		// The before's breakdown is kept beside the after's.
		"#### Before: Paddock 9ccc83836a7d",
		"| 1 | paddock create (every-step) | 29.38 | 2.00 | 0.00 | 25.93 | 1.45 | – |",
		// A fast path has no phases: the table says so and shows what it printed.
		"| 1 | paddock no-op up | 1.99 | – | – | – | – | no engine run: `paddock up: nothing changed (checked 36 objects live in 0.3s)` |",
	} {
		if !strings.Contains(md, line) {
			t.Errorf("the report lacks %q:\n%s", line, md)
		}
	}
}

// The baseline stays the one first replaced: a rerun, or the partial
// results an interrupted run saved, is never its own "before".
func TestBaselineIsCarriedAcrossRuns(t *testing.T) {
	first := format4()
	first.Baseline = BaselineOf(readFormat3(t))
	file := filepath.Join(t.TempDir(), "results.json")
	if err := first.WriteJSON(file); err != nil {
		t.Fatal(err)
	}
	replaced, err := ReadResults(file)
	if err != nil {
		t.Fatal(err)
	}
	b := BaselineOf(replaced)
	if b == nil || b.Paddock.Commit != "9ccc83836a7d" || len(b.Quoted) != len(Issue14Quoted) {
		t.Fatalf("carried baseline: %+v", b)
	}
	// Asked for explicitly, a format-4 run's own figures are the before,
	// and no issue figures are quoted beside them.
	own := OwnBaseline(replaced)
	if own == nil || own.Paddock.Commit != "fedcba987654" || len(own.Quoted) != 0 {
		t.Fatalf("own baseline: %+v", own)
	}
	next := format4()
	next.Baseline = own
	for _, row := range next.BeforeAfter() {
		if row.Label == "create, crash-safe default" && row.Tenants == 1 && row.Source != "the default, Paddock fedcba987654" {
			t.Errorf("a format-4 before's crash-safe create is its default: %+v", row)
		}
	}
	// Results that do not name their binary are no before.
	if b := BaselineOf(&Results{Format: 3, Provision: first.Provision}); b != nil {
		t.Errorf("a baseline of an unnamed binary: %+v", b)
	}
}

func TestSummaryLine(t *testing.T) {
	for _, c := range []struct{ verb, out, want string }{
		{"up", "paddock up: platform \"b\", stack \"s\", target local\npaddock up: 47 created in 12.3s\noutputs:\n  kubeconfig  \"x\"\n", "paddock up: 47 created in 12.3s"},
		{"up", "paddock up: platform \"b\", stack \"s\", target local\npaddock up: nothing changed (checked 36 objects live in 0.3s)\n", "paddock up: nothing changed (checked 36 objects live in 0.3s)"},
		{"destroy", "paddock destroy: platform \"b\", stack \"s\", target local\npaddock destroy: 47 deleted in 6.0s\n\n", "paddock destroy: 47 deleted in 6.0s"},
		{"drift", "paddock drift: platform \"b\", stack \"s\", target local\nno drift (47 resources compared in 0.3s, sweep 0.1s)\n", "no drift (47 resources compared in 0.3s, sweep 0.1s)"},
		{"up", "", ""},
	} {
		if got := SummaryLine(c.out, c.verb); got != c.want {
			t.Errorf("SummaryLine(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

func TestPaddockRunsMeasured(t *testing.T) {
	plan := func(o ProvisionOptions, n int) string {
		var parts []string
		for _, m := range paddockModes(o, n) {
			parts = append(parts, m.tool+": "+strings.Join(m.ops, ", "))
		}
		return strings.Join(parts, "; ")
	}
	o := ProvisionOptions{EveryStepMax: 10, Full: true, FullMax: 0}
	if got, want := plan(o, 10), "paddock: create, no-op up, drift, no-op up --full, destroy; paddock-every-step: create, destroy"; got != want {
		t.Errorf("10 tenants:\n got %s\nwant %s", got, want)
	}
	if got, want := plan(o, 100), "paddock: create, no-op up, drift, no-op up --full, destroy"; got != want {
		t.Errorf("100 tenants, every-step up to 10:\n got %s\nwant %s", got, want)
	}
	o.FullMax = 10
	if got, want := plan(o, 50), "paddock: create, no-op up, drift, destroy"; got != want {
		t.Errorf("50 tenants, --full up to 10:\n got %s\nwant %s", got, want)
	}
	if got, want := plan(ProvisionOptions{}, 100), "paddock: create, no-op up, drift, destroy; paddock-every-step: create, destroy"; got != want {
		t.Errorf("a binary without --full, every-step at all sizes:\n got %s\nwant %s", got, want)
	}
	if got := strings.Join(paddockArgs(OpNoopFull, "/s"), " "); got != "up --full /s" {
		t.Errorf("--full no-op: %s", got)
	}

	// The default is the binary's own, whatever the caller's environment.
	base := []string{"HOME=/root", "PADDOCK_CHECKPOINTS=final", "PADDOCK_CHECKPOINTS_X=1"}
	def := strings.Join(paddockEnv(base, []string{"PADDOCK_HOME=/h"}, ToolPaddock, "/e.jsonl"), " ")
	if def != "HOME=/root PADDOCK_CHECKPOINTS_X=1 PADDOCK_HOME=/h PADDOCK_EVENT_LOG=/e.jsonl" {
		t.Errorf("the default's environment: %s", def)
	}
	every := paddockEnv(base, nil, ToolPaddockEveryStep, "/e.jsonl")
	if every[len(every)-1] != "PADDOCK_CHECKPOINTS=every-step" || strings.Contains(strings.Join(every, " "), "=final") {
		t.Errorf("every-step's environment: %v", every)
	}
}

// Format-3 results rerendered (so format 4 now) are still the pre-issue
// binary's: the issue's quoted figures still join them.
func TestRerenderedFormat3KeepsTheQuotedFigures(t *testing.T) {
	old := readFormat3(t)
	file := filepath.Join(t.TempDir(), "results.json")
	if err := old.WriteJSON(file); err != nil {
		t.Fatal(err)
	}
	again, err := ReadResults(file)
	if err != nil {
		t.Fatal(err)
	}
	if again.UpgradedFrom != ResultsFormat {
		t.Fatalf("read back in format %d", again.UpgradedFrom)
	}
	if b := BaselineOf(again); b == nil || len(b.Quoted) != len(Issue14Quoted) {
		t.Errorf("baseline of rerendered format-3 results: %+v", b)
	}
}
