package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/paddock-platform/paddock/components/project"
	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/specload"
)

// The fleet's project grows from one size to the next, and every stack's
// config file is read the way `paddock up --stack` reads it: its own spec,
// the one platform, a tenant namespace no other stack holds.
func TestWriteFleetProjectGrows(t *testing.T) {
	dir := t.TempDir()
	added, err := WriteFleetProject(dir, 1)
	if err != nil || strings.Join(added, " ") != "fleet-01" {
		t.Fatalf("first size: added %v, %v", added, err)
	}
	added, err = WriteFleetProject(dir, 3)
	if err != nil || strings.Join(added, " ") != "fleet-02 fleet-03" {
		t.Fatalf("second size: added %v, %v (the first stack must be kept, not written again)", added, err)
	}
	stacks, err := project.Stacks(dir)
	if err != nil || strings.Join(stacks, " ") != "fleet-01 fleet-02 fleet-03" {
		t.Fatalf("project.Stacks = %v, %v", stacks, err)
	}
	proj, err := project.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if proj.Name != FleetProjectName {
		t.Errorf("project %q", proj.Name)
	}
	namespaces := map[string]string{}
	for _, stack := range stacks {
		file, err := project.StackFile(dir, stack)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := workspace.LoadProjectStack(nil, proj, file)
		if err != nil {
			t.Fatal(err)
		}
		values := map[string]project.Value{}
		for k, v := range ps.Config {
			s, err := v.Value(nil)
			if err != nil {
				t.Fatal(err)
			}
			values[k.String()] = project.Value{Value: s, Secret: v.Secure()}
		}
		c, err := project.Parse(values)
		if err != nil {
			t.Fatalf("%s: %v", stack, err)
		}
		p, err := specload.Load(c.SpecDir(dir), c.SpecOptions(dir), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", stack, err)
		}
		if p.Name != FleetPlatform || len(p.Tenants) != 1 {
			t.Fatalf("%s: platform %q with %d tenants", stack, p.Name, len(p.Tenants))
		}
		ns := p.Tenants[0].Namespace
		if other, ok := namespaces[ns]; ok {
			t.Errorf("stacks %s and %s both hold namespace %s", other, stack, ns)
		}
		namespaces[ns] = stack
	}
}

// ParseFleet reads what `drift --all --format json` writes.
func TestParseFleet(t *testing.T) {
	f := &drift.Fleet{Parallel: 4, Duration: 3 * time.Second, Stacks: []drift.FleetStack{
		{Stack: "a", Report: &drift.Report{Stack: "a", Checked: 47}},
		{Stack: "b", Report: &drift.Report{Stack: "b", Checked: 47, Unmanaged: []drift.Finding{{Rule: drift.RuleOrphan, Kind: "Namespace", Name: "agents-t0000"}}}},
		{Stack: "c", Error: "the stack's state cannot be read\nsecond line"},
	}}
	var b bytes.Buffer
	if err := f.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	o, err := ParseFleet(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if o.Stacks != 3 || o.Clean != 1 || o.Drifted != 1 || o.Errors != 1 || o.Resources != 94 || o.Parallel != 4 || o.Exit != 1 {
		t.Errorf("outcome %+v", o)
	}
	if len(o.Failed) != 1 || o.Failed[0] != "c: the stack's state cannot be read …" {
		t.Errorf("failed %q", o.Failed)
	}
	// A single stack's report is not a fleet's.
	one, _ := json.Marshal(&drift.Report{Stack: "a", Checked: 47})
	if _, err := ParseFleet(one); err == nil {
		t.Error("a single stack's report was taken for drift --all's")
	}
	if _, err := ParseFleet([]byte("paddock drift --all: 1 stacks")); err == nil {
		t.Error("text taken for JSON")
	}
}

func fleetRuns() []FleetRun {
	return []FleetRun{
		{Stacks: 1, Sweep: true, Seconds: 2, Runs: []float64{2.1, 2, 1.9}, Parallel: 4, Resources: 47, Clean: 1},
		{Stacks: 1, Sweep: false, Seconds: 1, Runs: []float64{1, 1, 1}, Parallel: 4, Resources: 47, Clean: 1},
		{Stacks: 3, Sweep: true, Seconds: 4, Runs: []float64{4, 4, 4}, Parallel: 4, Resources: 141, Drifted: 3},
		{Stacks: 3, Sweep: false, Seconds: 1.5, Runs: []float64{1.5, 1.5, 1.5}, Parallel: 4, Resources: 141, Clean: 3},
		{Stacks: 10, Sweep: true, Seconds: 11, Runs: []float64{11, 11, 11}, Parallel: 4, Resources: 470, Drifted: 10, TreePeakRSS: 300 << 20, LoadStart: []float64{1.5, 1.25, 1}},
		{Stacks: 10, Sweep: false, Seconds: 5, Runs: []float64{5, 5, 5}, Parallel: 4, Resources: 470, Clean: 10, LoadStart: []float64{9, 9, 9}, LoadEnd: []float64{2.5, 2, 1.75}},
	}
}

func TestFleetGrowth(t *testing.T) {
	got := FleetGrowth(fleetRuns(), true)
	// 2, 4, 11 s at 1, 3, 10 stacks: 1 s a stack, a line.
	for _, want := range []string{"1.00 s + 1.00 s × stacks", "about linear (R² 1.000)", "from 1 stack to 10 stacks", "the time per stack falls (2.00 s → 1.10 s)"} {
		if !strings.Contains(got, want) {
			t.Errorf("growth with the sweep %q lacks %q", got, want)
		}
	}
	if got := FleetGrowth(fleetRuns()[:2], true); !strings.Contains(got, "one size measured (1 stack)") {
		t.Errorf("one size: %q", got)
	}
	if got := FleetGrowth(nil, false); got != "not measured" {
		t.Errorf("nothing: %q", got)
	}
	// Flat, then steep: a knee no line fits.
	curved := []FleetRun{{Stacks: 1, Seconds: 1}, {Stacks: 3, Seconds: 1.5}, {Stacks: 5, Seconds: 3}, {Stacks: 10, Seconds: 30}}
	if got := FleetGrowth(curved, false); !strings.Contains(got, "not a straight line (R² 0.86)") || !strings.Contains(got, "rises") {
		t.Errorf("quadratic: %q", got)
	}
}

// The report has a section on drift --all: a row a size, seconds a stack,
// and how the time grows.
func TestReportFleetSection(t *testing.T) {
	r := measured()
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Fleet drift") {
		t.Errorf("a fleet section without fleet figures:\n%s", b.String())
	}
	r.Fleet = fleetRuns()
	b.Reset()
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"## Fleet drift (`paddock drift --all`)",
		"up to 4 at once, run 3 times at each size",
		"| 1 | 47 | 2.00 | 2.00 | 1 / 0 | 1.00 | 1.00 | – | – |",
		// The load before the size's first run (with the sweep) and after
		// its last (--no-sweep).
		"| 10 | 470 | 11.00 | 1.10 | 0 / 10 | 5.00 | 0.50 | 300 | 1.50, 1.25, 1.00 → 2.50, 2.00, 1.75 |",
		"- `drift --all`: 1.00 s + 1.00 s × stacks",
		"- `drift --all --no-sweep`: ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the fleet section lacks %q:\n%s", want, md)
		}
	}
}

// A run without -fleet keeps the figures of the results it replaces, and
// says so; a run that measured the fleet keeps its own.
func TestCarryFleet(t *testing.T) {
	old := measured()
	old.Fleet = fleetRuns()
	res := measured()
	res.Paddock = &Build{Commit: "fedcba987654", SHA256: "cd"}
	if !CarryFleet(res, old) || len(res.Fleet) != len(old.Fleet) {
		t.Fatalf("not carried: %+v", res.Fleet)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "carried over from binary 0123456789ab (2026-12-01 00:00 UTC)") {
		t.Errorf("notes %q", res.Notes)
	}
	if m := res.MeasuredOf(SectionFleet); m.Paddock.Commit != "0123456789ab" || res.MeasuredOf(SectionValidate).Paddock.Commit != "fedcba987654" {
		t.Errorf("measured by: fleet %+v, the rest %+v", m, res.MeasuredOf(SectionValidate))
	}
	// Carried on once more, it still names the binary that measured it.
	res.Fleet, res.Notes = nil, nil
	again := measured()
	again.Paddock = &Build{Commit: "aaaaaaaaaaaa", SHA256: "ef"}
	prev := measured()
	prev.Paddock, prev.Fleet, prev.MeasuredBy = &Build{Commit: "fedcba987654", SHA256: "cd"}, old.Fleet, map[string]Measured{SectionFleet: {Paddock: old.Paddock, Date: old.Date}}
	if !CarryFleet(again, prev) || again.MeasuredOf(SectionFleet).Paddock.Commit != "0123456789ab" {
		t.Errorf("carried twice: %+v", again.MeasuredOf(SectionFleet))
	}
	var md bytes.Buffer
	if err := again.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Fleet drift (`paddock drift --all`)\n\nMeasured by binary 0123456789ab on 2026-12-01 00:00 UTC.") {
		t.Errorf("the fleet section does not name who measured it:\n%s", md.String())
	}

	own := measured()
	own.Fleet = fleetRuns()[:2]
	if CarryFleet(own, old) || len(own.Fleet) != 2 || len(own.Notes) != 0 {
		t.Errorf("this run's own figures replaced: %+v %q", own.Fleet, own.Notes)
	}
	// Figures of results that do not name their binary are not carried.
	anon := measured()
	anon.Paddock, anon.Fleet = nil, fleetRuns()
	if next := measured(); CarryFleet(next, anon) || next.Fleet != nil {
		t.Errorf("carried the figures of an unknown binary")
	}
	if next := measured(); CarryFleet(next, nil) {
		t.Error("carried from no results")
	}

	// And through results.json.
	file := filepath.Join(t.TempDir(), "results.json")
	if err := old.WriteJSON(file); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(file)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := back.FindFleet(10, false); !ok || f.Seconds != 5 || f.Clean != 10 || len(f.Runs) != 3 {
		t.Errorf("read back: %+v %v", f, ok)
	}
	noFleet := measured()
	if err := noFleet.WriteJSON(file); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(file); strings.Contains(string(raw), `"fleet"`) {
		t.Errorf("results without fleet figures write a fleet field:\n%s", raw)
	}
}
