package drift

import (
	"context"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	fakemetadata "k8s.io/client-go/metadata/fake"

	"github.com/paddock-platform/paddock/internal/model"
)

// preferredDiscovery answers ServerPreferredResources with its resources
// (the fake's answers nothing).
type preferredDiscovery struct{ *fakediscovery.FakeDiscovery }

func (d preferredDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return d.Resources, nil
}

func partial(apiVersion, kind, namespace, name string, labels map[string]string, owned bool) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
	}
	if owned {
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxWarmPool", Name: "pool", UID: "1"}}
	}
	return o
}

// Labelled finds the platform's labelled objects of every listable type from
// their metadata alone, names each by the type it was listed as, and leaves
// out what a controller owns, other platforms' objects and kinds it cannot
// list. Orphans then reports those no stack holds.
func TestLabelledFromMetadataAndOrphans(t *testing.T) {
	ours := map[string]string{model.PlatformLabel: "demo"}
	theirs := map[string]string{model.PlatformLabel: "other"}
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := fakemetadata.NewSimpleMetadataClient(scheme,
		partial("v1", "Namespace", "", "agents-a", ours, false),
		partial("v1", "ConfigMap", "agents-a", "by-hand", ours, false),
		partial("v1", "ConfigMap", "agents-a", "unlabelled", nil, false),
		partial("v1", "ConfigMap", "agents-b", "other-platform", theirs, false),
		partial("v1", "Pod", "agents-a", "pool-sandbox", ours, true),
		partial("rbac.authorization.k8s.io/v1", "Role", "agents-a", "agent-orchestrator", ours, false),
	)
	disco := preferredDiscovery{fake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)}
	disco.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace", Verbs: []string{"list", "get"}},
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"list"}},
			{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: []string{"list"}},
			{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: []string{"get"}},
			{Name: "bindings", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
		}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "roles", Namespaced: true, Kind: "Role", Verbs: []string{"list"}},
		}},
	}
	got, err := Labelled(context.Background(), disco, meta, "demo")
	if err != nil {
		t.Fatal(err)
	}
	want := []ObjectRef{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "agents-a", Name: "by-hand"},
		{APIVersion: "v1", Kind: "Namespace", Name: "agents-a"},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role", Namespace: "agents-a", Name: "agent-orchestrator"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Labelled =\n%+v\nwant\n%+v", got, want)
	}

	inStack := []ObjectRef{
		{APIVersion: "v1", Kind: "Namespace", Name: "agents-a"},
		// Another version of the same group's kind is the same object.
		{APIVersion: "rbac.authorization.k8s.io/v1beta1", Kind: "Role", Namespace: "agents-a", Name: "agent-orchestrator"},
		{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "agents-a", Name: "agent-runtime"},
	}
	orphans, missing := Orphans(got, inStack)
	if len(orphans) != 1 || orphans[0].Rule != RuleOrphan || orphans[0].Name != "by-hand" {
		t.Errorf("orphans = %+v, want the hand-made ConfigMap alone", orphans)
	}
	if len(missing) != 1 || missing[0].Name != "agent-runtime" {
		t.Errorf("missing = %+v, want the ServiceAccount alone", missing)
	}
}
