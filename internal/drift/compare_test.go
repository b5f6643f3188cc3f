package drift

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// decode is a JSON object as the API server's answers decode (int64 numbers).
func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON([]byte(s)); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return u.Object
}

func liveOf(t *testing.T, s string, managed ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: decode(t, s)}
	u.SetManagedFields(managed)
	return u
}

func entry(manager string, op metav1.ManagedFieldsOperationType, at time.Time, fields string) metav1.ManagedFieldsEntry {
	tm := metav1.NewTime(at)
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: &tm, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

const denyAll = `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy",
 "metadata":{"name":"default-deny","namespace":"agents-a","labels":{"paddock.dev/platform":"demo"}},
 "spec":{"podSelector":{},"policyTypes":["Ingress","Egress"]}}`

func paths(diffs []Difference) []string {
	var out []string
	for _, d := range diffs {
		out = append(out, d.Path.String())
	}
	return out
}

// What the server and its controllers write is no drift: metadata every
// write changes, status, and a controller's own annotation.
func TestCompareIgnoresWhatTheServerWrites(t *testing.T) {
	expected := decode(t, denyAll)
	live := liveOf(t, `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy",
	 "metadata":{"name":"default-deny","namespace":"agents-a","labels":{"paddock.dev/platform":"demo"},
	  "uid":"u1","resourceVersion":"42","generation":3,"creationTimestamp":"2026-12-01T00:00:00Z"},
	 "spec":{"podSelector":{},"policyTypes":["Ingress","Egress"]},"status":{"anything":true}}`,
		entry("pulumi-kubernetes-abc", metav1.ManagedFieldsOperationApply, time.Now(), `{"f:spec":{"f:podSelector":{},"f:policyTypes":{}}}`))
	if d := Compare(expected, live, Options{}); len(d) != 0 {
		t.Fatalf("server-written fields taken for drift: %v", paths(d))
	}
	dep := decode(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"c","namespace":"s"},"spec":{"replicas":1}}`)
	liveDep := liveOf(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"c","namespace":"s","annotations":{"deployment.kubernetes.io/revision":"4"}},"spec":{"replicas":1}}`)
	if d := Compare(dep, liveDep, Options{}); len(d) != 0 {
		t.Fatalf("the deployment controller's revision taken for drift: %v", paths(d))
	}
}

// The classes of out-of-band edit that a comparison of declared fields
// misses: each is drift, at its path, attributed to its writer.
func TestCompareSeesWhatTheSpecDoesNotDeclare(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	ours := entry("pulumi-kubernetes-abc", metav1.ManagedFieldsOperationApply, at.Add(-time.Hour), `{"f:spec":{"f:podSelector":{},"f:policyTypes":{}}}`)
	cases := []struct {
		name, live, fields, wantPath, wantBy string
	}{
		{"ingress from anywhere added",
			`{"podSelector":{},"policyTypes":["Ingress","Egress"],"ingress":[{}]}`,
			`{"f:spec":{"f:ingress":{}}}`, "spec.ingress", "kubectl-edit"},
		{"egress to the internet in two halves",
			`{"podSelector":{},"policyTypes":["Ingress","Egress"],"egress":[{"to":[{"ipBlock":{"cidr":"0.0.0.0/1"}},{"ipBlock":{"cidr":"128.0.0.0/1"}}]}]}`,
			`{"f:spec":{"f:egress":{}}}`, "spec.egress", "kubectl-edit"},
		{"a narrower pod selector",
			`{"podSelector":{"matchLabels":{"x":"y"}},"policyTypes":["Ingress","Egress"]}`,
			`{"f:spec":{"f:podSelector":{"f:matchLabels":{".":{},"f:x":{}}}}}`, "spec.podSelector.matchLabels", "kubectl-edit"},
		{"a policy type removed",
			`{"podSelector":{},"policyTypes":["Ingress"]}`,
			`{"f:spec":{"f:policyTypes":{}}}`, "spec.policyTypes[1]", "kubectl-edit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			live := liveOf(t, `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy",
			 "metadata":{"name":"default-deny","namespace":"agents-a","labels":{"paddock.dev/platform":"demo"}},"spec":`+c.live+`}`,
				ours, entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, at, c.fields))
			d := Compare(decode(t, denyAll), live, Options{})
			if len(d) == 0 {
				t.Fatal("not reported")
			}
			var hit *Difference
			for i := range d {
				if d[i].Path.String() == c.wantPath {
					hit = &d[i]
				}
			}
			if hit == nil {
				t.Fatalf("paths %v, want %s", paths(d), c.wantPath)
			}
			if len(hit.Writers) == 0 || hit.Writers[0].Manager != c.wantBy || !hit.Writers[0].Time.Equal(at) || hit.Writers[0].Operation != "Update" {
				t.Fatalf("writers %+v, want %s at %s first", hit.Writers, c.wantBy, at)
			}
		})
	}
}

// A guardrail switched off by a matchCondition, and its binding narrowed by
// an objectSelector: fields nested in the object, not declared by the spec.
func TestCompareGuardrailSwitchedOff(t *testing.T) {
	expected := decode(t, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding",
	 "metadata":{"name":"g"},"spec":{"policyName":"p","validationActions":["Deny"],
	  "matchResources":{"namespaceSelector":{"matchLabels":{"paddock.dev/platform":"demo"}},"objectSelector":{},"matchPolicy":"Equivalent"}}}`)
	live := liveOf(t, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding",
	 "metadata":{"name":"g"},"spec":{"policyName":"p","validationActions":["Deny"],
	  "matchResources":{"namespaceSelector":{"matchLabels":{"paddock.dev/platform":"demo"}},"objectSelector":{"matchLabels":{"never":"x"}},"matchPolicy":"Equivalent"}}}`,
		entry("evil", metav1.ManagedFieldsOperationApply, time.Now(), `{"f:spec":{"f:matchResources":{"f:objectSelector":{"f:matchLabels":{"f:never":{}}}}}}`))
	d := Compare(expected, live, Options{})
	if got := paths(d); len(got) != 1 || got[0] != "spec.matchResources.objectSelector.matchLabels" || d[0].Writers[0].Manager != "evil" {
		t.Fatalf("got %v %+v", got, d)
	}
}

// Keyed lists compare by key: a volume slipped in at the front is one added
// element, and the secret it mounts is named in its value.
func TestCompareKeyedListInsertAtFront(t *testing.T) {
	expected := decode(t, `{"apiVersion":"v1","kind":"X","metadata":{"name":"t"},"spec":{"volumes":[{"name":"tmp","emptyDir":{}},{"name":"work","emptyDir":{}}]}}`)
	live := liveOf(t, `{"apiVersion":"v1","kind":"X","metadata":{"name":"t"},"spec":{"volumes":[{"name":"evil","secret":{"secretName":"keys"}},{"name":"tmp","emptyDir":{}},{"name":"work","emptyDir":{}}]}}`,
		entry("kubectl-patch", metav1.ManagedFieldsOperationUpdate, time.Now(), `{"f:spec":{"f:volumes":{"k:{\"name\":\"evil\"}":{".":{},"f:name":{},"f:secret":{"f:secretName":{}}}}}}`))
	d := Compare(expected, live, Options{})
	if got := paths(d); len(got) != 1 || got[0] != "spec.volumes[name=evil]" {
		t.Fatalf("got %v", got)
	}
	if len(d[0].Writers) != 1 || d[0].Writers[0].Manager != "kubectl-patch" {
		t.Fatalf("writers %+v", d[0].Writers)
	}
	// The same elements reordered are drift too: order matters (the first
	// container is the main one).
	re := liveOf(t, `{"apiVersion":"v1","kind":"X","metadata":{"name":"t"},"spec":{"volumes":[{"name":"work","emptyDir":{}},{"name":"tmp","emptyDir":{}}]}}`)
	if got := paths(Compare(expected, re, Options{})); len(got) != 1 || got[0] != "spec.volumes" {
		t.Fatalf("reordered: %v", got)
	}
}

// envFrom injected into a container, a label removed, a value changed: each
// at its path; a removed field has no writer to name.
func TestCompareContainerAndMetadata(t *testing.T) {
	expected := decode(t, `{"apiVersion":"v1","kind":"X","metadata":{"name":"t","labels":{"a":"1","pod-security.kubernetes.io/enforce":"restricted"}},
	 "spec":{"containers":[{"name":"agent","image":"img:1"}]}}`)
	live := liveOf(t, `{"apiVersion":"v1","kind":"X","metadata":{"name":"t","labels":{"a":"2"}},
	 "spec":{"containers":[{"name":"agent","image":"img:1","envFrom":[{"secretRef":{"name":"llm-key"}}]}]}}`)
	d := Compare(expected, live, Options{})
	want := map[string]bool{
		"metadata.labels.a": true, `metadata.labels["pod-security.kubernetes.io/enforce"]`: true,
		"spec.containers[name=agent].envFrom": true,
	}
	if got := paths(d); len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, x := range d {
		if !want[x.Path.String()] {
			t.Errorf("unexpected %s", x.Path)
		}
		if x.Path.String() == `metadata.labels["pod-security.kubernetes.io/enforce"]` && (x.Live != nil || x.Expected != "restricted") {
			t.Errorf("removed label: %+v", x)
		}
	}
}

// Numbers compare by value whatever a decoder made of them (the cache is
// JSON decoded into float64; the server's answers are int64).
func TestCompareNumbersByValue(t *testing.T) {
	var cached map[string]any
	if err := json.Unmarshal([]byte(`{"kind":"X","spec":{"replicas":2,"ratio":0.5}}`), &cached); err != nil {
		t.Fatal(err)
	}
	live := liveOf(t, `{"kind":"X","spec":{"replicas":2,"ratio":0.5}}`)
	if d := Compare(cached, live, Options{}); len(d) != 0 {
		t.Fatalf("equal numbers differ: %v", paths(d))
	}
}

func TestFieldsRedactSecretsAndNameWriters(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	d := []Difference{{Path: Path{{key: "data"}, {key: "token"}}, Expected: "s3cret-value", Live: "other",
		Writers: []Writer{{Manager: "kubectl-edit", Operation: "Update", Time: at}, {Manager: "pulumi-kubernetes-abc", Operation: "Apply"}}}}
	f := Fields(d, []string{"s3cret-value"})
	if f[0].Declared != "[secret]" || f[0].Live != "other" {
		t.Fatalf("%+v", f[0])
	}
	if by := f[0].By(); by != "kubectl-edit (update at 2026-12-02T06:00:00Z)" {
		t.Fatalf("by %q", by)
	}
	b, _ := json.Marshal(f)
	if strings.Contains(string(b), "s3cret") {
		t.Fatalf("secret in %s", b)
	}
}

func TestCarryControllerFields(t *testing.T) {
	body := decode(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"c"}}`)
	live := decode(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"c","annotations":{"deployment.kubernetes.io/revision":"4","evil":"x"}}}`)
	CarryControllerFields(body, live)
	ann, _, _ := unstructured.NestedStringMap(body, "metadata", "annotations")
	if len(ann) != 1 || ann["deployment.kubernetes.io/revision"] != "4" {
		t.Fatalf("carried %v", ann)
	}
}

func TestPathString(t *testing.T) {
	p := Path{{key: "metadata"}, {key: "labels"}, {key: "a.b/c"}}
	if p.String() != `metadata.labels["a.b/c"]` {
		t.Fatal(p.String())
	}
	if got := splitPath(p.String()); strings.Join(got, "|") != "metadata|labels|a.b/c" {
		t.Fatal(got)
	}
}

// A warm pool scaled out through /scale (`kubectl scale`, an autoscaler):
// the writer is named, with the subresource it wrote through; a status
// writer never is.
func TestCompareNamesWritersThroughScale(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	ours := entry("pulumi-kubernetes-abc", metav1.ManagedFieldsOperationApply, at.Add(-time.Hour), `{"f:spec":{"f:replicas":{},"f:sandboxTemplateRef":{"f:name":{}}}}`)
	scaled := entry("kubectl", metav1.ManagedFieldsOperationUpdate, at, `{"f:spec":{"f:replicas":{}}}`)
	scaled.Subresource = "scale"
	status := entry("agent-sandbox-controller", metav1.ManagedFieldsOperationUpdate, at.Add(time.Minute), `{"f:spec":{"f:replicas":{}}}`)
	status.Subresource = "status"
	const pool = `{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxWarmPool","metadata":{"name":"agent","namespace":"agents-a"},"spec":{"replicas":%d,"sandboxTemplateRef":{"name":"agent"}}}`
	live := liveOf(t, fmt.Sprintf(pool, 40), ours, scaled, status)
	d := Compare(decode(t, fmt.Sprintf(pool, 2)), live, Options{})
	if len(d) != 1 || d[0].Path.String() != "spec.replicas" {
		t.Fatalf("differences %v, want spec.replicas", paths(d))
	}
	if len(d[0].Writers) == 0 || d[0].Writers[0].Manager != "kubectl" || d[0].Writers[0].Subresource != "scale" {
		t.Fatalf("writers %+v, want kubectl through /scale first", d[0].Writers)
	}
	for _, w := range d[0].Writers {
		if w.Subresource == "status" {
			t.Errorf("a status writer named for spec.replicas: %+v", w)
		}
	}
	if by := Fields(d, nil)[0].By(); !strings.Contains(by, "kubectl (update through /scale at 2026-12-02T06:00:00Z)") {
		t.Errorf("by %q", by)
	}
}
