package drift

import (
	"context"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/paddock-platform/paddock/internal/model"
)

// A trusted webhook is not an S09 finding, but every report shows it with
// what it can rewrite; a trusted one that is not in the cluster is said; an
// untrusted one of a similar name is still reported (trust is by exact kind
// and name).
func TestTrustedAdmissionSkippedAndShown(t *testing.T) {
	p := platform()
	ns := p.Tenants[0].Namespace
	p.TrustedAdmission = []model.TrustedAdmission{
		{Kind: model.AdmissionWebhook, Name: "mesh", Reason: "the mesh injects its sidecar", Src: model.Range{Filename: "spec.hcl", Line: 12, Column: 1}},
		{Kind: model.AdmissionWebhook, Name: "gone", Reason: "was removed", Src: model.Range{Filename: "spec.hcl", Line: 16, Column: 1}},
		// Trusted as a policy: the webhook configuration "templates" is another object.
		{Kind: model.AdmissionPolicy, Name: "templates", Reason: "a policy of that name"},
	}
	c := afterUp(t, p)
	kube := fake.NewClientset(append(append([]runtime.Object{}, c.typed...),
		mutating("mesh", hook("sidecar", nil, writes("", "pods", admissionv1.Create))),
		mutating("mesh-2", hook("sidecar", nil, writes("", "pods", admissionv1.Create))),
		mutating("templates", hook("envfrom", nil, writes("extensions.agents.x-k8s.io", "sandboxtemplates"))),
	)...)
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = servedForTest()
	found, err := Sweep(context.Background(), p, kube, nil)
	if err != nil {
		t.Fatal(err)
	}
	var reported []string
	for _, f := range found {
		if f.Rule == RuleMutatingAdmission {
			reported = append(reported, f.Name)
		}
	}
	if !reflect.DeepEqual(reported, []string{"mesh-2", "templates"}) {
		t.Errorf("S09 reported %q, want mesh-2 and templates (mesh is trusted)", reported)
	}

	trust, err := AdmissionTrust(context.Background(), p, kube)
	if err != nil {
		t.Fatal(err)
	}
	if len(trust) != 3 {
		t.Fatalf("trust = %+v", trust)
	}
	if m := trust[0]; !m.Live || !strings.Contains(m.Text(), "mutatingwebhookconfiguration/mesh trusted by the spec (spec.hcl:12:1): the mesh injects its sidecar. Now: webhook sidecar.example.com (service mesh/sidecar) can rewrite create pods in agent-sandbox-system, "+ns) {
		t.Errorf("mesh: %s", m.Text())
	}
	if g := trust[1]; g.Live || !strings.Contains(g.Text(), `It is not in the cluster: the trust is unused; remove the trust_admission "gone" block`) {
		t.Errorf("gone: %s", g.Text())
	}
	if pol := trust[2]; pol.Live {
		t.Errorf("a policy of the name of a webhook configuration: %+v", pol)
	}
}

// What only trusted objects could have added is kept out of the drift and
// shown with the trust; what an untrusted object could have added too stays.
func TestKeepTrusted(t *testing.T) {
	p := &model.Platform{TrustedAdmission: []model.TrustedAdmission{{Kind: model.AdmissionWebhook, Name: "mesh", Reason: "r"}}}
	res := []Resource{
		{Kind: "SandboxTemplate", Name: "a/x", Fields: []Field{
			{Path: "spec.a", AddedBy: []string{"mutatingwebhookconfiguration/mesh"}},
			{Path: "spec.b", AddedBy: []string{"mutatingwebhookconfiguration/mesh", "mutatingwebhookconfiguration/other"}},
			{Path: "spec.c"},
		}},
		{Kind: "SandboxTemplate", Name: "a/y", Fields: []Field{{Path: "spec.a", AddedBy: []string{"mutatingwebhookconfiguration/mesh"}}}},
		{Kind: "Namespace", Name: "a", Change: Missing},
	}
	left, trust := KeepTrusted(p, res, TrustNotes(p))
	var got []string
	for _, r := range left {
		got = append(got, r.Title())
		for _, f := range r.Fields {
			got = append(got, f.Path)
		}
	}
	if want := []string{"SandboxTemplate a/x", "spec.b", "spec.c", "Namespace a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
	if want := []string{"SandboxTemplate a/x spec.a", "SandboxTemplate a/y spec.a"}; !reflect.DeepEqual(trust[0].Kept, want) {
		t.Errorf("kept %q, want %q", trust[0].Kept, want)
	}
	// Without the trust nothing is kept.
	if left, _ := KeepTrusted(&model.Platform{}, res, nil); !reflect.DeepEqual(left, res) {
		t.Error("kept without a trust")
	}
}
