package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/model"
)

const sensitiveSpec = `variable "customer" {
  type      = string
  sensitive = true
}
variable "key" {
  type      = string
  sensitive = true
}
platform { name = "cust-${var.customer}" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" { handler = "runsc" }
tenant "a" {
  template "t" {
    image         = "r.example.com/a:1"
    runtime_class = "gvisor"
    env           = { LOG_TAG = var.key }
  }
}
`

func writeSensitiveSpec(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(sensitiveSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Every human-readable line validate prints is redacted, the success line
// included, and so are the JSON and SARIF reports.
func TestValidateRedactsEveryLine(t *testing.T) {
	dir := writeSensitiveSpec(t)
	for _, format := range []string{"text", "json", "sarif"} {
		out, code := runCommand(t, newSpecValidateCmd(), "", dir, "--format", format, "--var", "customer=globex-merger", "--var", "key=tag-7f3a9")
		if code != 0 || strings.Contains(out, "globex-merger") || strings.Contains(out, "tag-7f3a9") {
			t.Errorf("%s: exit %d, a sensitive value leaks:\n%s", format, code, out)
		}
		if format == "text" && !strings.Contains(out, "platform (sensitive value) is valid") {
			t.Errorf("text: no redacted success line:\n%s", out)
		}
	}
}

// render refuses to write sensitive values in plain text and names each
// field that would hold one; --allow-sensitive writes them, warns with the
// same list, and writes such files for their owner only.
func TestRenderRefusesSensitiveValues(t *testing.T) {
	dir := writeSensitiveSpec(t)
	vars := []string{"--var", "customer=globex-merger", "--var", "key=tag-7f3a9"}
	out, code := runCommand(t, newRenderCmd(), "", append([]string{dir}, vars...)...)
	if code != 1 || !strings.Contains(out, "tenant-a.yaml: SandboxTemplate agents-a/t spec.podTemplate.spec.containers[0].env[0].value") ||
		!strings.Contains(out, `metadata.labels["paddock.dev/platform"]`) || !strings.Contains(out, "--allow-sensitive") ||
		strings.Contains(out, "globex-merger") || strings.Contains(out, "tag-7f3a9") {
		t.Errorf("render: exit %d\n%s", code, out)
	}
	outDir := filepath.Join(t.TempDir(), "out")
	if out, code = runCommand(t, newRenderCmd(), "", append([]string{dir, "--out", outDir}, vars...)...); code != 1 {
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
	cmd.SetArgs(append([]string{dir, "--allow-sensitive"}, vars...))
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "value: tag-7f3a9") || !strings.Contains(stderr.String(), "warning: --allow-sensitive") ||
		!strings.Contains(stderr.String(), "spec.podTemplate.spec.containers[0].env[0].value") || strings.Contains(stderr.String(), "tag-7f3a9") {
		t.Errorf("--allow-sensitive: stderr\n%s", stderr.String())
	}
	if _, code := runCommand(t, newRenderCmd(), "", append([]string{dir, "--allow-sensitive", "--out", outDir}, vars...)...); code != 0 {
		t.Fatalf("render --allow-sensitive --out: exit %d", code)
	}
	for name, want := range map[string]os.FileMode{"tenant-a.yaml": 0o600, "agent-sandbox.yaml": 0o600, "kustomization.yaml": 0o644} {
		if info, err := os.Stat(filepath.Join(outDir, name)); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", name, info.Mode(), err, want)
		}
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
