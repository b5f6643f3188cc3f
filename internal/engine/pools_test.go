package engine

import (
	"bytes"
	"context"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/internal/pools"
	"github.com/paddock-platform/paddock/internal/pools/poolstest"
	"github.com/paddock-platform/paddock/schemas"
)

const poolNS = "agents-team-a"

// poolSpec is a platform with one tenant and warm pool "agent" of update
// strategy strategy ("" for the default), waived when waiver is set.
func poolSpec(t *testing.T, strategy, waiver string) *model.Platform {
	t.Helper()
	line := ""
	if strategy != "" {
		line = "update_strategy = \"" + strategy + "\""
	}
	src := `platform { name = "demo" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" { handler = "runsc" }
tenant "team-a" {
  template "agent" {
    image         = "localhost/paddock/busybox:v1"
    runtime_class = "gvisor"
  }
  warm_pool "agent" {
    template = "agent"
    replicas = 2
    ` + line + `
  }
}
waiver {
  rule   = "PDK-603"
  reason = "throwaway"
}
`
	if waiver != "" {
		src += "waiver {\n  rule   = \"PDK-410\"\n  scope  = \"tenant.team-a.warm_pool.agent\"\n  reason = \"" + waiver + "\"\n}\n"
	}
	p, diags := schemas.LoadSource("spec.hcl", []byte(src), schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return p
}

// poolCluster is a fake cluster with pool "agent" of namespace poolNS,
// whose template is now at image v2, and the given sandboxes and pods.
type poolCluster struct {
	pool    *unstructured.Unstructured
	v1, v2  *unstructured.Unstructured
	clients pools.Clients
	dyn     *dynamicfake.FakeDynamicClient
	kube    *kubefake.Clientset
}

func newPoolCluster(t *testing.T, strategy string, sandboxes func(c *poolCluster) []unstructured.Unstructured) *poolCluster {
	t.Helper()
	c := &poolCluster{pool: poolstest.WarmPool(t, poolNS, "agent", "agent", strategy, 2)}
	v2 := poolstest.Template(t, "agent", "localhost/paddock/busybox:v2")
	c.v2 = poolstest.U(t, v2)
	c.v1 = poolstest.U(t, poolstest.Template(t, "agent", "localhost/paddock/busybox:v1"))
	objs := []*unstructured.Unstructured{c.pool, c.v2}
	var podObjs []runtime.Object
	for _, sb := range sandboxes(c) {
		objs = append(objs, &sb)
		p := poolstest.Pod(poolNS, sb.GetName(), true)
		podObjs = append(podObjs, &p)
	}
	dyn := poolstest.Dynamic(t, objs...)
	c.dyn, c.kube = dyn, kubefake.NewClientset(podObjs...)
	c.clients = pools.Clients{Dyn: dyn, Kube: c.kube}
	return c
}

// sandbox is a sandbox of the pool built from template revision tpl.
func (c *poolCluster) sandbox(t *testing.T, tpl *unstructured.Unstructured, name string, created time.Time) unstructured.Unstructured {
	t.Helper()
	typed := poolstest.Template(t, "agent", "x")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tpl.Object, typed); err != nil {
		t.Fatal(err)
	}
	return poolstest.Sandbox(t, c.pool, typed, name, created, true)
}

func fastPoll(t *testing.T) {
	old := poolPoll
	poolPoll = 5 * time.Millisecond
	t.Cleanup(func() { poolPoll = old })
}

// fakePoolClock puts the pool wait on a fake clock for the test.
func fakePoolClock(t *testing.T) *testingclock.FakeClock {
	fake := testingclock.NewFakeClock(time.Now())
	old := poolClock
	poolClock = fake
	t.Cleanup(func() { poolClock = old })
	return fake
}

// parkedOrReturned waits until settlePools either returned (true, with its
// error) or is parked on the fake clock (false). The bound only guards
// against a hang: either happens within milliseconds.
func parkedOrReturned(t *testing.T, fake *testingclock.FakeClock, done <-chan error) (bool, error) {
	t.Helper()
	guard := time.After(time.Minute)
	for {
		select {
		case err := <-done:
			return true, err
		case <-guard:
			t.Fatal("settlePools neither returned nor waited on its clock within a minute")
		default:
		}
		if fake.HasWaiters() {
			// Parked; unless it returned in the same moment.
			select {
			case err := <-done:
				return true, err
			default:
				return false, nil
			}
		}
		goruntime.Gosched()
	}
}

// Under Recreate, up waits while the controller replaces the stale
// sandboxes, and says so; the claimed one is neither waited for nor touched.
func TestSettlePoolsWaitsForRecreate(t *testing.T) {
	fastPoll(t)
	before := time.Now().Add(-time.Hour)
	c := newPoolCluster(t, "Recreate", func(c *poolCluster) []unstructured.Unstructured {
		return []unstructured.Unstructured{
			c.sandbox(t, c.v1, "agent-old1", before), c.sandbox(t, c.v1, "agent-old2", before),
			poolstest.Adopt(c.sandbox(t, c.v1, "agent-taken", before), "session-1"),
		}
	})
	claim := poolstest.Claim(poolNS, "session-1", "agent")
	if err := c.dyn.Tracker().Create(agentsandbox.SandboxClaims, &claim, poolNS); err != nil {
		t.Fatal(err)
	}
	// The controller: on the third read it deletes the stale sandboxes
	// and builds current ones.
	var mu sync.Mutex
	lists, deleted := 0, []string{}
	c.dyn.PrependReactor("list", "sandboxes", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if lists++; lists == 3 {
			for _, n := range []string{"agent-old1", "agent-old2"} {
				if err := c.dyn.Tracker().Delete(agentsandbox.Sandboxes, poolNS, n); err != nil {
					t.Error(err)
				}
				deleted = append(deleted, n)
			}
			for _, n := range []string{"agent-new1", "agent-new2"} {
				sb := c.sandbox(t, c.v2, n, time.Now())
				if err := c.dyn.Tracker().Create(agentsandbox.Sandboxes, &sb, poolNS); err != nil {
					t.Error(err)
				}
				p := poolstest.Pod(poolNS, n, true)
				if err := c.kube.Tracker().Add(&p); err != nil {
					t.Error(err)
				}
			}
		}
		return false, nil, nil
	})
	var out bytes.Buffer
	p := poolSpec(t, "", "")
	if err := settlePools(context.Background(), c.clients, &out, p, time.Now(), time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`paddock up: warm pool agents-team-a/agent is being refilled from template "agent" (update strategy Recreate): 0/2 current sandboxes ready, 2 stale (agent-old1, agent-old2), 1 claimed (left alone); waiting up to 1m0s`,
		"paddock up: warm pool agents-team-a/agent holds only current sandboxes, 2/2 ready",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if lists < 3 {
		t.Errorf("read the pool %d times: it did not wait for the replacement", lists)
	}
	if _, err := c.dyn.Tracker().Get(agentsandbox.Sandboxes, poolNS, "agent-taken"); err != nil {
		t.Errorf("the claimed sandbox is gone: %v", err)
	}
	for _, a := range c.dyn.Fake.Actions() {
		if v := a.GetVerb(); v != "list" && v != "get" && v != "watch" {
			t.Errorf("up wrote to the cluster: %s %s", v, a.GetResource().Resource)
		}
	}
}

// A Recreate pool the controller does not replace fails up after the wait,
// naming the pool, each stale sandbox and why, and what to do.
func TestSettlePoolsTimesOutNamingStaleSandboxes(t *testing.T) {
	fastPoll(t)
	before := time.Now().Add(-time.Hour)
	c := newPoolCluster(t, "Recreate", func(c *poolCluster) []unstructured.Unstructured {
		return []unstructured.Unstructured{c.sandbox(t, c.v1, "agent-old1", before), c.sandbox(t, c.v2, "agent-new1", before)}
	})
	fake := fakePoolClock(t)
	var out bytes.Buffer
	p := poolSpec(t, "", "")
	done := make(chan error, 1)
	go func() {
		done <- settlePools(context.Background(), c.clients, &out, p, time.Now(), 100*time.Millisecond)
	}()
	// Step the clock a poll at a time, each once the wait is parked on it:
	// until the deadline is reached, the wait must still be waiting.
	var err error
	for stepped := time.Duration(0); ; stepped += poolPoll {
		if returned, e := parkedOrReturned(t, fake, done); returned {
			if stepped < 100*time.Millisecond {
				t.Fatalf("gave up %s into the 100ms wait: %v", stepped, e)
			}
			err = e
			break
		}
		fake.Step(poolPoll)
	}
	if err == nil {
		t.Fatalf("no error; output:\n%s", out.String())
	}
	msg := err.Error()
	for _, want := range []string{
		"1 warm pool(s) did not come to hold only current sandboxes within 100ms",
		"warm pool agents-team-a/agent: 1/2 current sandboxes ready, 1 stale (agent-old1) (kubectl get sandboxes,pods -n agents-team-a)",
		"stale sandbox agent-old1: built from template revision",
		"(its pod spec changed)",
		"Paddock deletes only those whose pods diverged",
		"--pool-wait",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "stale sandbox agent-new1") {
		t.Errorf("a current sandbox named stale:\n%s", msg)
	}
}

// A waived OnReplenish pool is not waited for: up says how many stale
// sandboxes it keeps and the waiver's reason.
func TestSettlePoolsReportsOnReplenish(t *testing.T) {
	fastPoll(t)
	before := time.Now().Add(-time.Hour)
	c := newPoolCluster(t, "OnReplenish", func(c *poolCluster) []unstructured.Unstructured {
		return []unstructured.Unstructured{c.sandbox(t, c.v1, "agent-old1", before), c.sandbox(t, c.v1, "agent-old2", before)}
	})
	var out bytes.Buffer
	p := poolSpec(t, "OnReplenish", "Sessions hold long-lived caches; the pool drains within the hour.")
	if rep := policy.Check(p, time.Now()); rep.Blocking() {
		t.Fatalf("the waived spec blocks: %+v", rep.Findings)
	}
	fake := fakePoolClock(t)
	done := make(chan error, 1)
	go func() { done <- settlePools(context.Background(), c.clients, &out, p, time.Now(), time.Minute) }()
	if returned, err := parkedOrReturned(t, fake, done); !returned {
		t.Fatal("up waits for a pool under OnReplenish")
	} else if err != nil {
		t.Fatal(err)
	}
	want := "paddock up: 2 stale sandbox(es) remain in warm pool agents-team-a/agent, built from an older template: agent-old1, agent-old2 (update strategy OnReplenish, waived: Sessions hold long-lived caches; the pool drains within the hour.)\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

// Fresh pools cost one read and say nothing; pools made before this up and
// short of ready sandboxes are not waited for (that is not a rollout).
func TestSettlePoolsQuietWhenFresh(t *testing.T) {
	fastPoll(t)
	before := time.Now().Add(-time.Hour)
	for name, sandboxes := range map[string]func(c *poolCluster) []unstructured.Unstructured{
		"fresh": func(c *poolCluster) []unstructured.Unstructured {
			return []unstructured.Unstructured{c.sandbox(t, c.v2, "agent-a", before), c.sandbox(t, c.v2, "agent-b", before)}
		},
		"short before this up": func(c *poolCluster) []unstructured.Unstructured {
			return []unstructured.Unstructured{c.sandbox(t, c.v2, "agent-a", before)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := newPoolCluster(t, "Recreate", sandboxes)
			var out bytes.Buffer
			p := poolSpec(t, "", "")
			if err := settlePools(context.Background(), c.clients, &out, p, time.Now(), time.Minute); err != nil {
				t.Fatal(err)
			}
			if out.Len() != 0 {
				t.Errorf("output on a settled pool:\n%s", out.String())
			}
		})
	}
}

// Sandboxes made during this up that are not ready yet mean the pool is
// being refilled: up waits for them, and with a wait below zero only says so.
func TestSettlePoolsRefillAndReportOnly(t *testing.T) {
	fastPoll(t)
	since := time.Now().Add(-time.Second)
	c := newPoolCluster(t, "Recreate", func(c *poolCluster) []unstructured.Unstructured {
		return []unstructured.Unstructured{c.sandbox(t, c.v2, "agent-a", time.Now())}
	})
	var out bytes.Buffer
	p := poolSpec(t, "", "")
	err := settlePools(context.Background(), c.clients, &out, p, since, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "warm pool agents-team-a/agent: 1/2 current sandboxes ready") {
		t.Errorf("err %v", err)
	}
	out.Reset()
	if err := settlePools(context.Background(), c.clients, &out, p, since, -1); err != nil {
		t.Fatal(err)
	}
	if want := "paddock up: not waiting for warm pool agents-team-a/agent (1/2 current sandboxes ready)\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// The controller deletes the stale sandboxes and creates their
// replacements apart: an up that reads the pool in between sees no stale
// sandbox and none new, only a template written during this up. It waits.
func TestSettlePoolsBetweenDeleteAndCreate(t *testing.T) {
	fastPoll(t)
	since := time.Now().Add(-time.Second)
	c := newPoolCluster(t, "Recreate", func(c *poolCluster) []unstructured.Unstructured { return nil })
	tpl, err := c.dyn.Tracker().Get(agentsandbox.SandboxTemplates, poolNS, "agent")
	if err != nil {
		t.Fatal(err)
	}
	written := tpl.(*unstructured.Unstructured).DeepCopy()
	written.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "pulumi-kubernetes", Operation: metav1.ManagedFieldsOperationApply, Time: &metav1.Time{Time: time.Now()}}})
	if err := c.dyn.Tracker().Update(agentsandbox.SandboxTemplates, written, poolNS); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	lists := 0
	c.dyn.PrependReactor("list", "sandboxes", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if lists++; lists == 3 {
			for _, n := range []string{"agent-new1", "agent-new2"} {
				sb := c.sandbox(t, c.v2, n, time.Now())
				if err := c.dyn.Tracker().Create(agentsandbox.Sandboxes, &sb, poolNS); err != nil {
					t.Error(err)
				}
				p := poolstest.Pod(poolNS, n, true)
				if err := c.kube.Tracker().Add(&p); err != nil {
					t.Error(err)
				}
			}
		}
		return false, nil, nil
	})
	var out bytes.Buffer
	if err := settlePools(context.Background(), c.clients, &out, poolSpec(t, "", ""), since, time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if lists < 3 || !strings.Contains(out.String(), "0/2 current sandboxes ready; waiting up to 1m0s") || !strings.Contains(out.String(), "holds only current sandboxes, 2/2 ready") {
		t.Errorf("read %d times; output:\n%s", lists, out.String())
	}
}
