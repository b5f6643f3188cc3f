//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/pools"
	"github.com/paddock-platform/paddock/internal/verify"
)

// The rollout platform: one tenant with one warm pool of two.
const (
	rolloutNS     = "agents-rollout"
	rolloutPool   = "agent"
	rolloutReason = "Sessions warm a large cache at start; stale sandboxes drain within the hour."
)

// rolloutSpec is the rollout platform with the template at revision
// (an environment variable its sandboxes carry) and the pool's update
// strategy ("" for the default), waived when it is OnReplenish.
func rolloutSpec(revision int, strategy string) string {
	pool := ""
	waiver := ""
	if strategy != "" {
		pool = fmt.Sprintf("\n    update_strategy = %q", strategy)
	}
	if strategy == "OnReplenish" {
		waiver = fmt.Sprintf(`
waiver {
  rule   = "PDK-410"
  scope  = "tenant.rollout.warm_pool.agent"
  reason = %q
}
`, rolloutReason)
	}
	return fmt.Sprintf(`platform {
  name = "rollout"
}

target "local" {}

agent_sandbox {
  version = "v0.5.6"
}

runtime_class "gvisor" {
  handler = "runsc"
  node_selector = {
    "sandbox.gke.io/runtime" = "gvisor"
  }
  toleration {
    key    = "sandbox.gke.io/runtime"
    value  = "gvisor"
    effect = "NoSchedule"
  }
}

tenant "rollout" {
  template "agent" {
    image         = "`+sleeperImage+`"
    command       = `+sleeperCommand+`
    runtime_class = "gvisor"
    env = {
      REVISION = "%d"
    }
  }

  warm_pool "agent" {
    template = "agent"
    replicas = 2%s
  }
}

waiver {
  rule   = "PDK-603"
  reason = "Throwaway platform of a test on the local cluster."
}
%s`, revision, pool, waiver)
}

// rolloutPools reads the rollout pool as `up`, `verify` and `status` do.
func rolloutPools(t *testing.T, e *env) pools.Pool {
	t.Helper()
	all, err := pools.Read(ctxT(t, 20*time.Second), pools.Clients{Dyn: e.dyn, Kube: e.kube}, rolloutNS)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if p.Name == rolloutPool {
			return p
		}
	}
	t.Fatalf("no pool %s/%s among %+v", rolloutNS, rolloutPool, all)
	return pools.Pool{}
}

// sandboxEnv reads REVISION inside a sandbox's pod.
func sandboxEnv(t *testing.T, e *env, pod string) string {
	t.Helper()
	opts := k8s.NewKubectlOptions("", e.kubeconfig, rolloutNS)
	out, err := k8s.RunKubectlAndGetOutputE(t, opts, "exec", pod, "-c", "agent", "--", "/bin/sh", "-c", `echo "$REVISION"`)
	if err != nil {
		t.Fatalf("exec in %s: %v\n%s", pod, err, out)
	}
	return strings.TrimSpace(out)
}

// freshAfter reads how long up waited for the pool from its progress line.
var freshAfter = regexp.MustCompile(`warm pool ` + rolloutNS + `/` + rolloutPool + ` holds only current sandboxes, (\d+)/(\d+) ready \(([0-9.]+)s\)`)

// TestPoolRollout: a template change reaches the warm pool. Under the
// default Recreate, `up` returns only once the pool holds only sandboxes of
// the new template (the controller replaces them; a claimed sandbox is left
// alone), and verify passes; with the controller down it fails naming the
// stale sandboxes, and waits for the controller's return. Waived to
// OnReplenish, `up` says the pool keeps its stale sandboxes and verify (V07)
// reports them.
func TestPoolRollout(t *testing.T) {
	e := live
	dir := t.TempDir()
	spec := filepath.Join(dir, "platform.hcl")
	write := func(src string) {
		t.Helper()
		if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	up := func(what string) run {
		t.Helper()
		r := e.runPaddock(t, nil, "up", dir)
		t.Logf("paddock up (%s): exit %d in %s\n%s", what, r.code, r.took.Round(100*time.Millisecond), tail(r.stdout, 15))
		if r.code != 0 {
			t.Fatalf("paddock up (%s): exit %d\n%s\n%s", what, r.code, r.stdout, tail(r.stderr, 30))
		}
		return r
	}

	write(rolloutSpec(1, ""))
	up("create")
	defer e.destroyAndWait(t, nil, []string{rolloutNS}, dir)
	eventually(t, "the pool warm at revision 1", 2*time.Minute, func() error {
		if p := rolloutPools(t, e); !p.Fresh() || p.Current != 2 {
			return fmt.Errorf("%d/%d ready, %d current, %d stale", p.Ready, p.Desired, p.Current, p.Stale)
		}
		return nil
	})
	first := rolloutPools(t, e)
	if first.UpdateStrategy != "Recreate" {
		t.Fatalf("the pool's live update strategy is %q, want Recreate (the default)", first.UpdateStrategy)
	}
	for _, s := range first.Sandboxes {
		if s.TemplateHash != first.TemplateHash {
			t.Fatalf("sandbox %s carries template hash %q, Paddock computes %q for the live template: the reader disagrees with the controller", s.Name, s.TemplateHash, first.TemplateHash)
		}
	}

	// A session takes one of the warm sandboxes: it must outlive the rollout untouched.
	claims := e.dyn.Resource(claimsGVR).Namespace(rolloutNS)
	claim := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimsGVR.GroupVersion().String(), "kind": "SandboxClaim",
		"metadata": map[string]any{"name": "session-rollout", "namespace": rolloutNS},
		"spec":     map[string]any{"warmPoolRef": map[string]any{"name": rolloutPool}, "lifecycle": sessionLifecycle(time.Now().Add(time.Hour))},
	}}
	if _, err := claims.Create(ctxT(t, 10*time.Second), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer claims.Delete(ctxTimeout(10*time.Second), "session-rollout", metav1.DeleteOptions{})
	var claimed string
	eventually(t, "the claim takes a warm sandbox", time.Minute, func() error {
		u, err := claims.Get(ctxT(t, 5*time.Second), "session-rollout", metav1.GetOptions{})
		if err != nil {
			return err
		}
		claimed, _, _ = unstructured.NestedString(u.Object, "status", "sandbox", "name")
		if claimed == "" {
			return fmt.Errorf("not bound yet")
		}
		return nil
	})
	claimedSB, err := e.dyn.Resource(sandboxesGVR).Namespace(rolloutNS).Get(ctxT(t, 5*time.Second), claimed, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claimedUID := claimedSB.GetUID()
	eventually(t, "the pool refilled after the claim", 2*time.Minute, func() error {
		if p := rolloutPools(t, e); !p.Fresh() || p.Claimed != 1 {
			return fmt.Errorf("%d/%d ready, %d claimed", p.Ready, p.Desired, p.Claimed)
		}
		return nil
	})

	t.Run("Recreate: when up returns the pool holds only the new template's sandboxes", func(t *testing.T) {
		before := rolloutPools(t, e)
		write(rolloutSpec(2, ""))
		// Watch the pool while up runs: when it first stops being what it
		// was (a stale, deleted or new sandbox) and when it is fresh again.
		start := time.Now()
		stop := make(chan struct{})
		watched := make(chan rolloutWatch, 1)
		go func() { watched <- watchRollout(e, before, start, stop) }()
		r := up("template at revision 2")
		returned := time.Since(start)
		// Read at once: up's promise is a fresh pool when it returns.
		after := rolloutPools(t, e)
		close(stop)
		w := <-watched
		waitedLine := "up did not need to wait (the pool was fresh when the engine finished)"
		if m := freshAfter.FindStringSubmatch(r.stdout); m != nil {
			waitedLine = "up waited " + m[3] + "s for the pool"
		}
		t.Logf("ROLLOUT TIMING (Recreate, the real node): up returned after %s; the pool first changed %s and was fresh again %s after up began (%s of rollout); %s",
			returned.Round(100*time.Millisecond), w.changed.Round(100*time.Millisecond), w.fresh.Round(100*time.Millisecond), (w.fresh - w.changed).Round(100*time.Millisecond), waitedLine)
		if w.changed == 0 {
			t.Errorf("the watcher never saw the pool change while up ran")
		}
		if strings.Contains(r.stdout, "is being refilled") && freshAfter.FindStringSubmatch(r.stdout) == nil {
			t.Errorf("up began waiting but never said the pool was fresh:\n%s", r.stdout)
		}

		if after.Stale != 0 || after.Ready != 2 || after.Current != 2 || after.Claimed != 1 {
			t.Fatalf("when up returned: %+v", after)
		}
		if after.TemplateHash == before.TemplateHash {
			t.Fatal("the template's hash did not change: the test changed nothing")
		}
		for _, s := range after.Sandboxes {
			if s.State != pools.Current {
				continue
			}
			for _, old := range before.Sandboxes {
				if old.Name == s.Name {
					t.Errorf("sandbox %s of revision 1 is still in the pool", s.Name)
				}
			}
			if e.nodes != "fake" {
				if got := sandboxEnv(t, e, s.Name); got != "2" {
					t.Errorf("pool sandbox %s runs revision %q, want 2", s.Name, got)
				}
			}
		}
		// The session's sandbox is the same object, still of revision 1.
		sb, err := e.dyn.Resource(sandboxesGVR).Namespace(rolloutNS).Get(ctxT(t, 5*time.Second), claimed, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the claimed sandbox %s is gone: %v", claimed, err)
		}
		if sb.GetUID() != claimedUID || sb.GetDeletionTimestamp() != nil {
			t.Fatalf("the claimed sandbox %s was replaced or is being deleted (uid %s, was %s)", claimed, sb.GetUID(), claimedUID)
		}
		if e.nodes != "fake" {
			pod := sb.GetName()
			if n := sb.GetAnnotations()["agents.x-k8s.io/pod-name"]; n != "" {
				pod = n
			}
			if got := sandboxEnv(t, e, pod); got != "1" {
				t.Errorf("the claimed sandbox runs revision %q, want 1 (left alone)", got)
			}
		}

		rep, code := verifyReport(t, e, dir)
		for _, res := range rep.Results {
			if res.Status == verify.Fail {
				t.Errorf("verify after the rollout: %s %s [%s]: %s", res.ID, res.Title, res.Subject, res.Reason)
			}
		}
		if v07 := statusOf(rep, "V07"); len(v07) != 1 || v07[0].Status != verify.Pass || !strings.Contains(v07[0].Reason, "all of the current template") {
			t.Errorf("V07 after the rollout: %+v", v07)
		}
		if code != 0 && !t.Failed() {
			t.Errorf("verify exited %d with no failing check", code)
		}
	})

	t.Run("Recreate with the controller down: up fails naming the stale sandboxes, then waits for its return", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(e.home, "local", "supervisor.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sup supervisorState
		if err := json.Unmarshal(b, &sup); err != nil || sup.Self.PID == 0 || sup.Controller.PID == 0 {
			t.Fatalf("supervisor.json names no supervisor or controller pid (%v):\n%s", err, b)
		}
		// This stack's own supervisor and controller, by pid.
		_ = syscall.Kill(sup.Self.PID, syscall.SIGKILL)
		_ = syscall.Kill(sup.Controller.PID, syscall.SIGKILL)
		defer e.restoreLocal(t)
		before := rolloutPools(t, e)

		write(rolloutSpec(3, ""))
		r := e.runPaddock(t, nil, "up", dir, "--pool-wait", "20s")
		all := r.stdout + r.stderr
		t.Logf("paddock up --pool-wait 20s with the controller down: exit %d in %s\n%s", r.code, r.took.Round(100*time.Millisecond), tail(all, 14))
		if r.code == 0 {
			t.Fatal("up succeeded with the pool holding only stale sandboxes")
		}
		for _, want := range []string{
			"is being refilled from template \"agent\" (update strategy Recreate): 0/2 current sandboxes ready, 2 stale (",
			"1 warm pool(s) did not come to hold only current sandboxes within 20s",
			"warm pool " + rolloutNS + "/" + rolloutPool + ": 0/2 current sandboxes ready, 2 stale (",
			"built from template revision " + before.TemplateHash,
			"Paddock deletes only those whose pods diverged from the template",
		} {
			if !strings.Contains(all, want) {
				t.Errorf("up's output lacks %q", want)
			}
		}
		for _, s := range before.Sandboxes {
			if s.State == pools.Current && !strings.Contains(all, "stale sandbox "+s.Name+": ") {
				t.Errorf("the error does not name stale sandbox %s", s.Name)
			}
		}

		// up again, waiting, while the controller comes back.
		start := time.Now()
		waiting := e.startPaddock(t, nil, "up", dir, "--pool-wait", "3m")
		eventually(t, "up waiting for the pool", time.Minute, func() error {
			if !strings.Contains(waiting.out.String(), "is being refilled") {
				return fmt.Errorf("not yet:\n%s", tail(waiting.out.String(), 5))
			}
			return nil
		})
		restart := time.Now()
		e.restoreLocal(t)
		t.Logf("the controller is back %s after the restart began", time.Since(restart).Round(100*time.Millisecond))
		select {
		case err := <-waiting.done:
			out := waiting.out.String()
			if err != nil {
				t.Fatalf("up waiting for the returning controller: %v\n%s", err, out)
			}
			m := freshAfter.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("up did not report the pool fresh:\n%s", out)
			}
			t.Logf("ROLLOUT TIMING (Recreate, controller restarted, the real node): up waited %ss for the pool (it returned %s after it began, %s after the controller's restart began)",
				m[3], time.Since(start).Round(100*time.Millisecond), time.Since(restart).Round(100*time.Millisecond))
		case <-time.After(4 * time.Minute):
			_ = syscall.Kill(-waiting.cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("up still waiting after 4m:\n%s", waiting.out.String())
		}
		p := rolloutPools(t, e)
		if p.Stale != 0 || p.Ready != 2 || p.Claimed != 1 || p.TemplateHash == before.TemplateHash {
			t.Errorf("after up returned: %+v", p)
		}
		sb, err := e.dyn.Resource(sandboxesGVR).Namespace(rolloutNS).Get(ctxT(t, 5*time.Second), claimed, metav1.GetOptions{})
		if err != nil || sb.GetUID() != claimedUID {
			t.Errorf("the claimed sandbox %s did not survive: %v", claimed, err)
		}
	})

	t.Run("OnReplenish (waived): up reports the stale sandboxes, verify fails V07", func(t *testing.T) {
		write(rolloutSpec(3, "OnReplenish"))
		up("update strategy OnReplenish")
		if p := rolloutPools(t, e); p.UpdateStrategy != "OnReplenish" || p.Stale != 0 {
			t.Fatalf("after switching the strategy: %+v", p)
		}
		before := rolloutPools(t, e)
		write(rolloutSpec(4, "OnReplenish"))
		start := time.Now()
		r := up("template at revision 4, OnReplenish")
		if strings.Contains(r.stdout, "is being refilled") {
			t.Errorf("up waited for an OnReplenish pool:\n%s", r.stdout)
		}
		want := fmt.Sprintf("paddock up: 2 stale sandbox(es) remain in warm pool %s/%s, built from an older template: ", rolloutNS, rolloutPool)
		if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "(update strategy OnReplenish, waived: "+rolloutReason+")") {
			t.Errorf("up does not report the kept stale sandboxes and the waiver:\n%s", r.stdout)
		}
		t.Logf("up with OnReplenish returned %s after it began", time.Since(start).Round(100*time.Millisecond))

		// The controller keeps them: still there, still stale, a while later.
		time.Sleep(10 * time.Second)
		p := rolloutPools(t, e)
		if p.Stale != 2 || p.Claimed != 1 {
			t.Fatalf("under OnReplenish the pool holds %d stale, %d claimed (want 2 and 1): %+v", p.Stale, p.Claimed, p)
		}
		for _, s := range p.Sandboxes {
			if s.State == pools.Stale && !strings.Contains(strings.Join(namesOf(before), ","), s.Name) {
				t.Errorf("stale sandbox %s is not one the pool held before the change", s.Name)
			}
		}

		rep, code := verifyReport(t, e, dir)
		if code != 1 {
			t.Errorf("verify with stale sandboxes kept: exit %d, want 1", code)
		}
		v07 := statusOf(rep, "V07")
		if len(v07) != 1 || v07[0].Status != verify.Fail ||
			!strings.Contains(v07[0].Reason, "2 unclaimed sandbox(es) built from an older template") ||
			!strings.Contains(v07[0].Reason, "(waived: "+rolloutReason+")") {
			t.Errorf("V07 with stale sandboxes kept: %+v", v07)
		}

		// status shows the pool's health, in text and JSON.
		st := e.runPaddock(t, nil, "status", dir, "--format", "json")
		var doc struct {
			WarmPools []struct {
				Namespace, Name                string
				Desired, Ready, Stale, Claimed int
				OldestAgeSeconds               int64
			} `json:"warmPools"`
		}
		if err := json.Unmarshal([]byte(st.stdout), &doc); err != nil || st.code != 0 {
			t.Fatalf("status JSON (exit %d): %v\n%s\n%s", st.code, err, st.stdout, tail(st.stderr, 10))
		}
		if len(doc.WarmPools) != 1 || doc.WarmPools[0].Desired != 2 || doc.WarmPools[0].Stale != 2 || doc.WarmPools[0].Claimed != 1 || doc.WarmPools[0].OldestAgeSeconds < 10 {
			t.Errorf("status JSON: %+v", doc.WarmPools)
		}
		text := e.runPaddock(t, nil, "status", dir)
		if !strings.Contains(text.stdout, "holds sandboxes of an older template") || !regexp.MustCompile(rolloutNS+`/`+rolloutPool+`\s+OnReplenish\s+2\s+0\s+2\s+1\s`).MatchString(text.stdout) {
			t.Errorf("status text:\n%s", text.stdout)
		}
	})
}

func namesOf(p pools.Pool) []string {
	var out []string
	for _, s := range p.Sandboxes {
		out = append(out, s.Name)
	}
	return out
}

// rolloutWatch is when, after up began, the pool first differed from what it
// held before, and when it was next fresh.
type rolloutWatch struct{ changed, fresh time.Duration }

// watchRollout reads the pool every 200ms until stop.
func watchRollout(e *env, before pools.Pool, start time.Time, stop <-chan struct{}) rolloutWatch {
	var w rolloutWatch
	was := strings.Join(namesOf(before), ",")
	for {
		select {
		case <-stop:
			return w
		case <-time.After(200 * time.Millisecond):
		}
		all, err := pools.Read(ctxTimeout(5*time.Second), pools.Clients{Dyn: e.dyn, Kube: e.kube}, rolloutNS)
		if err != nil || len(all) != 1 {
			continue
		}
		p := all[0]
		at := time.Since(start)
		if w.changed == 0 && (p.TemplateHash != before.TemplateHash || strings.Join(namesOf(p), ",") != was) {
			w.changed = at
		}
		if w.changed != 0 && w.fresh == 0 && p.Fresh() && p.Stale == 0 && p.Terminating == 0 && p.TemplateHash != before.TemplateHash {
			w.fresh = at
		}
	}
}
