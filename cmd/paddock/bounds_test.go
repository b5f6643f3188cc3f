package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate, render and fmt refuse hostile input with a diagnostic instead of
// crashing or reading without end: a list nested 70,000 deep (a fatal stack
// overflow before), a spec that is a link to /dev/zero (read until out of
// memory before).
func TestCommandsBoundHostileInput(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "deep.hcl")
	src := "platform { name = \"p\" }\ntarget \"local\" {}\nagent_sandbox { version = \"v0.5.6\" }\nlocals {\n  a = " +
		strings.Repeat("[", 70000) + strings.Repeat("]", 70000) + "\n}\n"
	if err := os.WriteFile(deep, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.hcl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func() (string, int)
		want string
	}{
		{"validate deep", func() (string, int) { return runCommand(t, newSpecValidateCmd(), "", deep) }, "deep.hcl:5:"},
		{"render deep", func() (string, int) { return runCommand(t, newRenderCmd(), "", deep) }, "Spec nested too deeply"},
		{"fmt deep", func() (string, int) { return runCommand(t, newFmtCmd(), "", deep) }, "Spec nested too deeply"},
		{"fmt stdin deep", func() (string, int) { return runCommand(t, newFmtCmd(), src, "-") }, "Spec nested too deeply"},
		{"validate /dev/zero", func() (string, int) { return runCommand(t, newSpecValidateCmd(), "", zero) }, "Not a regular file"},
		{"render /dev/zero", func() (string, int) { return runCommand(t, newRenderCmd(), "", zero) }, "Not a regular file"},
		{"fmt /dev/zero", func() (string, int) { return runCommand(t, newFmtCmd(), "", zero) }, "Not a regular file"},
		{"fmt stdin too large", func() (string, int) {
			return runCommand(t, newFmtCmd(), "# "+strings.Repeat("x", 2<<20)+"\n", "-")
		}, "larger than 1 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, code := c.run()
			if code != 1 || !strings.Contains(out, c.want) || len(out) > 8000 {
				t.Errorf("exit %d, want 1 and %q in %d bytes:\n%.3000s", code, c.want, len(out), out)
			}
		})
	}
}
