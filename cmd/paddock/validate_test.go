package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// run executes a command with args and returns its output and exit code.
func runCommand(t *testing.T, cmd *cobra.Command, stdin string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	code := 0
	if err != nil {
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if msg := err.Error(); msg != "" {
			out.WriteString("paddock: " + msg + "\n")
		}
	}
	return out.String(), code
}

func TestValidateCommand(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"../../examples/local"}, 0, []string{`platform "local-demo" is valid (1 tenant, 1 runtime class, target local)`, "Waivers (1):", "PDK-402"}},
		{[]string{"../../examples/gke-gvisor"}, 0, []string{`platform "agents-gvisor" is valid (2 tenants`}},
		{[]string{"../../examples/kubeconfig", "--var", "context=prod"}, 0, []string{"is valid"}},
		{[]string{"../../examples/insecure"}, 1, []string{"Error: Writable root filesystem [PDK-306]", "Errors block `paddock up`"}},
		{[]string{"../../examples/invalid/typos"}, 1, []string{"Error: Unsupported target kind", "paddock: ../../examples/invalid/typos has errors"}},
		{[]string{"../../examples/local", "--var", "nope=1"}, 1, []string{"Value for undeclared variable"}},
		{[]string{"../../examples/local", "--format", "yaml"}, 1, []string{`--format "yaml"`}},
		{[]string{"--rules"}, 0, []string{"PDK-306  error    static   H10"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, code := runCommand(t, newSpecValidateCmd(), "", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestValidateMachineFormats(t *testing.T) {
	for _, format := range []string{"json", "sarif"} {
		for dir, code := range map[string]int{"local": 0, "insecure": 1, "invalid/references": 1} {
			out, got := runCommand(t, newSpecValidateCmd(), "", "../../examples/"+dir, "--format", format)
			if got != code {
				t.Errorf("%s %s: exit %d, want %d", format, dir, got, code)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Errorf("%s %s: not one JSON document (%v):\n%s", format, dir, err, out)
			}
		}
	}
}

func TestFmtCommand(t *testing.T) {
	dir := t.TempDir()
	messy := "platform {\nname=\"x\"\n}\n"
	tidy := "platform {\n  name = \"x\"\n}\n"
	spec := filepath.Join(dir, "platform.hcl")
	vars := filepath.Join(dir, "prod.pvars.hcl")
	broken := filepath.Join(dir, "broken.hcl")
	write := func(name, s string) {
		if err := os.WriteFile(name, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(spec, messy)
	write(vars, "project=\"p\"\n")

	out, code := runCommand(t, newFmtCmd(), "", "-check", "-diff", dir)
	if code != 1 || !strings.Contains(out, "-name=\"x\"") || !strings.Contains(out, "+  name = \"x\"") || !strings.Contains(out, "prod.pvars.hcl") {
		t.Errorf("fmt -check -diff: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(spec); string(b) != messy {
		t.Error("-check wrote the file")
	}
	if out, code = runCommand(t, newFmtCmd(), "", dir); code != 0 || !strings.Contains(out, spec) {
		t.Errorf("fmt: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(spec); string(b) != tidy {
		t.Errorf("formatted:\n%s", b)
	}
	if info, _ := os.Stat(spec); info.Mode().Perm() != 0o600 {
		t.Errorf("mode changed to %v", info.Mode())
	}
	if out, code = runCommand(t, newFmtCmd(), "", "-check", dir); code != 0 || out != "" {
		t.Errorf("fmt -check on formatted files: exit %d\n%s", code, out)
	}

	write(broken, "platform {\n")
	if out, code = runCommand(t, newFmtCmd(), "", broken); code != 1 || !strings.Contains(out, "Unclosed configuration block") {
		t.Errorf("fmt of a broken file: exit %d\n%s", code, out)
	}
	if out, code = runCommand(t, newFmtCmd(), messy, "-"); code != 0 || out != tidy {
		t.Errorf("fmt -: exit %d, %q", code, out)
	}
}

func TestSchemaCommand(t *testing.T) {
	out, code := runCommand(t, newSchemaCmd(), "")
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc["$id"] == nil {
		t.Errorf("schema: exit %d\n%.200s", code, out)
	}
	// Rule references come from the registry, with the rules' titles.
	if !strings.Contains(out, "PDK-308 (Container limits missing)") || strings.Contains(out, "PDK-111") {
		t.Error("schema: resources.unbounded does not reference PDK-308 from the registry")
	}
}
