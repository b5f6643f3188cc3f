//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// initName is the platform TestInit scaffolds: its name labels the
// platform's objects and names its tenant namespace, agents-e2e-init, which
// no other test uses.
const initName = "e2e-init"

// TestInit: `paddock init` writes a platform repository that builds against
// this checkout with the module cache alone, and from inside which
// `paddock up --stack dev` provisions the local platform and
// `paddock drift --stack dev` (and the workflow's `drift --all`) find it as
// the stack says; then the standard Pulumi CLI runs the repository's program
// (pulumiCLIOnTheScaffold).
func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "platform")
	r := live.runPaddock(t, nil, "init", dir, "--replace", live.repo, "--name", initName)
	if r.code != 0 {
		t.Fatalf("paddock init: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("paddock init:\n%s", r.stdout)

	t.Run("the scaffold builds from the module cache alone", func(t *testing.T) {
		// Every module the program needs is one Paddock pins, so Paddock's
		// go.sum verifies them all without the checksum database.
		sum, err := os.ReadFile(filepath.Join(live.repo, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
			t.Fatal(err)
		}
		// Building Paddock for linux downloads only the modules linux builds
		// read; tidy walks every platform's imports (github.com/mitchellh/go-ps,
		// github.com/ebitengine/purego, ...). Fetch every module Paddock's go.mod
		// pins, from the module proxy, so a fresh machine's cache is as complete
		// as a long-used one's; only then go offline.
		if out, err := goIn(t, live.repo, []string{"GOWORK=off", "GOFLAGS=-mod=readonly"}, "mod", "download"); err != nil {
			t.Fatalf("go mod download in %s: %v\n%s", live.repo, err, out)
		}
		offline := []string{"GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local"}
		// tidy also resolves the packages the tests of dependencies import;
		// -e records what it can when one of those is not in the cache.
		// Offline there is no checksum database: a module this machine's
		// cache happens to hold (some dependency's test dependency, at a
		// version Paddock does not pin) would send tidy to sum.golang.org
		// and fail on whatever the cache held. So tidy runs without it, and
		// the modules the build reads are checked against Paddock's go.sum
		// below instead.
		out, err := goIn(t, dir, append(offline, "GOFLAGS=-mod=mod", "GOSUMDB=off"), "mod", "tidy", "-e")
		if err != nil {
			t.Fatalf("go mod tidy: %v\n%s", err, out)
		}
		for _, chain := range goErrorChains(out) {
			if !strings.Contains(chain, " tested by\n") {
				t.Errorf("go mod tidy offline lacks a module the program itself needs:\n%s", chain)
				continue
			}
			t.Logf("go mod tidy offline lacks a module only a dependency's tests use:\n%s", chain)
		}
		// readonly: the build fails if go.mod or go.sum misses anything.
		start := time.Now()
		if out, err := goIn(t, dir, append(offline, "GOFLAGS=-mod=readonly"), "build", "./..."); err != nil {
			t.Fatalf("go build ./...: %v\n%s", err, out)
		}
		t.Logf("go build ./... in the scaffold: %s", time.Since(start).Round(time.Second))
		assertBuildPinnedByPaddock(t, dir, offline)
		mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
		t.Logf("go.mod after tidy:\n%s", firstLines(string(mod), 12))
	})
	if t.Failed() {
		t.FailNow()
	}

	// The same live stack, with paddock run from inside the new repository
	// (its Pulumi.yaml is the project), its state in a backend of its own.
	in := *live
	in.repo = dir
	state := t.TempDir()
	stackArgs := []string{"--stack", "dev", "--backend", "file://" + state}
	namespace := "agents-" + initName

	r = in.runPaddock(t, nil, append([]string{"up"}, stackArgs...)...)
	if r.code != 0 {
		t.Fatalf("paddock up --stack dev: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	defer in.destroyAndWait(t, nil, []string{namespace}, stackArgs...)
	t.Logf("paddock up --stack dev (create): %s: %s", r.took, summary(t, r.stdout))
	if !strings.Contains(r.stderr, "stack dev takes its spec and variables from "+filepath.Join(dir, "stacks", "Pulumi.dev.yaml")) {
		t.Errorf("up did not read the scaffold's stack file:\n%s", tail(r.stderr, 10))
	}
	if _, err := os.Stat(filepath.Join(state, ".pulumi", "stacks", initName, "dev.json")); err != nil {
		t.Errorf("no state of project %s, stack dev: %v", initName, err)
	}
	eventually(t, "the warm pool of "+namespace+" ready", 180*time.Second, func() error {
		u, err := live.dyn.Resource(poolsGVR).Namespace(namespace).Get(ctxTimeout(5*time.Second), "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas"); ready != 2 {
			return fmt.Errorf("readyReplicas %d, want 2", ready)
		}
		return nil
	})

	rep, took := in.driftReport(t, 0, nil, stackArgs...)
	if rep.Drifted() || rep.Checked < 30 {
		t.Errorf("paddock drift --stack dev: drifted %v, %d resources compared: %+v %+v", rep.Drifted(), rep.Checked, rep.Resources, rep.Unmanaged)
	}
	t.Logf("paddock drift --stack dev: no drift, %d resources compared in %s", rep.Checked, took.Round(10*time.Millisecond))

	// What the scaffold's workflow runs, minus GitHub.
	r = in.runPaddock(t, nil, "drift", "--all", "--format", "markdown", "--backend", "file://"+state)
	if r.code != 0 || !strings.Contains(r.stdout, "| `dev` | ✅ clean |") {
		t.Errorf("paddock drift --all: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 20))
	}
	t.Logf("paddock drift --all --format markdown:\n%s", r.stdout)

	pulumiCLIOnTheScaffold(t, &in, dir, state, namespace, stackArgs)
}

// assertBuildPinnedByPaddock: every module the scaffold's build reads has
// in the scaffold's go.sum the very hash Paddock's go.sum pins for it, so
// nothing the program runs was verified only by the offline tidy.
func assertBuildPinnedByPaddock(t *testing.T, dir string, offline []string) {
	t.Helper()
	out, err := goIn(t, dir, append(offline, "GOFLAGS=-mod=readonly"), "list", "-deps",
		"-f", "{{with .Module}}{{if not .Main}}{{if not .Replace}}{{.Path}} {{.Version}}{{end}}{{end}}{{end}}", "./...")
	if err != nil {
		t.Fatalf("go list -deps in the scaffold: %v\n%s", err, out)
	}
	pinned := zipHashes(t, filepath.Join(live.repo, "go.sum"))
	scaffold := zipHashes(t, filepath.Join(dir, "go.sum"))
	modules := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" {
			modules[line] = true
		}
	}
	if len(modules) == 0 {
		t.Fatalf("go list -deps named no module the scaffold's build reads:\n%s", out)
	}
	for m := range modules {
		switch {
		case pinned[m] == "":
			t.Errorf("the scaffold's build reads %s, which Paddock's go.sum does not pin", m)
		case scaffold[m] != pinned[m]:
			t.Errorf("the scaffold's go.sum has %s %q, Paddock's %q", m, scaffold[m], pinned[m])
		}
	}
	t.Logf("the scaffold's build reads %d modules, each with Paddock's go.sum hash", len(modules))
}

// zipHashes maps "module version" to its h1: line's hash in a go.sum file
// (the module's content, not its go.mod).
func zipHashes(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && !strings.HasSuffix(f[1], "/go.mod") {
			out[f[0]+" "+f[1]] = f[2]
		}
	}
	return out
}

// goIn runs the go command in dir with extra environment.
func goIn(t *testing.T, dir string, extraEnv []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// goErrorChains are the import chains the go command reports an error at
// the end of ("go: A imports\n\tB tested by\n\t...: error").
func goErrorChains(out string) []string {
	var chains []string
	var cur []string
	flush := func() {
		if len(cur) > 1 {
			chains = append(chains, strings.Join(cur, "\n")+"\n")
		}
		cur = nil
	}
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "\t") && cur != nil:
			cur = append(cur, l)
		case strings.HasPrefix(l, "go: ") && (strings.HasSuffix(l, " imports") || strings.HasSuffix(l, " tested by")):
			flush()
			cur = []string{l}
		default:
			flush()
		}
	}
	flush()
	return chains
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}
