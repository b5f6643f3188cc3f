package bench

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func measured() *Results {
	return &Results{
		Format: ResultsFormat, Date: "2026-12-01 00:00 UTC", Machine: "test",
		Paddock:  &Build{Commit: "0123456789ab", Binary: "/x/bin/paddock", SHA256: strings.Repeat("ab", 32)},
		Versions: map[string]string{"pulumi": "v3"},
		Provision: []Sample{
			{Tool: ToolPaddockFinal, Op: OpCreate, Tenants: 1, Seconds: 12},
			{Tool: ToolKubectl, Op: OpCreate, Tenants: 1, Seconds: 6},
			{Tool: ToolKubectl, Op: OpApplyOnly, Tenants: 1, Seconds: 3},
			{Tool: ToolFloor, Op: OpCreate, Tenants: 1, Seconds: 4},
			{Tool: ToolFloor, Op: OpApplyOnly, Tenants: 1, Seconds: 1},
		},
	}
}

// A result that does not name the binary it measured is never rendered,
// whatever version a hand wrote into it.
func TestReportRefusesResultsWithoutTheirBinary(t *testing.T) {
	for name, r := range map[string]*Results{
		"no build":                  {Format: ResultsFormat, Versions: map[string]string{"paddock": "4be13a7"}},
		"no commit":                 {Format: ResultsFormat, Paddock: &Build{SHA256: "ab"}},
		"unknown commit":            {Format: ResultsFormat, Paddock: &Build{Commit: "unknown", SHA256: "ab"}},
		"no checksum of the binary": {Format: ResultsFormat, Paddock: &Build{Commit: "0123456789ab"}},
	} {
		var b bytes.Buffer
		if err := r.WriteMarkdown(&b); !errors.Is(err, ErrNoBuild) || b.Len() > 0 {
			t.Errorf("%s: WriteMarkdown = %v with %d bytes written", name, err, b.Len())
		}
		if err := r.WritePlot(filepath.Join(t.TempDir(), "p.png")); !errors.Is(err, ErrNoBuild) {
			t.Errorf("%s: WritePlot = %v", name, err)
		}
	}

	// Results of the format before: a build block added by hand is dropped.
	file := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(file, []byte(`{"format": 2, "paddock": {"commit": "4be13a7", "sha256": "ab"}, "versions": {"paddock": "4be13a7"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadResults(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Identified(); !errors.Is(err, ErrNoBuild) {
		t.Errorf("format-2 results with a hand-written build: %v", err)
	}

	var b bytes.Buffer
	if err := measured().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"Paddock 0123456789ab (`paddock version --commit` of the binary measured, sha256 abababababab)", "Like for like", "kubectl wait --for=jsonpath"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	// The apply-only columns are there beside the create-to-Ready ones.
	if !strings.Contains(md, "| kubectl apply only |") || !strings.Contains(md, "| 6.00 | 4.00 | 3.00 | 1.00 |") {
		t.Errorf("provisioning table:\n%s", md)
	}
}

// BuildOf asks the binary, and refuses one that does not know its commit.
func TestBuildOfAsksTheBinary(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := script("good", `[ "$1 $2" = "version --commit" ] && echo 0123456789ab-dirty && exit 0; exit 3`)
	b, err := BuildOf(good)
	if err != nil || b.Commit != "0123456789ab-dirty" || len(b.SHA256) != 64 || b.Binary != good {
		t.Errorf("BuildOf = %+v, %v", b, err)
	}
	old := script("old", `echo "paddock: unknown flag: --commit" >&2; exit 1`)
	if _, err := BuildOf(old); err == nil || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("a binary without --commit: %v", err)
	}
	if _, err := BuildOf(script("blank", "exit 0")); err == nil {
		t.Error("a binary that prints no commit was accepted")
	}
}

// Each section names the binary that measured it: claims carried into a
// run that measured provisioning (or the other way round) keep their own.
func TestEachSectionNamesItsBinary(t *testing.T) {
	r := measured()
	r.Claims = []ClaimsResult{{Mode: ModeWarm, Pool: "agent", Replicas: 2, Claims: 1, P50: 0.1, P95: 0.1, Max: 0.1, Seconds: []float64{0.1}}}
	r.ClaimsNodes = "real"
	r.MeasuredBy = map[string]Measured{SectionClaims: {Paddock: &Build{Commit: "fedcba987654", SHA256: "cd"}, Date: "2026-12-03 09:40 UTC"}}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	prov, claims := strings.Index(md, "## Provisioning"), strings.Index(md, "## Sandbox start through claims")
	if prov < 0 || claims < 0 {
		t.Fatalf("sections missing:\n%s", md)
	}
	if !strings.Contains(md[prov:claims], "Measured by binary 0123456789ab on 2026-12-01 00:00 UTC") {
		t.Errorf("provisioning does not fall back to the run's own binary:\n%s", md[prov:claims])
	}
	if !strings.Contains(md[claims:], "Measured by binary fedcba987654 on 2026-12-03 09:40 UTC") || strings.Contains(md[claims:], "0123456789ab") {
		t.Errorf("claims do not name their own binary:\n%s", md[claims:])
	}
}

// The sandbox start targets are judged on real nodes over enough claims
// only: kwok nodes or ten claims measure nothing of them.
func TestClaimTargets(t *testing.T) {
	claims := func(n int) []ClaimsResult {
		return []ClaimsResult{
			{Mode: ModeWarm, Claims: n, P50: 0.1, P95: 0.35},
			{Mode: ModeCold, Claims: n, P50: 2.4},
		}
	}
	verdicts := func(nodes string, n int) []string {
		r := measured()
		r.Claims, r.ClaimsNodes = claims(n), nodes
		var out []string
		for _, v := range r.judgeClaims() {
			out = append(out, v.Verdict())
		}
		return out
	}
	if got := strings.Join(verdicts("real", 100), " "); got != "yes no yes" {
		t.Errorf("real node, 100 claims: %s, want warm P50 met, warm P95 missed, cold P50 met", got)
	}
	for _, c := range []struct {
		nodes string
		n     int
	}{{"fake", 100}, {"real", 10}} {
		if got := strings.Join(verdicts(c.nodes, c.n), " "); got != "not measured not measured not measured" {
			t.Errorf("%s nodes, %d claims: %s", c.nodes, c.n, got)
		}
	}
}
