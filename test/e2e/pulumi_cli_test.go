//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// pulumiCLI runs the pinned Pulumi CLI in a Pulumi project the way a
// platform team with a standard install would: the project's Pulumi.yaml
// (runtime go) and stack file, the Go language host on PATH building the
// program, the state backend and passphrase `paddock up` used. The Go build
// is offline: the project builds from the module cache alone.
type pulumiCLI struct {
	cli, dir, stack string
	env             []string
}

// newPulumiCLI: passphrase is the PULUMI_CONFIG_PASSPHRASE... variable the
// stack's secrets were made with.
func newPulumiCLI(t *testing.T, e *env, dir, stack, backend, passphrase string) pulumiCLI {
	t.Helper()
	for _, b := range []string{"pulumi", "pulumi-language-go"} {
		if _, err := os.Stat(filepath.Join(e.home, "bin", b)); err != nil {
			t.Fatalf("%s is not built (make tools-test builds it): %v", b, err)
		}
	}
	tmp := filepath.Join(e.home, "tmp")
	_ = os.MkdirAll(tmp, 0o700)
	env := append(os.Environ(),
		"PATH="+filepath.Join(e.home, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PADDOCK_HOME="+e.home, // the program finds the local cluster through it
		"PULUMI_HOME="+filepath.Join(e.home, "pulumi"),
		"PULUMI_BACKEND_URL="+backend,
		passphrase,
		"PULUMI_SKIP_UPDATE_CHECK=true",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true",
		"PULUMI_K8S_ENABLE_PATCH_FORCE=true",
		"TMPDIR="+tmp,
		"GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly",
	)
	return pulumiCLI{cli: filepath.Join(e.home, "bin", "pulumi"), dir: dir, stack: stack, env: env}
}

// run runs `pulumi ARGS --stack STACK --non-interactive` and returns its
// output and whether it succeeded.
func (p pulumiCLI) run(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(p.cli, append(args, "--stack", p.stack, "--non-interactive", "--color", "never")...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("pulumi %s --stack %s: %s, %v", strings.Join(args, " "), p.stack, time.Since(start).Round(100*time.Millisecond), err)
	return string(out), err == nil
}

// copyModuleSource copies every file git tracks in repo into dir, except
// those dir already has: a project copy (teamProject) becomes a module the
// language host can build.
func copyModuleSource(t *testing.T, repo, dir string) {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", repo, err)
	}
	for _, p := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		dst := filepath.Join(dir, p)
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repo, p))
		if err != nil {
			continue // tracked but gone from this checkout
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pulumiChangeLine is a line of the "Resources:" block of a pulumi preview/up/refresh/destroy.
var pulumiChangeLine = regexp.MustCompile(`(?m)^\s+([+~-]|\+-)?\s*(\d+) (to create|to update|to delete|to replace|created|updated|deleted|replaced|unchanged|changes?)\b.*$`)

func pulumiResources(out string) string {
	var lines []string
	for _, m := range pulumiChangeLine.FindAllString(out, -1) {
		lines = append(lines, strings.TrimSpace(m))
	}
	return strings.Join(lines, "; ")
}

// pulumiCLIOnTheScaffold: after `paddock up --stack dev`, the standard CLI
// (pinned, with the pinned Go language host) previews no change; a spec
// change applied by `pulumi up` is one `paddock preview` then sees as done
// and `paddock drift` finds clean; `pulumi refresh` finds the cluster as the
// state says; `pulumi destroy` removes the platform. Run by TestInit.
func pulumiCLIOnTheScaffold(t *testing.T, in *env, dir, state, namespace string, stackArgs []string) {
	p := newPulumiCLI(t, live, dir, "dev", "file://"+state, "PULUMI_CONFIG_PASSPHRASE_FILE="+filepath.Join(live.home, "secrets", "passphrase"))

	t.Run("pulumi preview after paddock up changes nothing", func(t *testing.T) {
		out, ok := p.run(t, "preview", "--expect-no-changes")
		if !ok || !strings.Contains(out, "unchanged") {
			t.Fatalf("pulumi preview --expect-no-changes after paddock up:\n%s", tail(out, 40))
		}
		t.Logf("pulumi preview: %s", pulumiResources(out))
	})

	t.Run("a change applied by pulumi up is the graph paddock would make", func(t *testing.T) {
		spec := filepath.Join(dir, "spec", "platform.hcl") // the scaffold's paddock:spec
		b, err := os.ReadFile(spec)
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(string(b), "    replicas = 2\n", "    replicas = 1\n", 1)
		if changed == string(b) {
			t.Fatalf("the scaffold's spec has no warm pool `replicas = 2` to change:\n%s", b)
		}
		if err := os.WriteFile(spec, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		out, ok := p.run(t, "up", "--yes", "--skip-preview")
		if !ok || !regexp.MustCompile(`(?m)^\s+~ 1 updated`).MatchString(out) {
			t.Fatalf("pulumi up of replicas 2 -> 1: want one update:\n%s", tail(out, 40))
		}
		t.Logf("pulumi up: %s", pulumiResources(out))
		eventually(t, "the warm pool of "+namespace+" at 1 replica", 120*time.Second, func() error {
			u, err := live.dyn.Resource(poolsGVR).Namespace(namespace).Get(ctxTimeout(5*time.Second), "agent", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); r != 1 {
				return fmt.Errorf("spec.replicas %d, want 1", r)
			}
			return nil
		})
		pr := in.runPaddock(t, nil, append([]string{"preview"}, stackArgs...)...)
		m := regexp.MustCompile(`(?m)^paddock preview: (.*) in [0-9.]+s$`).FindStringSubmatch(pr.stdout)
		if pr.code != 0 || m == nil || regexp.MustCompile(`create|update|delete|replace`).MatchString(m[1]) {
			t.Fatalf("paddock preview --stack dev after pulumi up: exit %d, want no change:\n%s\n%s", pr.code, pr.stdout, tail(pr.stderr, 20))
		}
		t.Logf("paddock preview after pulumi up: %s", m[1])
		rep, _ := in.driftReport(t, 0, nil, stackArgs...)
		if rep.Drifted() {
			t.Fatalf("paddock drift --stack dev after pulumi up: %+v %+v", rep.Resources, rep.Unmanaged)
		}
	})

	t.Run("pulumi refresh finds the cluster as the state says", func(t *testing.T) {
		out, ok := p.run(t, "refresh", "--yes", "--expect-no-changes")
		if !ok {
			t.Fatalf("pulumi refresh --expect-no-changes:\n%s", tail(out, 40))
		}
		t.Logf("pulumi refresh: %s", pulumiResources(out))
	})

	t.Run("pulumi destroy removes the platform", func(t *testing.T) {
		out, ok := p.run(t, "destroy", "--yes", "--skip-preview")
		if !ok || !regexp.MustCompile(`(?m)^\s+- \d+ deleted`).MatchString(out) {
			t.Fatalf("pulumi destroy:\n%s", tail(out, 40))
		}
		t.Logf("pulumi destroy: %s", pulumiResources(out))
		eventually(t, "namespace "+namespace+" gone", 180*time.Second, func() error {
			_, err := live.kube.CoreV1().Namespaces().Get(ctxTimeout(5*time.Second), namespace, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("namespace %s still exists (%v)", namespace, err)
		})
		out, ok = p.run(t, "preview", "--expect-no-changes", "--refresh")
		if ok || !strings.Contains(out, "to create") {
			t.Fatalf("a preview after pulumi destroy should want to create the platform again:\n%s", tail(out, 30))
		}
	})
}
