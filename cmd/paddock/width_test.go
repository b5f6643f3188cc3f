package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/paddock-platform/paddock/internal/termtext"
)

// widestLine is the widest line of out, in characters, and the line.
func widestLine(out string) (int, string) {
	n, widest := 0, ""
	for _, line := range strings.Split(out, "\n") {
		if w := utf8.RuneCountInString(line); w > n {
			n, widest = w, line
		}
	}
	return n, widest
}

// What validate prints for people fits a terminal on every example spec,
// the rule list included.
func TestValidateOutputFitsTheTerminal(t *testing.T) {
	for _, args := range [][]string{
		{"../../examples/local"}, {"../../examples/insecure"}, {"../../examples/gke-gvisor"}, {"../../examples/gke-kata"},
		{"../../examples/kubeconfig", "--var", "context=prod"}, {"../../examples/invalid/typos"}, {"--rules"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, _ := runCommand(t, newSpecValidateCmd(), "", args...)
			if n, line := widestLine(out); n > termtext.Width {
				t.Errorf("a line of %d characters (at most %d):\n%s", n, termtext.Width, line)
			}
		})
	}
}

// On a spec whose policy errors block it, verify, drift and status print the
// whole policy report before refusing: it fits a terminal too. (Their reports
// of a live platform are measured on examples/local by the e2e suite's
// TestLocalPlatform.)
func TestRefusedCommandsFitTheTerminal(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	for _, args := range [][]string{
		{"verify", "../../examples/insecure"},
		{"drift", "../../examples/insecure"},
		{"status", "../../examples/insecure"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			stdout, stderr, code := runSplit(t, args...)
			if code == 0 || !strings.Contains(stderr, "Errors block `paddock up`") {
				t.Fatalf("exit %d without the policy report: the test no longer reads what it means to:\n%s", code, stderr)
			}
			if n, line := widestLine(stdout + stderr); n > termtext.Width {
				t.Errorf("a line of %d characters (at most %d):\n%s", n, termtext.Width, line)
			}
		})
	}
}
