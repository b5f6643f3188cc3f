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
