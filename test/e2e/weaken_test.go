//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"

	"github.com/paddock-platform/paddock/internal/drift"
)

// weakenStack is the stack TestWeakeningsRepaired provisions examples/local into.
const weakenStack = "weaken-e2e"

// weakening is one out-of-band loosening, made with kubectl as a person with
// write access would, that the spec does not declare a field for.
type weakening struct {
	name      string
	kubectl   []string // the edit
	kind, obj string   // the drifted object, as drift names it
	path      string   // the field path drift must report
	restored  func(t *testing.T, e *env) error
}

func weakenings() []weakening {
	ns := namespace
	jsonPath := func(obj string, path ...string) func(t *testing.T, e *env) error {
		return func(t *testing.T, e *env) error {
			out, err := k8s.RunKubectlAndGetOutputE(t, e.kubectl, append([]string{"get", obj, "-n", ns, "-o"}, "jsonpath={"+strings.Join(path, "")+"}")...)
			if err != nil {
				return err
			}
			if strings.TrimSpace(out) != "" {
				return fmt.Errorf("%s%s is still %s", obj, strings.Join(path, ""), out)
			}
			return nil
		}
	}
	return []weakening{
		{name: "default-deny opens ingress from anywhere",
			kubectl: []string{"patch", "networkpolicy", "default-deny", "-n", ns, "--type=merge", "-p", `{"spec":{"ingress":[{}]}}`},
			kind:    "NetworkPolicy", obj: ns + "/default-deny", path: "spec.ingress",
			restored: jsonPath("networkpolicy/default-deny", ".spec.ingress")},
		{name: "default-deny opens egress to the internet in two halves",
			kubectl: []string{"patch", "networkpolicy", "default-deny", "-n", ns, "--type=merge", "-p", `{"spec":{"egress":[{"to":[{"ipBlock":{"cidr":"0.0.0.0/1"}},{"ipBlock":{"cidr":"128.0.0.0/1"}}]}]}}`},
			kind:    "NetworkPolicy", obj: ns + "/default-deny", path: "spec.egress",
			restored: jsonPath("networkpolicy/default-deny", ".spec.egress")},
		{name: "default-deny narrowed to pods nobody runs",
			kubectl: []string{"patch", "networkpolicy", "default-deny", "-n", ns, "--type=merge", "-p", `{"spec":{"podSelector":{"matchLabels":{"nobody":"here"}}}}`},
			kind:    "NetworkPolicy", obj: ns + "/default-deny", path: "spec.podSelector.matchLabels",
			restored: jsonPath("networkpolicy/default-deny", ".spec.podSelector.matchLabels")},
		{name: "the claims guardrail switched off by a matchCondition",
			kubectl: []string{"patch", "validatingadmissionpolicy", "paddock-local-demo-team-a-claims", "--type=merge", "-p", `{"spec":{"matchConditions":[{"name":"off","expression":"false"}]}}`},
			kind:    "ValidatingAdmissionPolicy", obj: "paddock-local-demo-team-a-claims", path: "spec.matchConditions",
			restored: jsonPath("validatingadmissionpolicy/paddock-local-demo-team-a-claims", ".spec.matchConditions")},
		{name: "the claims guardrail's binding narrowed by an objectSelector",
			kubectl: []string{"patch", "validatingadmissionpolicybinding", "paddock-local-demo-team-a-claims", "--type=merge", "-p", `{"spec":{"matchResources":{"objectSelector":{"matchLabels":{"never":"x"}}}}}`},
			kind:    "ValidatingAdmissionPolicyBinding", obj: "paddock-local-demo-team-a-claims", path: "spec.matchResources.objectSelector",
			restored: jsonPath("validatingadmissionpolicybinding/paddock-local-demo-team-a-claims", ".spec.matchResources.objectSelector.matchLabels")},
		{name: "the template opens sandbox ingress through its networkPolicy",
			kubectl: []string{"patch", "sandboxtemplate", templateName, "-n", ns, "--type=merge", "-p", `{"spec":{"networkPolicy":{"ingress":[{}]}}}`},
			kind:    "SandboxTemplate", obj: ns + "/" + templateName, path: "spec.networkPolicy.ingress",
			restored: jsonPath("sandboxtemplate/"+templateName, ".spec.networkPolicy.ingress")},
		{name: "the template injects a Secret with envFrom",
			kubectl: []string{"patch", "sandboxtemplate", templateName, "-n", ns, "--type=json", "-p", `[{"op":"add","path":"/spec/podTemplate/spec/containers/0/envFrom","value":[{"secretRef":{"name":"llm-keys"}}]}]`},
			kind:    "SandboxTemplate", obj: ns + "/" + templateName, path: "envFrom",
			restored: jsonPath("sandboxtemplate/"+templateName, ".spec.podTemplate.spec.containers[0].envFrom")},
		{name: "the template mounts a Secret through a volume inserted at the front",
			kubectl: []string{"patch", "sandboxtemplate", templateName, "-n", ns, "--type=json", "-p", `[{"op":"add","path":"/spec/podTemplate/spec/volumes/0","value":{"name":"keys","secret":{"secretName":"llm-keys"}}}]`},
			kind:    "SandboxTemplate", obj: ns + "/" + templateName, path: "volumes",
			restored: jsonPath("sandboxtemplate/"+templateName, `.spec.podTemplate.spec.volumes[?(@.name=="keys")].name`)},
		{name: "the orchestrator's Role reads secrets",
			kubectl: []string{"patch", "role", "agent-orchestrator", "-n", ns, "--type=json", "-p", `[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list"]}}]`},
			kind:    "Role", obj: ns + "/agent-orchestrator", path: "rules",
			restored: jsonPath("role/agent-orchestrator", `.rules[?(@.resources[0]=="secrets")].verbs`)},
	}
}

// TestWeakeningsRepaired breaks the platform out of band, one loosening at a
// time, in fields the spec does not declare: drift must report each with its
// field path and the manager that made it (kubectl-patch), `up` must put it
// back and say what it removed, and drift must then be clean. Before drift
// compared whole objects, none of these was reported and `up` repaired none.
func TestWeakeningsRepaired(t *testing.T) {
	e := live
	r := e.runPaddock(t, nil, "up", example, "--stack", weakenStack)
	if r.code != 0 {
		t.Fatalf("paddock up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	defer e.destroyAndWait(t, nil, []string{namespace}, example, "--stack", weakenStack)
	eventually(t, "warm pool ready", 120*time.Second, func() error { return poolReady(e, replicas) })

	// Untouched, drift is clean, 20 runs in a row (the reference is the
	// desired object as the server stores it: no defaults read as drift).
	for i := 1; i <= 20; i++ {
		if rep, _ := e.driftReport(t, 0, nil, example, "--stack", weakenStack); rep.Drifted() {
			t.Fatalf("run %d: drift on an untouched platform: %+v %+v", i, rep.Resources, rep.Unmanaged)
		}
	}

	for _, w := range weakenings() {
		t.Run(w.name, func(t *testing.T) {
			if _, err := k8s.RunKubectlAndGetOutputE(t, e.kubectl, w.kubectl...); err != nil {
				t.Fatalf("kubectl %s: %v", strings.Join(w.kubectl, " "), err)
			}
			rep, _ := e.driftReport(t, 2, nil, example, "--stack", weakenStack)
			res := findResource(rep, w.kind, w.obj)
			if res == nil {
				t.Fatalf("%s %s not reported: %+v", w.kind, w.obj, rep.Resources)
			}
			f := findField(res, w.path)
			if res.Change != drift.Modified || f == nil {
				t.Fatalf("%s %s: change %s, no field %q in %+v", w.kind, w.obj, res.Change, w.path, res.Fields)
			}
			if !strings.Contains(f.By(), "kubectl-patch") {
				t.Errorf("%s: written by %q, want kubectl-patch with its time", f.Path, f.By())
			}
			t.Logf("drift: %s %s: %s: %s → %s by %s", w.kind, w.obj, f.Path, drift.Value(f.Declared), drift.Value(f.Live), f.By())

			up := e.runPaddock(t, nil, "up", example, "--stack", weakenStack)
			if up.code != 0 {
				t.Fatalf("paddock up: exit %d\n%s\n%s", up.code, up.stdout, tail(up.stderr, 30))
			}
			if !regexp.MustCompile(`(?m)^paddock up: (repaired|replaced) ` + regexp.QuoteMeta(w.kind+" "+w.obj)).MatchString(up.stdout) {
				t.Errorf("up does not say it repaired %s %s:\n%s", w.kind, w.obj, up.stdout)
			}
			if err := w.restored(t, e); err != nil {
				t.Errorf("after up: %v", err)
			}
			if rep, _ := e.driftReport(t, 0, nil, example, "--stack", weakenStack); rep.Drifted() {
				t.Errorf("drift after the repair: %+v %+v", rep.Resources, rep.Unmanaged)
			}
		})
	}

	// The engine's path sees and repairs the same: drift --full reports a
	// loosening Pulumi's own diff cannot see, up --full puts it back.
	t.Run("drift --full and up --full", func(t *testing.T) {
		w := weakenings()[0]
		if _, err := k8s.RunKubectlAndGetOutputE(t, e.kubectl, w.kubectl...); err != nil {
			t.Fatal(err)
		}
		rep, _ := e.driftReport(t, 2, nil, example, "--stack", weakenStack, "--full")
		if res := findResource(rep, w.kind, w.obj); res == nil || findField(res, w.path) == nil {
			t.Fatalf("drift --full does not report %s: %+v", w.path, rep.Resources)
		}
		up := e.runPaddock(t, nil, "up", example, "--stack", weakenStack, "--full")
		if up.code != 0 {
			t.Fatalf("paddock up --full: exit %d\n%s\n%s", up.code, up.stdout, tail(up.stderr, 30))
		}
		if err := w.restored(t, e); err != nil {
			t.Errorf("after up --full: %v\n%s", err, up.stdout)
		}
		if rep, _ := e.driftReport(t, 0, nil, example, "--stack", weakenStack, "--full"); rep.Drifted() {
			t.Errorf("drift --full after the repair: %+v", rep.Resources)
		}
	})

	// The repairs kept the state true: Pulumi's own preview sees nothing to do.
	pr := e.runPaddock(t, nil, "preview", example, "--stack", weakenStack)
	m := regexp.MustCompile(`(?m)^paddock preview: (.*) in [0-9.]+s$`).FindStringSubmatch(pr.stdout)
	if pr.code != 0 || m == nil || regexp.MustCompile(`create|update|delete|replace`).MatchString(m[1]) {
		t.Errorf("Pulumi's preview after the repairs is not 0 changes (exit %d):\n%s", pr.code, pr.stdout)
	}
}
