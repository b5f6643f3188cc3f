//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
)

// fleetPlatform is the platform every stack of TestDriftFleet provisions.
// The Agent Sandbox release and the runtime class are the cluster's, and
// every stack declares them: under one platform name (the label on every
// object) they declare them alike, so no stack's up changes what another
// declared. What is each stack's own is its tenant.
const fleetPlatform = "e2e-fleet"

// fleetStack is one stack of TestDriftFleet's project and the tenant its
// config file gives it (namespace agents-<tenant>, which no other test uses).
type fleetStack struct{ name, tenant string }

func (s fleetStack) namespace() string { return model.DefaultNamespacePrefix + s.tenant }

var fleetStacks = []fleetStack{{"dev", "fleet-dev"}, {"team-a", "fleet-a"}, {"team-b", "fleet-b"}}

// fleetProject writes a Pulumi project of its own into a temporary
// directory: Pulumi.yaml, a copy of the team spec, and one stack file per
// stack of fleetStacks, each giving the spec the one platform name and its
// own tenant, a warm pool of one.
func fleetProject(t *testing.T, repo string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(p, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Pulumi.yaml", "name: "+fleetPlatform+"\nruntime: go\nstackConfigDir: stacks\n")
	spec, err := os.ReadFile(filepath.Join(repo, "examples", "team-platform", "platform.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(spec), `["sleep", "infinity"]`) {
		t.Fatalf("examples/team-platform no longer runs [\"sleep\", \"infinity\"]: update fleetProject")
	}
	write("examples/team-platform/platform.hcl", strings.Replace(string(spec), `["sleep", "infinity"]`, sleeperCommand, 1))
	for _, s := range fleetStacks {
		write("stacks/Pulumi."+s.name+".yaml", fmt.Sprintf(`# TestDriftFleet: stack %s, tenant %s.
config:
  paddock:spec: examples/team-platform
  paddock:vars:
    platform_name: %s
    tenants:
      %s:
        replicas: 1
`, s.name, s.tenant, fleetPlatform, s.tenant))
	}
	return dir
}

// fleetReport is what `paddock drift --all --format json` writes.
type fleetReport struct {
	Summary string `json:"summary"`
	Stacks  []struct {
		Stack       string        `json:"stack"`
		Status      string        `json:"status"`
		Differences int           `json:"differences"`
		Error       string        `json:"error"`
		Report      *drift.Report `json:"report"`
		Duration    time.Duration `json:"durationNanos"`
	} `json:"stacks"`
	Duration time.Duration `json:"durationNanos"`
	Parallel int           `json:"parallel"`
	Exit     int           `json:"exitCode"`
}

// fleetDrift runs `paddock drift --all ... --format json`, which must exit
// with want, and decodes its report.
func (e *env) fleetDrift(t *testing.T, want int, args ...string) (*fleetReport, run) {
	t.Helper()
	r := e.runPaddock(t, nil, append(append([]string{"drift", "--all"}, args...), "--format", "json")...)
	if r.code != want {
		t.Fatalf("paddock drift --all %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, tail(r.stderr, 30))
	}
	var rep fleetReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("drift --all JSON: %v\n%s", err, r.stdout)
	}
	if rep.Exit != want {
		t.Errorf("the report says exit %d, the command exited %d", rep.Exit, r.code)
	}
	return &rep, r
}

// statuses is each stack's status in a fleet report, by stack.
func (f *fleetReport) statuses() map[string]string {
	out := map[string]string{}
	for _, s := range f.Stacks {
		out[s.Stack] = s.Status
	}
	return out
}

// TestDriftFleet: `paddock drift --all` over a project of three stacks on the
// one local cluster, each its own tenant: clean, then, with one stack's
// default-deny NetworkPolicy opened out of band, exit 2 naming that stack
// alone (in JSON and Markdown), and clean again once `up` repaired it.
//
// The stacks share the cluster's Agent Sandbox release under one platform
// name, so every tenant object carries the same platform label: the sweep
// runs too, and its S05 must count what the other stacks of the project hold
// as held, or every stack would read as drifted.
func TestDriftFleet(t *testing.T) {
	e := live
	dir := fleetProject(t, e.repo)
	backend := "file://" + t.TempDir()
	stackArgs := func(stack string) []string {
		return []string{"--stack", stack, "--project-dir", dir, "--backend", backend}
	}
	var attempted []fleetStack
	defer func() { e.destroyFleet(t, attempted, stackArgs) }()

	for _, s := range fleetStacks {
		attempted = append(attempted, s) // before its up: a failed up leaves objects too
		r := e.runPaddock(t, nil, append([]string{"up"}, stackArgs(s.name)...)...)
		if r.code != 0 {
			t.Fatalf("paddock up --stack %s: exit %d\n%s\n%s", s.name, r.code, r.stdout, tail(r.stderr, 30))
		}
		t.Logf("paddock up --stack %s (create): %s: %s", s.name, r.took.Round(100*time.Millisecond), summary(t, r.stdout))
		if want := "stack " + s.name + " takes its spec and variables from " + filepath.Join(dir, "stacks", "Pulumi."+s.name+".yaml"); !strings.Contains(r.stderr, want) {
			t.Errorf("up did not read the stack's file (%q):\n%s", want, tail(r.stderr, 10))
		}
	}
	// Each stack made its own tenant namespace, of the one platform.
	for _, s := range fleetStacks {
		ns, err := e.kube.CoreV1().Namespaces().Get(ctxT(t, 10*time.Second), s.namespace(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("stack %s: its tenant namespace: %v", s.name, err)
		}
		if got := ns.Labels[model.PlatformLabel]; got != fleetPlatform {
			t.Errorf("namespace %s: platform label %q, want %q", s.namespace(), got, fleetPlatform)
		}
	}

	all := []string{"--project-dir", dir, "--backend", backend}
	clean := func(t *testing.T, when string) {
		t.Helper()
		rep, r := e.fleetDrift(t, 0, all...)
		t.Logf("DRIFT-TIME drift --all over %d stacks (%s): %s (the report's own %s, %d at once)", len(rep.Stacks), when, r.took.Round(10*time.Millisecond), rep.Duration.Round(10*time.Millisecond), rep.Parallel)
		if len(rep.Stacks) != len(fleetStacks) {
			t.Fatalf("%d stacks checked, want %d: %+v", len(rep.Stacks), len(fleetStacks), rep.statuses())
		}
		for _, s := range rep.Stacks {
			if s.Status != "clean" || s.Report == nil || s.Report.Checked < 30 {
				checked := 0
				if s.Report != nil {
					checked = s.Report.Checked
				}
				t.Errorf("stack %s: %s, %d resources compared (error %q)", s.Stack, s.Status, checked, s.Error)
			}
		}
		if rep.Summary != "3 stacks: 3 clean, 0 drifted, 0 could not be checked" {
			t.Errorf("summary %q", rep.Summary)
		}
	}
	t.Run("every stack clean", func(t *testing.T) { clean(t, "untouched") })
	if t.Failed() {
		return
	}

	broken := fleetStacks[1]
	t.Run("one stack broken out of band", func(t *testing.T) {
		if _, err := k8s.RunKubectlAndGetOutputE(t, e.kubectl, "patch", "networkpolicy", "default-deny", "-n", broken.namespace(), "--type=merge", "-p", `{"spec":{"ingress":[{}]}}`); err != nil {
			t.Fatal(err)
		}
		rep, r := e.fleetDrift(t, 2, all...)
		t.Logf("DRIFT-TIME drift --all over %d stacks (one drifted): %s", len(rep.Stacks), r.took.Round(10*time.Millisecond))
		if rep.Summary != "3 stacks: 2 clean, 1 drifted, 0 could not be checked" {
			t.Errorf("summary %q", rep.Summary)
		}
		for _, s := range rep.Stacks {
			if s.Stack != broken.name {
				if s.Status != "clean" || s.Differences != 0 {
					t.Errorf("stack %s, not touched: %s with %d differences: %+v", s.Stack, s.Status, s.Differences, s.Report)
				}
				continue
			}
			// Two differences: the policy's own field, and the sweep's
			// judgement of its effect (S02: ingress from anywhere).
			if s.Status != "drifted" || s.Report == nil || s.Differences != 2 {
				t.Errorf("stack %s: %s with %d differences, want drifted with 2: %+v", s.Stack, s.Status, s.Differences, s.Report)
				continue
			}
			if u := s.Report.Unmanaged; len(u) != 1 || u[0].Rule != "S02" || u[0].Namespace != broken.namespace() || u[0].Name != "default-deny" {
				t.Errorf("stack %s: sweep findings %+v, want one S02 on %s/default-deny", s.Stack, u, broken.namespace())
			}
			res := findResource(s.Report, "NetworkPolicy", broken.namespace()+"/default-deny")
			if res == nil || len(s.Report.Resources) != 1 {
				t.Errorf("stack %s: resources %+v, want only NetworkPolicy %s/default-deny", s.Stack, s.Report.Resources, broken.namespace())
				continue
			}
			if f := findField(res, "spec.ingress"); res.Change != drift.Modified || f == nil {
				t.Errorf("stack %s: NetworkPolicy default-deny %s, fields %+v; want spec.ingress modified", s.Stack, res.Change, res.Fields)
			}
		}

		md := e.runPaddock(t, nil, append([]string{"drift", "--all", "--format", "markdown"}, all...)...)
		for _, want := range []string{"## Paddock drift across 3 stacks", "| `" + broken.name + "` | ❌ drifted | 2 difference(s)", "| `dev` | ✅ clean |", "| `team-b` | ✅ clean |", broken.namespace() + "/default-deny"} {
			if !strings.Contains(md.stdout, want) {
				t.Errorf("markdown (exit %d) lacks %q:\n%s", md.code, want, md.stdout)
			}
		}
		if md.code != 2 {
			t.Errorf("markdown: exit %d, want 2", md.code)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("up repairs the stack, and the fleet is clean", func(t *testing.T) {
		r := e.runPaddock(t, nil, append([]string{"up"}, stackArgs(broken.name)...)...)
		if r.code != 0 {
			t.Fatalf("paddock up --stack %s: exit %d\n%s\n%s", broken.name, r.code, r.stdout, tail(r.stderr, 30))
		}
		t.Logf("paddock up --stack %s (repair): %s:\n%s", broken.name, r.took.Round(100*time.Millisecond), tail(r.stdout, 5))
		clean(t, "after the repair")
	})
	if t.Failed() {
		return
	}

	// Destroying one stack deletes its tenant and leaves what the others
	// hold too (the release, CRDs and all, the runtime class): their pools
	// stay served.
	t.Run("destroying one stack leaves the shared release to the others", func(t *testing.T) {
		first := fleetStacks[0]
		r := e.destroyWaiting(t, nil, []string{first.namespace()}, stackArgs(first.name)...)
		if want := "held by other stacks of the project too (team-a, team-b): they stay"; !strings.Contains(r.stdout, want) {
			t.Errorf("destroy --stack %s does not say it leaves the shared objects (%q):\n%s", first.name, want, r.stdout)
		}
		if _, err := e.dyn.Resource(crdsGVR).Get(ctxT(t, 10*time.Second), "sandboxwarmpools.extensions.agents.x-k8s.io", metav1.GetOptions{}); err != nil {
			t.Fatalf("the shared release's CRD after destroying stack %s: %v", first.name, err)
		}
		for _, s := range fleetStacks[1:] {
			eventually(t, "stack "+s.name+"'s warm pool still ready", time.Minute, func() error {
				u, err := e.dyn.Resource(warmPoolsGVR).Namespace(s.namespace()).Get(ctxT(t, 5*time.Second), "python", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if n, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas"); n < 1 {
					return fmt.Errorf("readyReplicas %d", n)
				}
				return nil
			})
		}
	})
}

// destroyFleet destroys the stacks of TestDriftFleet in order. They share
// the cluster's Agent Sandbox release: each destroy but the last leaves it
// (another stack still holds it) and the last deletes it, so every stack's
// sandboxes go while the controller still runs to release them.
func (e *env) destroyFleet(t *testing.T, stacks []fleetStack, stackArgs func(string) []string) {
	t.Helper()
	for i, s := range stacks {
		if i < len(stacks)-1 {
			// The stacks after it still hold the release: it stays.
			e.destroyWaiting(t, nil, []string{s.namespace()}, stackArgs(s.name)...)
			continue
		}
		e.destroyAndWait(t, nil, []string{s.namespace()}, stackArgs(s.name)...)
	}
}
