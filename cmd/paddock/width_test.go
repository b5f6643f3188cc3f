package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/model"
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

// status's summary and `local status` wrap long names, images and paths
// under their label instead of running past the terminal (seen live: a
// tenant line of 102 columns, the real node's images on one of 136).
func TestStatusAndLocalStatusFitTheTerminal(t *testing.T) {
	p := &model.Platform{
		Name:         "local-demo",
		Target:       model.Target{Kind: model.TargetKubeconfig, Kubeconfig: "/home/someone/.kube/config"},
		AgentSandbox: model.AgentSandboxRelease{Version: "v0.5.6"},
		Tenants: []model.Tenant{{
			Name: "team-a", Namespace: "agents-team-a-with-a-long-namespace-name",
			Templates: []model.Template{{Name: "python", Image: "europe-west1-docker.pkg.dev/some-project/agents/python-runtime@sha256:" + strings.Repeat("ab", 32), RuntimeClass: "gvisor"}},
			WarmPools: []model.WarmPool{{Name: "python", Template: "python", Replicas: 2}},
		}},
	}
	var out bytes.Buffer
	printSummary(&out, p, "examples/local", nil)
	if n, line := widestLine(out.String()); n > termtext.Width {
		t.Errorf("status: a line of %d characters (at most %d):\n%s", n, termtext.Width, line)
	}
	if !strings.Contains(out.String(), "default-deny egress, DNS only") {
		t.Errorf("status lost the tenant's fence when wrapped:\n%s", out.String())
	}

	s := &localcluster.Status{
		Info: localcluster.Info{Name: "paddock", Dir: "/tmp/paddock-e2e-3692166760/local",
			Kubeconfig: "/tmp/paddock-e2e-3692166760/local/kubeconfig", Context: "paddock"},
		Exists: true, Complete: true,
		APIServer: localcluster.APIServerStatus{URL: "https://127.0.0.1:28857", Ready: true},
		Nodes: []localcluster.NodeStatus{{Name: "paddock-node", Ready: true, Real: true, Images: []string{
			"localhost/paddock/gateway:0123456789ab", "localhost/paddock/coredns:v1.15.0", "localhost/paddock/pause:v1", "localhost/paddock/busybox:v1"}}},
	}
	out.Reset()
	printLocalStatus(&out, s)
	if n, line := widestLine(out.String()); n > termtext.Width {
		t.Errorf("local status: a line of %d characters (at most %d):\n%s", n, termtext.Width, line)
	}
	if !strings.Contains(out.String(), "localhost/paddock/busybox:v1") {
		t.Errorf("local status lost an image when wrapped:\n%s", out.String())
	}
}

// A long command continues on the next line with a backslash, so it still
// pastes as one command; a short one stays on one line.
func TestCommandLinesContinueWithABackslash(t *testing.T) {
	short := commandLines("  ", "kubectl get pods -n agents-team-a")
	if short != "  kubectl get pods -n agents-team-a\n" {
		t.Errorf("short command: %q", short)
	}
	long := commandLines("  ", "kubectl get sandboxtemplates,sandboxwarmpools,sandboxes,pods -n "+strings.Repeat("n", 63))
	lines := strings.Split(strings.TrimSuffix(long, "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " \\") || !strings.HasPrefix(lines[1], "      n") {
		t.Errorf("long command:\n%s", long)
	}
	if n, line := widestLine(long); n > termtext.Width {
		t.Errorf("a line of %d characters:\n%s", n, line)
	}
	if got := strings.Join(strings.Fields(strings.ReplaceAll(long, "\\\n", "")), " "); got != strings.Join(strings.Fields("kubectl get sandboxtemplates,sandboxwarmpools,sandboxes,pods -n "+strings.Repeat("n", 63)), " ") {
		t.Errorf("the command changed when laid out: %q", got)
	}
}
