package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

// sensitiveSpec holds a sensitive value in a plain env value only: render
// refuses to write it in plain text, validate has nothing against it.
const sensitiveSpec = `variable "customer" {
  type      = string
  sensitive = true
}
variable "key" {
  type      = string
  sensitive = true
}
platform { name = "cust" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" { handler = "runsc" }
tenant "a" {
  template "t" {
    image         = "r.example.com/a:1"
    runtime_class = "gvisor"
    env           = { LOG_TAG = var.key, CUSTOMER = var.customer }
  }
}
`

// sensitiveNameSpec names the platform after a sensitive value: the name
// labels every object, which no redaction can hide (PDK-610).
var sensitiveNameSpec = strings.Replace(sensitiveSpec, `platform { name = "cust" }`, `platform { name = "cust-${lower(var.customer)}" }`, 1)

// sensitiveVars are the values of the specs' sensitive variables.
var sensitiveVars = []string{"--var", "customer=Globex-Merger", "--var", "key=tag-7f3a9"}

func writeSpec(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// leaks reports whether out holds a spelling of a sensitive value.
func leaks(out string) bool {
	return strings.Contains(strings.ToLower(out), "globex") || strings.Contains(out, "tag-7f3a9")
}

// Every line validate prints is redacted, and so are the JSON and SARIF
// reports; a sensitive value in a name is an error at the argument that put
// it there, which names the rule and never the value.
func TestValidateRedactsEveryLine(t *testing.T) {
	for _, format := range []string{"text", "json", "sarif"} {
		out, code := runCommand(t, newSpecValidateCmd(), "", append([]string{writeSpec(t, sensitiveSpec), "--format", format}, sensitiveVars...)...)
		if code != 0 || leaks(out) {
			t.Errorf("%s: exit %d, or a sensitive value leaks:\n%s", format, code, out)
		}

		dir := writeSpec(t, sensitiveNameSpec)
		out, code = runCommand(t, newSpecValidateCmd(), "", append([]string{dir, "--format", format}, sensitiveVars...)...)
		if code != 1 || leaks(out) || !strings.Contains(out, "PDK-610") {
			t.Errorf("%s, sensitive name: exit %d, want 1 and PDK-610 without the value:\n%s", format, code, out)
		}
		at := filepath.Join(dir, "platform.hcl") + ":9:12"
		switch format {
		case "text":
			if !strings.Contains(out, "Error: Sensitive value in a name or label [PDK-610]") || !strings.Contains(out, "on "+at+", platform:") ||
				!strings.Contains(out, "PDK-610 errors cannot be waived") {
				t.Errorf("text, sensitive name: no error at %s:\n%s", at, out)
			}
		case "json":
			if !strings.Contains(out, `"line": 9`) || !strings.Contains(out, `"column": 12`) {
				t.Errorf("json, sensitive name: no location 9:12:\n%s", out)
			}
		}
	}
}

// render refuses to write sensitive values in plain text and names each
// field that would hold one; --allow-sensitive writes them, warns with the
// same list, and writes such files for their owner only. A sensitive value
// in a name or label is refused before that, with or without the flag.
func TestRenderRefusesSensitiveValues(t *testing.T) {
	dir := writeSpec(t, sensitiveSpec)
	out, code := runCommand(t, newRenderCmd(), "", append([]string{dir}, sensitiveVars...)...)
	if code != 1 || !strings.Contains(out, "tenant-a.yaml: SandboxTemplate agents-a/t spec.podTemplate.spec.containers[0].env[0].value") ||
		!strings.Contains(out, "spec.podTemplate.spec.containers[0].env[1].value") || !strings.Contains(out, "--allow-sensitive") || leaks(out) {
		t.Errorf("render: exit %d\n%s", code, out)
	}
	outDir := filepath.Join(t.TempDir(), "out")
	if out, code = runCommand(t, newRenderCmd(), "", append([]string{dir, "--out", outDir}, sensitiveVars...)...); code != 1 {
		t.Errorf("render --out: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(outDir); err == nil {
		t.Error("render --out wrote files despite refusing")
	}

	// Allowed: the values are written, the warning names every place.
	cmd := newRenderCmd()
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(append([]string{dir, "--allow-sensitive"}, sensitiveVars...))
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "value: tag-7f3a9") || !strings.Contains(stderr.String(), "warning: --allow-sensitive") ||
		!strings.Contains(stderr.String(), "spec.podTemplate.spec.containers[0].env[0].value") || leaks(stderr.String()) {
		t.Errorf("--allow-sensitive: stderr\n%s", stderr.String())
	}
	if _, code := runCommand(t, newRenderCmd(), "", append([]string{dir, "--allow-sensitive", "--out", outDir}, sensitiveVars...)...); code != 0 {
		t.Fatalf("render --allow-sensitive --out: exit %d", code)
	}
	for name, want := range map[string]os.FileMode{"tenant-a.yaml": 0o600, "agent-sandbox.yaml": 0o644, "kustomization.yaml": 0o644} {
		if info, err := os.Stat(filepath.Join(outDir, name)); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", name, info.Mode(), err, want)
		}
	}

	// A sensitive name: policy refuses it, whatever the flags, and nothing
	// is written.
	dir = writeSpec(t, sensitiveNameSpec)
	nameDir := filepath.Join(t.TempDir(), "out")
	for _, flags := range [][]string{nil, {"--allow-sensitive"}, {"--allow-sensitive", "--out", nameDir}} {
		out, code := runCommand(t, newRenderCmd(), "", append(append([]string{dir}, flags...), sensitiveVars...)...)
		if code != 1 || !strings.Contains(out, "[PDK-610]") || leaks(out) {
			t.Errorf("render %v of a sensitive name: exit %d\n%s", flags, code, out)
		}
	}
	if _, err := os.Stat(nameDir); err == nil {
		t.Error("render --out wrote files of a sensitive name")
	}
}

// The writer every command prints through masks the sensitive values of
// the platforms loaded, even when a value is split between two writes.
func TestRedactingWriter(t *testing.T) {
	r := &redactor{}
	p := &model.Platform{}
	p.MarkSensitive("globex-merger")
	r.add(p)
	var b bytes.Buffer
	w := newRedactingWriter(&b, r)
	for _, s := range []string{"paddock up: platform \"cust-glo", "bex-merger\", stack \"dev\"\n", "paddock: cust-globex-merger is gone"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); strings.Contains(got, "globex") || !strings.Contains(got, `platform "cust-(sensitive value)", stack "dev"`) {
		t.Errorf("%q", got)
	}
	if unredacted(w) != &b {
		t.Error("unredacted does not give the writer underneath")
	}
}
