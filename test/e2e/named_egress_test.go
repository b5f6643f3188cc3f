//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/verify"
	"github.com/paddock-platform/paddock/schemas"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

// TestNamedEgressEnforced: on the real node with Cilium, a gVisor sandbox of a
// tenant whose allow-list names one of the local stack's world hosts reaches
// that name and nothing else: another world host is refused (by address and
// by name), a name off its list does not resolve, and neither the node's
// address nor another tenant's sandbox answers it. Each refusal is read
// against a control that shows the destination answering where no policy
// applies. `paddock verify` shows the same with its own probes. With the
// tenant's CiliumNetworkPolicy deleted out of band the sandbox is refused
// everything, `paddock drift` names the deletion, and `paddock up` restores
// the named egress.
func TestNamedEgressEnforced(t *testing.T) {
	e := live
	if e.nodes == "fake" {
		t.Skip("kwok nodes run no container and no dataplane (PADDOCK_E2E_NODES=fake)")
	}
	listed, other, unlisted := localcluster.WorldHosts[0], localcluster.WorldHosts[1], localcluster.WorldHosts[2]

	// Two tenants: "egress" lists the world host by name, "other" keeps the
	// generated list. Every sandbox listens on 8080, so a refusal between
	// tenants is a policy's and not an empty port.
	spec := specgen.Generate(specgen.Options{Platform: "named-egress", Tenants: 2, FirstTenant: 900,
		Command: []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do echo sandbox | nc -l -p 8080 & wait $!; done"}})
	spec = strings.Replace(spec, fmt.Sprintf("tenant %q", specgen.TenantName(900)), `tenant "egress"`, 1)
	spec = strings.Replace(spec, `fqdns = ["api.tenant-0900.example.com"]`, fmt.Sprintf("fqdns = [%q]", listed.Name), 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	p, diags := schemas.LoadSource("platform.hcl", []byte(spec), schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	tn, tother := p.Tenants[0], p.Tenants[1]
	if tn.Name != "egress" || len(tn.Egress.FQDNs) != 1 || tn.Egress.FQDNs[0] != listed.Name {
		t.Fatalf("the generated spec changed shape: tenant %s lists %v", tn.Name, tn.Egress.FQDNs)
	}
	ns := tn.Namespace

	e.mustPaddock(t, "up", dir)
	defer e.destroyAndWait(t, nil, []string{ns, tother.Namespace}, dir)

	pod := readySandboxPod(t, e, ns)
	otherPod := readySandboxPod(t, e, tother.Namespace)
	otherIP := podIP(t, e, tother.Namespace, otherPod)
	nodeIP := nodeAddress(t, e)
	run := func(args ...string) string {
		out, _ := k8s.RunKubectlAndGetOutputE(t, k8s.NewKubectlOptions("", e.kubeconfig, ns), append([]string{"exec", pod, "-c", "agent", "--"}, args...)...)
		return out
	}
	reaches := func(h localcluster.WorldHost, target string, port int) func() bool {
		return func() bool {
			return strings.Contains(run("sh", "-c", fmt.Sprintf("nc -w 2 %s %d </dev/null", target, port)), localcluster.WorldGreeting+h.Name)
		}
	}
	resolves := func(h localcluster.WorldHost) func() bool {
		return func() bool { return strings.Contains(run("nslookup", h.Name+"."), h.Addr()) }
	}

	// Controls, from this machine, where no policy applies: each world host
	// greets, the other tenant's sandbox answers, the node's kubelet accepts.
	for _, c := range []struct{ what, addr, greeting string }{
		{listed.Name, net.JoinHostPort(listed.Addr(), "443"), localcluster.WorldGreeting + listed.Name},
		{unlisted.Name, net.JoinHostPort(unlisted.Addr(), "443"), localcluster.WorldGreeting + unlisted.Name},
		{"the other tenant's sandbox", net.JoinHostPort(otherIP, "8080"), "sandbox"},
		{"the node's kubelet", net.JoinHostPort(nodeIP, "10250"), ""},
	} {
		eventually(t, "control: this machine reaches "+c.what, 60*time.Second, func() error { return dialGreets(c.addr, c.greeting) })
	}

	t.Run("the listed name is reached on 443", func(t *testing.T) {
		eventually(t, "the sandbox resolves "+listed.Name, 30*time.Second, boolErr(resolves(listed), "no address"))
		eventually(t, "the sandbox reaches "+listed.Name+":443", 30*time.Second, boolErr(reaches(listed, listed.Name, 443), "not reached"))
	})
	t.Run("everything else is refused", func(t *testing.T) {
		refusedInARow(t, listed.Name+" on port 80", reaches(listed, listed.Name, 80))
		refusedInARow(t, unlisted.Name+" by address", reaches(unlisted, unlisted.Addr(), 443))
		refusedInARow(t, unlisted.Name+" by name", reaches(unlisted, unlisted.Name, 443))
		refusedInARow(t, "a lookup of "+unlisted.Name, resolves(unlisted))
		refusedInARow(t, "a lookup of "+other.Name, resolves(other))
		refusedInARow(t, "the node's address ("+nodeIP+":10250)", func() bool {
			return !strings.Contains(run("sh", "-c", "nc -w 2 "+nodeIP+" 10250 </dev/null; echo rc=$?"), "rc=1")
		})
		refusedInARow(t, "the other tenant's sandbox ("+otherIP+":8080)", func() bool {
			return strings.Contains(run("sh", "-c", "nc -w 2 "+otherIP+" 8080 </dev/null"), "sandbox")
		})
	})

	t.Run("verify shows the allow-list with traffic", func(t *testing.T) {
		out, err := e.paddockStdout(t, "verify", dir, "--format", "json")
		var rep verify.Report
		if derr := json.Unmarshal([]byte(out), &rep); derr != nil {
			t.Fatalf("verify JSON: %v (exit: %v)\n%s", derr, err, out)
		}
		for _, subject := range []string{ns + " named egress " + listed.Name, ns + " named egress " + other.Name, ns + " DNS " + other.Name} {
			r := resultFor(&rep, "V10", subject)
			if r == nil {
				t.Errorf("verify has no V10 result for %q", subject)
				continue
			}
			if r.Status != verify.Pass {
				t.Errorf("V10 %s: %s: %s", subject, r.Status, r.Reason)
			}
		}
	})

	// Each widening the sweep (S02) or the comparison reports for a Cilium
	// kind really opens what the finding says, and the fix closes it again.
	t.Run("Cilium widenings open what drift says, and their fix closes them", func(t *testing.T) {
		widenings := []struct {
			name    string
			apply   func(t *testing.T) error
			opens   func() bool // the traffic the widening lets through
			finding func(rep *drift.Report) bool
			fix     func(t *testing.T)
		}{
			{
				name: "an extra CiliumNetworkPolicy allowing every name",
				apply: func(t *testing.T) error {
					return createCilium(t, e, cnpGVR, ns, "widen-names", map[string]any{
						"endpointSelector": map[string]any{},
						"egress": []any{
							map[string]any{"toFQDNs": []any{map[string]any{"matchPattern": "*"}}, "toPorts": []any{map[string]any{"ports": []any{map[string]any{"port": "443", "protocol": "TCP"}}}}},
							map[string]any{"toEndpoints": []any{map[string]any{"matchLabels": map[string]any{"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}},
								"toPorts": []any{map[string]any{"ports": []any{map[string]any{"port": "53", "protocol": "ANY"}}, "rules": map[string]any{"dns": []any{map[string]any{"matchPattern": "*"}}}}}},
						},
					})
				},
				opens:   reaches(unlisted, unlisted.Name, 443),
				finding: sweepNames("CiliumNetworkPolicy", ns, "widen-names"),
				fix:     func(t *testing.T) { deleteCilium(t, e, cnpGVR, ns, "widen-names") },
			},
			{
				name: "an extra CiliumNetworkPolicy allowing the world",
				apply: func(t *testing.T) error {
					return createCilium(t, e, cnpGVR, ns, "widen-world", map[string]any{
						"endpointSelector": map[string]any{},
						"egress":           []any{map[string]any{"toEntities": []any{"world"}}},
					})
				},
				opens:   reaches(unlisted, unlisted.Addr(), 443),
				finding: sweepNames("CiliumNetworkPolicy", ns, "widen-world"),
				fix:     func(t *testing.T) { deleteCilium(t, e, cnpGVR, ns, "widen-world") },
			},
			{
				name: "a CiliumClusterwideNetworkPolicy selecting the tenant's pods",
				apply: func(t *testing.T) error {
					return createCilium(t, e, ccnpGVR, "", "widen-tenant", map[string]any{
						"endpointSelector": map[string]any{"matchLabels": map[string]any{"k8s:io.kubernetes.pod.namespace": ns}},
						"egress":           []any{map[string]any{"toEntities": []any{"world"}}},
					})
				},
				opens:   reaches(unlisted, unlisted.Addr(), 443),
				finding: sweepNames("CiliumClusterwideNetworkPolicy", "", "widen-tenant"),
				fix:     func(t *testing.T) { deleteCilium(t, e, ccnpGVR, "", "widen-tenant") },
			},
			{
				name: "the tenant's own policy gains a pattern",
				apply: func(t *testing.T) error {
					pattern := "*." + strings.SplitN(unlisted.Name, ".", 2)[1]
					_, err := k8s.RunKubectlAndGetOutputE(t, k8s.NewKubectlOptions("", e.kubeconfig, ns), "patch", "ciliumnetworkpolicy", manifests.AllowFQDNPolicy, "--type=json", "-p",
						fmt.Sprintf(`[{"op":"add","path":"/spec/egress/0/toFQDNs/-","value":{"matchPattern":%q}},{"op":"add","path":"/spec/egress/1/toPorts/0/rules/dns/-","value":{"matchPattern":%q}}]`, pattern, pattern))
					return err
				},
				opens: reaches(unlisted, unlisted.Name, 443),
				finding: func(rep *drift.Report) bool {
					r := findResource(rep, "CiliumNetworkPolicy", ns+"/"+manifests.AllowFQDNPolicy)
					return r != nil && r.Change == drift.Modified
				},
				fix: func(t *testing.T) { e.mustPaddock(t, "up", dir) },
			},
		}
		for _, w := range widenings {
			t.Run(w.name, func(t *testing.T) {
				if err := w.apply(t); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the widening lets the sandbox through", 60*time.Second, boolErr(w.opens, "still refused"))
				rep, _ := e.driftReport(t, 2, nil, dir)
				if !w.finding(rep) {
					t.Errorf("drift does not report the widening:\n%s\nunmanaged: %+v", driftShape(rep), rep.Unmanaged)
				}
				w.fix(t)
				refusedInARow(t, "after the fix, the traffic the widening opened", w.opens)
			})
		}
		e.driftReport(t, 0, nil, dir)
	})

	t.Run("the policy deleted out of band: refused everything, drift names it, up restores it", func(t *testing.T) {
		cnps := e.dyn.Resource(cnpGVR).Namespace(ns)
		if err := cnps.Delete(ctxT(t, 10*time.Second), manifests.AllowFQDNPolicy, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		refusedInARow(t, listed.Name+" without its policy (default deny)", reaches(listed, listed.Name, 443))
		refusedInARow(t, listed.Name+" by address without its policy", reaches(listed, listed.Addr(), 443))
		refusedInARow(t, "a lookup of "+listed.Name+" without its policy", resolves(listed))

		rep, _ := e.driftReport(t, 2, nil, dir)
		r := findResource(rep, "CiliumNetworkPolicy", ns+"/"+manifests.AllowFQDNPolicy)
		if r == nil || r.Change != drift.Missing {
			t.Fatalf("drift does not name the deleted CiliumNetworkPolicy %s/%s as deleted: %+v\n%s", ns, manifests.AllowFQDNPolicy, r, driftShape(rep))
		}
		t.Logf("drift: %s %s, repair: %s", r.Title(), r.Change, r.Repair)

		e.mustPaddock(t, "up", dir)
		eventually(t, "up restored "+listed.Name+":443", 60*time.Second, boolErr(reaches(listed, listed.Name, 443), "not reached"))
		refusedInARow(t, unlisted.Name+" by address after up", reaches(unlisted, unlisted.Addr(), 443))
	})
}

// readySandboxPod is a running pod of the namespace's warm pool.
func readySandboxPod(t *testing.T, e *env, ns string) string {
	t.Helper()
	var name string
	eventually(t, "a running sandbox in "+ns, 2*time.Minute, func() error {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctxT(t, 10*time.Second), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Name == "agent" {
				name = p.Name
				return nil
			}
		}
		return fmt.Errorf("%d pods, none a running sandbox", len(pods.Items))
	})
	return name
}

func podIP(t *testing.T, e *env, ns, name string) string {
	t.Helper()
	p, err := e.kube.CoreV1().Pods(ns).Get(ctxT(t, 10*time.Second), name, metav1.GetOptions{})
	if err != nil || p.Status.PodIP == "" {
		t.Fatalf("pod %s/%s has no address (%v)", ns, name, err)
	}
	return p.Status.PodIP
}

// nodeAddress is the real node's InternalIP.
func nodeAddress(t *testing.T, e *env) string {
	t.Helper()
	nodes, err := e.kube.CoreV1().Nodes().List(ctxT(t, 10*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				return a.Address
			}
		}
	}
	t.Fatal("no node has an InternalIP")
	return ""
}

// dialGreets connects to addr from this machine and, when greeting is set,
// reads it.
func dialGreets(addr, greeting string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if greeting == "" {
		return nil
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 256)
	n, _ := c.Read(buf)
	if !strings.Contains(string(buf[:n]), greeting) {
		return fmt.Errorf("%s said %q, want %q", addr, buf[:n], greeting)
	}
	return nil
}

func boolErr(ok func() bool, why string) func() error {
	return func() error {
		if ok() {
			return nil
		}
		return fmt.Errorf("%s", why)
	}
}

// refusedInARow: got must be false three times in a row within ten tries.
func refusedInARow(t *testing.T, what string, got func() bool) {
	t.Helper()
	streak := 0
	for i := 0; i < 10 && streak < 3; i++ {
		if got() {
			streak = 0
			time.Sleep(500 * time.Millisecond)
		} else {
			streak++
		}
	}
	if streak < 3 {
		t.Errorf("%s was not refused three times in a row", what)
	} else {
		t.Logf("%s: refused three times in a row", what)
	}
}

func resultFor(rep *verify.Report, id, subject string) *verify.Result {
	for i := range rep.Results {
		if rep.Results[i].ID == id && rep.Results[i].Subject == subject {
			return &rep.Results[i]
		}
	}
	return nil
}

var ccnpGVR = cnpGVR.GroupVersion().WithResource("ciliumclusterwidenetworkpolicies")

// createCilium creates a Cilium policy (kind from gvr) out of band, as a
// person with write access would; it is deleted at the end whatever happens.
func createCilium(t *testing.T, e *env, gvr schema.GroupVersionResource, ns, name string, spec map[string]any) error {
	kind := "CiliumNetworkPolicy"
	if gvr == ccnpGVR {
		kind = "CiliumClusterwideNetworkPolicy"
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": spec}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	t.Cleanup(func() { deleteCilium(t, e, gvr, ns, name) })
	_, err := e.dyn.Resource(gvr).Namespace(ns).Create(ctxT(t, 10*time.Second), u, metav1.CreateOptions{FieldManager: "kubectl-create"})
	return err
}

func deleteCilium(t *testing.T, e *env, gvr schema.GroupVersionResource, ns, name string) {
	err := e.dyn.Resource(gvr).Namespace(ns).Delete(ctxTimeout(10*time.Second), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

// sweepNames matches a report whose sweep names the object under S02.
func sweepNames(kind, ns, name string) func(rep *drift.Report) bool {
	return func(rep *drift.Report) bool {
		for _, f := range rep.Unmanaged {
			if f.Rule == drift.RuleNetworkOpen && f.Kind == kind && f.Namespace == ns && f.Name == name {
				return true
			}
		}
		return false
	}
}
