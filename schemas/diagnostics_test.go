package schemas

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestWriteDiagnosticsGolden pins the rendered diagnostics of every broken
// example. After an intended change: go test ./schemas -run Golden -update
func TestWriteDiagnosticsGolden(t *testing.T) {
	for _, name := range []string{"typos", "references", "duplicates", "variables", "blocks"} {
		t.Run(name, func(t *testing.T) {
			l := NewLoader()
			_, diags := l.LoadDir(filepath.Join("../examples/invalid", name), LoadOptions{})
			var b strings.Builder
			l.WriteDiagnostics(&b, diags)
			got := b.String()

			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update if intended):\n%s", golden, got)
			}

			// Without the parsed files, the source is read from disk: same text.
			var fromDisk strings.Builder
			WriteDiagnostics(&fromDisk, nil, diags)
			if fromDisk.String() != got {
				t.Errorf("WriteDiagnostics(nil files) differs:\n%s", fromDisk.String())
			}
		})
	}
}

func TestWriteDiagnosticsShapes(t *testing.T) {
	src := []byte("tenant \"t\" {\n\ttemplate \"x\" {\n\t\timage = 42\n\t}\n}\n")
	file := &hcl.File{Bytes: src}
	files := map[string]*hcl.File{"tabs.hcl": file}
	rng := func(l1, c1, b1, l2, c2, b2 int) *hcl.Range {
		return &hcl.Range{Filename: "tabs.hcl", Start: hcl.Pos{Line: l1, Column: c1, Byte: b1}, End: hcl.Pos{Line: l2, Column: c2, Byte: b2}}
	}
	tests := []struct {
		name string
		diag *hcl.Diagnostic
		want string
	}{
		{"no subject", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Spec not found", Detail: "Give a directory."},
			"Error: Spec not found\n\nGive a directory.\n\n"},
		{"warning without detail", &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Careful"},
			"Warning: Careful\n\n"},
		{"tabs keep carets aligned", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad", Detail: "d", Subject: rng(3, 11, 39, 3, 13, 41)},
			"Error: Bad\n\n  on tabs.hcl:3:11:\n  3: \t\timage = 42\n     \t\t        ^^\n\nd\n\n"},
		{"empty range gets one caret", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad", Subject: rng(1, 1, 0, 1, 1, 0)},
			"Error: Bad\n\n  on tabs.hcl:1:1:\n  1: tenant \"t\" {\n     ^\n\n"},
		{"multi-line subject, no carets", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad", Subject: rng(2, 2, 14, 4, 3, 45)},
			"Error: Bad\n\n  on tabs.hcl:2:2:\n  2: \ttemplate \"x\" {\n  3: \t\timage = 42\n  4: \t}\n\n"},
		{"unknown file", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad", Subject: &hcl.Range{Filename: "testdata/missing.hcl", Start: hcl.Pos{Line: 9, Column: 9, Byte: 99}}},
			"Error: Bad\n\n  on testdata/missing.hcl:9:9:\n\n"},
		{"range past the end", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad", Subject: rng(9, 1, 999, 9, 2, 1000)},
			"Error: Bad\n\n  on tabs.hcl:9:1:\n\n"},
		{"long detail wraps", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad", Detail: strings.Repeat("word ", 20)},
			"Error: Bad\n\n" + strings.TrimSpace(strings.Repeat("word ", 15)) + "\n" + strings.TrimSpace(strings.Repeat("word ", 5)) + " \n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			WriteDiagnostics(&b, files, hcl.Diagnostics{tt.diag})
			if b.String() != tt.want {
				t.Errorf("got:\n%q\nwant:\n%q", b.String(), tt.want)
			}
		})
	}
}

func TestContextString(t *testing.T) {
	l := NewLoader()
	if _, diags := l.LoadDir("../examples/local", LoadOptions{}); diags.HasErrors() {
		t.Fatal(diags)
	}
	f := l.Files()[examplePath]
	src := string(f.Bytes)
	for needle, want := range map[string]string{
		`replicas = 2`:         `tenant "team-a" > warm_pool "agent"`,
		`"trap 'exit 0'`:       `tenant "team-a" > template "agent"`,
		`effect   = "NoSched`:  `runtime_class "gvisor" > toleration`,
		`name = "local-demo"`:  `platform`,
		"# Paddock walking sk": ``,
		`rule   = "PDK-603"`:   `waiver`,
	} {
		i := strings.Index(src, needle)
		if i < 0 {
			t.Fatalf("example lacks %q", needle)
		}
		if got := contextString(f, i); got != want {
			t.Errorf("context of %q = %q, want %q", needle, got, want)
		}
	}
}

// A diagnostic about a megabyte-long line prints a window of it, not the
// line twice (source and carets).
func TestSnippetsClipped(t *testing.T) {
	long := strings.Repeat("a", 900<<10)
	src := head + `tenant "t" {
  template "x" {
    image         = "python:3.12"
    runtime_class = "gvsior"  # ` + long + `
  }
}
`
	l := NewLoader()
	_, diags := l.LoadSource("spec.hcl", []byte(src), LoadOptions{Environ: []string{}})
	if !diags.HasErrors() {
		t.Fatal("want an error")
	}
	var out strings.Builder
	l.WriteDiagnostics(&out, diags)
	if out.Len() > 2000 || !strings.Contains(out.String(), `runtime_class = "gvsior"`) || !strings.Contains(out.String(), "^^^^^^^^") {
		t.Errorf("%d bytes:\n%.2000s", out.Len(), out.String())
	}
	// The subject itself megabytes long: the carets are clipped too.
	src = head + "tenant \"t\" {\n  template \"x\" {\n    image = \"python:3.12\"\n    runtime_class = \"" + long + "\"\n  }\n}\n"
	l = NewLoader()
	_, diags = l.LoadSource("spec.hcl", []byte(src), LoadOptions{Environ: []string{}})
	out.Reset()
	l.WriteDiagnostics(&out, diags)
	if !diags.HasErrors() || out.Len() > 4000 {
		t.Errorf("%d bytes:\n%.4000s", out.Len(), out.String())
	}
}
