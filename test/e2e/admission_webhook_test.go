//go:build e2e

package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gruntwork-io/terratest/modules/k8s"

	"github.com/paddock-platform/paddock/internal/drift"
)

// injectorName is the MutatingWebhookConfiguration the test installs.
const injectorName = "paddock-e2e-inject-keys"

// TestAdmissionWebhook installs a real mutating webhook, served on loopback
// over TLS under a CA the test makes, that injects envFrom: secretRef
// llm-keys into the tenant's SandboxTemplates and a sidecar into its pods.
// drift must report both, naming the webhook (the template's envFrom as a
// field admission added, though the server-side dry-run reference holds it
// too; the pods as S09); up must refuse to call the template repaired while
// the webhook stands; trusted in the spec, the reports show the trust and
// up passes; deleted, the trust is said to be unused and up repairs the
// template.
func TestAdmissionWebhook(t *testing.T) {
	e := live
	spec, dir, p := oneTenantSpec(t, "admission", "adm")
	tn := p.Tenants[0]
	ns, tpl := tn.Namespace, tn.Templates[0].Name
	obj := ns + "/" + tpl
	ref := "mutatingwebhookconfiguration/" + injectorName

	e.mustPaddock(t, "up", dir)
	defer e.destroyAndWait(t, nil, []string{ns}, dir)
	if rep, _ := e.driftReport(t, 0, nil, dir); rep.Drifted() {
		t.Fatalf("drift before the webhook: %+v %+v", rep.Resources, rep.Unmanaged)
	}

	caPEM, serving := testTLS(t)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serving}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(injectKeys), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	url := fmt.Sprintf("https://%s/mutate", l.Addr())

	install := func() {
		t.Helper()
		cfg := injector(url, caPEM, ns)
		if _, err := e.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctxT(t, 10*time.Second), cfg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	remove := func() {
		_ = e.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctxTimeout(10*time.Second), injectorName, metav1.DeleteOptions{})
	}
	install()
	defer remove()

	// The API server calls the webhook once it has read its configuration:
	// a server-side dry-run of the template then comes back with the envFrom.
	templates := e.dyn.Resource(templatesGVR).Namespace(ns)
	eventually(t, "the webhook injects into a dry-run", 60*time.Second, func() error {
		u, err := templates.Get(ctxTimeout(5*time.Second), tpl, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got, err := templates.Update(ctxTimeout(10*time.Second), u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if !hasEnvFrom(got) {
			return fmt.Errorf("no envFrom in the dry-run's answer")
		}
		return nil
	})
	// Any write of the template now stores the envFrom: a patch that changes
	// nothing of its own is one.
	if _, err := k8s.RunKubectlAndGetOutputE(t, e.kubectl, "patch", "sandboxtemplate", tpl, "-n", ns, "--type=merge", "-p", `{"metadata":{}}`); err != nil {
		t.Fatal(err)
	}
	if !liveEnvFrom(t, e, tpl, ns) {
		t.Fatal("the webhook did not inject envFrom into the live template")
	}

	// drift: the envFrom, named as admission's, and the webhook's reach.
	rep, _ := e.driftReport(t, 2, nil, dir)
	res := findResource(rep, "SandboxTemplate", obj)
	if res == nil {
		t.Fatalf("SandboxTemplate %s not reported: %+v", obj, rep.Resources)
	}
	f := findField(res, "envFrom")
	if f == nil || len(f.AddedBy) != 1 || f.AddedBy[0] != ref || !strings.Contains(f.AdmissionText(), ref+" can rewrite sandboxtemplates.extensions.agents.x-k8s.io in "+ns) {
		t.Fatalf("envFrom not reported as added by %s: %+v", ref, res.Fields)
	}
	t.Logf("drift: %s %s: %s %s", res.Kind, res.Name, f.Path, f.AdmissionText())
	s09 := findingsOf(rep, drift.RuleMutatingAdmission, injectorName)
	if !strings.Contains(s09, "can rewrite create pods in "+ns) || !strings.Contains(s09, "can rewrite create, update sandboxtemplates.extensions.agents.x-k8s.io in "+ns) {
		t.Fatalf("S09 does not report the webhook's reach over the tenant's pods and templates: %+v", rep.Unmanaged)
	}

	// up writes the template back and finds the envFrom back: it fails,
	// naming the webhook and the fix.
	up := e.runPaddock(t, nil, "up", dir)
	if up.code == 0 {
		t.Fatalf("up passed while the webhook re-adds envFrom:\n%s", up.stdout)
	}
	out := up.stdout + up.stderr
	for _, want := range []string{"not repaired: mutating admission adds it back on every write", ref, "kubectl delete mutatingwebhookconfiguration " + injectorName, `trust_admission "` + injectorName + `"`} {
		if !strings.Contains(out, want) {
			t.Errorf("up's failure does not say %q:\n%s", want, tail(out, 30))
		}
	}

	// Trusted in the spec: no drift, no S09, the trust shown with what the
	// webhook reaches and the envFrom it keeps; up passes.
	trusted := spec + fmt.Sprintf("\ntrust_admission %q {\n  kind   = \"MutatingWebhookConfiguration\"\n  reason = \"the test's gateway hands sandboxes their keys\"\n}\n", injectorName)
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(trusted), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _ = e.driftReport(t, 0, nil, dir)
	if len(rep.Trusted) != 1 || !rep.Trusted[0].Live || !strings.Contains(rep.Trusted[0].Reach, "pods in "+ns) ||
		len(rep.Trusted[0].Kept) != 1 || !strings.Contains(rep.Trusted[0].Kept[0], "envFrom") {
		t.Fatalf("trusted: %+v", rep.Trusted)
	}
	t.Logf("trusted: %s", rep.Trusted[0].Text())
	text := e.runPaddock(t, nil, "drift", dir)
	if text.code != 0 || !strings.Contains(text.stdout, ref+" trusted by the spec") {
		t.Errorf("the text report does not show the trust (exit %d):\n%s", text.code, text.stdout)
	}
	if up := e.runPaddock(t, nil, "up", dir); up.code != 0 {
		t.Errorf("up with the webhook trusted: exit %d\n%s\n%s", up.code, up.stdout, tail(up.stderr, 20))
	} else if !strings.Contains(up.stdout, "trusted in the spec (the test's gateway hands sandboxes their keys); kept") || strings.Contains(up.stdout, "repaired SandboxTemplate") {
		// A write would only see the field added again: nothing to repair.
		t.Errorf("up with the webhook trusted must keep the envFrom and say so, not repair the template:\n%s", up.stdout)
	}

	// Deleted: the trust is said to be unused; the envFrom it left is now
	// plain drift, which up repairs.
	remove()
	eventually(t, "the webhook no longer injects", 60*time.Second, func() error {
		u, err := templates.Get(ctxTimeout(5*time.Second), tpl, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers")
		for _, c := range cs {
			delete(c.(map[string]any), "envFrom")
		}
		_ = unstructured.SetNestedSlice(u.Object, cs, "spec", "podTemplate", "spec", "containers")
		got, err := templates.Update(ctxTimeout(10*time.Second), u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if hasEnvFrom(got) {
			return fmt.Errorf("the dry-run still comes back with envFrom")
		}
		return nil
	})
	rep, _ = e.driftReport(t, 2, nil, dir)
	if len(rep.Trusted) != 1 || rep.Trusted[0].Live || !strings.Contains(rep.Trusted[0].Text(), "the trust is unused") {
		t.Errorf("the deleted trusted webhook is not said to be gone: %+v", rep.Trusted)
	}
	if res := findResource(rep, "SandboxTemplate", obj); res == nil || findField(res, "envFrom") == nil {
		t.Errorf("the envFrom the deleted webhook left is not drift: %+v", rep.Resources)
	}
	e.mustPaddock(t, "up", dir)
	if liveEnvFrom(t, e, tpl, ns) {
		t.Error("up left the envFrom in the template")
	}
	if rep, _ := e.driftReport(t, 0, nil, dir); len(rep.Trusted) != 1 || rep.Trusted[0].Live {
		t.Errorf("after the repair: %+v", rep.Trusted)
	}
}

// findingsOf is the reasons of every finding of rule on the object name
// (S09 makes one per webhook of a configuration).
func findingsOf(rep *drift.Report, rule, name string) string {
	var out []string
	for _, f := range rep.Unmanaged {
		if f.Rule == rule && f.Name == name {
			out = append(out, f.Reason)
		}
	}
	return strings.Join(out, "\n")
}

func hasEnvFrom(u *unstructured.Unstructured) bool {
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers")
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok && m["envFrom"] != nil {
			return true
		}
	}
	return false
}

func liveEnvFrom(t *testing.T, e *env, tpl, ns string) bool {
	t.Helper()
	u, err := e.dyn.Resource(templatesGVR).Namespace(ns).Get(ctxT(t, 10*time.Second), tpl, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return hasEnvFrom(u)
}

// injector is the webhook configuration: envFrom into the tenant's
// templates on create and update, a sidecar into its pods on create. It
// selects the tenant's namespace alone, and fails open, so a test that dies
// leaves no write of the cluster blocked.
func injector(url string, caPEM []byte, ns string) *admissionv1.MutatingWebhookConfiguration {
	ignore, none, timeout := admissionv1.Ignore, admissionv1.SideEffectClassNone, int32(5)
	hook := func(name, path string, rule admissionv1.RuleWithOperations) admissionv1.MutatingWebhook {
		u := url + path
		return admissionv1.MutatingWebhook{
			Name:                    name,
			ClientConfig:            admissionv1.WebhookClientConfig{URL: &u, CABundle: caPEM},
			Rules:                   []admissionv1.RuleWithOperations{rule},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}
	}
	return &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: injectorName},
		Webhooks: []admissionv1.MutatingWebhook{
			hook("templates.inject-keys.example.com", "/templates", admissionv1.RuleWithOperations{
				Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule:       admissionv1.Rule{APIGroups: []string{"extensions.agents.x-k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"sandboxtemplates"}}}),
			hook("pods.inject-keys.example.com", "/pods", admissionv1.RuleWithOperations{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}),
		},
	}
}

// injectKeys answers an AdmissionReview: a JSON patch that adds envFrom to
// the first container of a template that has none, or a sidecar to a pod.
func injectKeys(w http.ResponseWriter, r *http.Request) {
	var review struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Request    map[string]any `json:"request"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	response := map[string]any{"uid": review.Request["uid"], "allowed": true}
	var patch []map[string]any
	object, _ := review.Request["object"].(map[string]any)
	switch {
	case strings.HasSuffix(r.URL.Path, "/templates"):
		u := &unstructured.Unstructured{Object: object}
		if !hasEnvFrom(u) {
			patch = []map[string]any{{"op": "add", "path": "/spec/podTemplate/spec/containers/0/envFrom",
				"value": []any{map[string]any{"secretRef": map[string]any{"name": "llm-keys"}}}}}
		}
	case strings.HasSuffix(r.URL.Path, "/pods"):
		patch = []map[string]any{{"op": "add", "path": "/spec/containers/-", "value": map[string]any{
			"name": "tap", "image": "localhost/paddock/busybox:v1", "command": []any{"/bin/sh", "-c", "sleep 3600"},
			"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "10m", "memory": "16Mi", "ephemeral-storage": "16Mi"},
				"limits":   map[string]any{"cpu": "50m", "memory": "32Mi", "ephemeral-storage": "32Mi"}},
		}}}
	}
	if len(patch) > 0 {
		b, _ := json.Marshal(patch)
		response["patchType"] = "JSONPatch"
		response["patch"] = b // encoding/json writes []byte as base64, as the API wants
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

// testTLS makes a CA and a serving certificate it signs for 127.0.0.1: the
// CA's PEM for the webhook's caBundle, and the serving key pair.
func testTLS(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	ca, caPEM := testCA(t)
	return []byte(caPEM), ca.issue(t, "127.0.0.1")
}
