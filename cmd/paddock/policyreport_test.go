package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// runSplit executes a subcommand of the root with args, keeping stdout and
// stderr apart (the policy report goes to stderr).
func runSplit(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		errOut.WriteString("paddock: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), code
}

// policyLines are the lines of out that belong to a policy report.
func policyLines(out string) (summary []string, findings int, waiverBlock bool) {
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "policy: "):
			summary = append(summary, line)
		case strings.HasPrefix(line, "Note: "), strings.HasPrefix(line, "Warning: "), strings.HasPrefix(line, "Error: "), strings.HasPrefix(line, "Waived: "):
			findings++
		case strings.HasPrefix(line, "Waivers ("):
			waiverBlock = true
		}
	}
	return summary, findings, waiverBlock
}

// The whole report (examples/local: a PDK-402 note, a waived PDK-603 and its
// waiver) is shown where a decision is made from it; every other command
// shows one line naming the counts and where to read the rest. None of these
// reach a cluster: with an empty PADDOCK_HOME they stop after the spec is
// loaded (no local cluster, no Pulumi), which is after the report.
func TestPolicyReportWholeOnlyWhereADecisionIsMade(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	const spec = "../../examples/local"
	const oneLine = "policy: 0 errors, 1 note, 1 waiver — `paddock validate ../../examples/local` for details"

	for _, args := range [][]string{
		{"validate", spec},
		{"preview", spec},
		{"up", spec},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			stdout, stderr, _ := runSplit(t, args...)
			out := stdout + stderr
			summary, findings, waivers := policyLines(out)
			if findings != 2 || !waivers || !strings.Contains(out, "[PDK-402]") || !strings.Contains(out, "PDK-603  whole platform") {
				t.Errorf("want the whole report (the PDK-402 note, the waived PDK-603, the waiver block):\n%s", out)
			}
			if len(summary) != 1 || !strings.HasPrefix(summary[0], "policy: 0 errors, 0 warnings, 1 note; 1 finding waived by 1 waiver") {
				t.Errorf("want the report's own summary line once, got %q:\n%s", summary, out)
			}
		})
	}

	for _, args := range [][]string{
		{"render", spec},
		{"status", spec},
		{"drift", spec},
		{"drift", spec, "--format", "json"},
		{"verify", spec},
		{"verify", spec, "--format", "json"},
		{"destroy", spec},
		{"cancel", spec},
		{"state", "backups", spec},
		{"bench", "claims", spec},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			stdout, stderr, _ := runSplit(t, args...)
			summary, findings, waivers := policyLines(stdout + stderr)
			if findings != 0 || waivers || strings.Contains(stdout+stderr, "PDK-") {
				t.Errorf("the report is shown in full:\n%s%s", stdout, stderr)
			}
			if len(summary) != 1 || summary[0] != oneLine {
				t.Errorf("want the one line\n  %s\ngot %q:\n%s%s", oneLine, summary, stdout, stderr)
			}
			if strings.Contains(stdout, "policy:") {
				t.Errorf("the policy line went to stdout, where machine output goes:\n%s", stdout)
			}
		})
	}
}

// Errors block every command, so every command shows them in full, with the
// rest of the report: status is not quiet about a spec that cannot be applied.
func TestPolicyErrorsShownInFullEverywhere(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	for _, args := range [][]string{
		{"status", "../../examples/insecure"},
		{"render", "../../examples/insecure"},
		{"verify", "../../examples/insecure", "--format", "json"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			stdout, stderr, code := runSplit(t, args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, want := range []string{
				"Error: Writable root filesystem [PDK-306]",
				"Warning: ",
				"Waivers (5):",
				"Errors block `paddock up`",
				"nothing was applied: policy errors block it",
			} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stderr, "for details") {
				t.Errorf("a blocked spec got the one-line summary:\n%s", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout: %q", stdout)
			}
		})
	}
}

// The one line names a command that shows the whole report for the same spec
// and variables, never a variable's value.
func TestPolicyDetailsCommand(t *testing.T) {
	tests := []struct {
		f             specFlags
		dir           string
		fromStackFile bool
		want          string
	}{
		{specFlags{}, ".", false, "paddock validate"},
		{specFlags{}, "examples/local", false, "paddock validate examples/local"},
		{specFlags{}, "my specs/prod", false, "paddock validate 'my specs/prod'"},
		{specFlags{varFiles: []string{"prod.pvars.hcl"}, vars: []string{"project=secret-project", "region=x"}}, "specs/prod", false,
			"paddock validate specs/prod --var-file prod.pvars.hcl --var project=... --var region=..."},
		{specFlags{stack: "local-demo"}, "examples/local", false, "paddock validate examples/local"},
		{specFlags{stack: "team-a"}, "/repo/examples/team-platform", true, "paddock preview --stack team-a"},
		{specFlags{stack: "team-a", projectDir: "/repo", backend: "s3://state"}, "/repo/examples/team-platform", true,
			"paddock preview --stack team-a --project-dir /repo --backend s3://state"},
	}
	for _, tt := range tests {
		if got := tt.f.policyDetailsCommand(tt.dir, tt.fromStackFile); got != tt.want {
			t.Errorf("%+v %q: %q, want %q", tt.f, tt.dir, got, tt.want)
		}
	}
	if got := shellWord("it's"); got != `'it'\''s'` {
		t.Errorf("shellWord: %s", got)
	}
}
