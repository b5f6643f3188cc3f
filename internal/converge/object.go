package converge

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// Comparison is what the whole-object comparison found.
type Comparison struct {
	// Report lists the objects that differ from the cluster (Modified,
	// Missing), with Checked and Compare set.
	Report *drift.Report
	// Requests counts what the comparison asked the API server.
	Lists, Gets, DryRuns int
	// Outputs are the stack's outputs as the last up left them, secrets
	// redacted.
	Outputs map[string]any

	// Objects are the objects compared and Clients the cluster's clients,
	// kept for a repair (CompareWhole sets them).
	Objects []*Object
	Clients *Clients
	// StateDigest is the digest of the checkpoint the comparison read (the
	// engine's stateDigest), to tell a state written since.
	StateDigest string
}

// Object is one declared object with its state and live counterparts.
type Object struct {
	Desired *unstructured.Unstructured
	State   *StateResource
	GVR     schema.GroupVersionResource
	Live    *unstructured.Unstructured // nil: missing or being deleted
	// Expected is the desired object as the server stores it; Diffs how
	// Live differs from it; Immutable, when set, why it cannot be updated
	// in place.
	Expected  map[string]any
	Diffs     []drift.Field
	Immutable string
}

// DeclaredObjects are the objects manifests.Build makes of p, for a
// comparison without the state (after the engine ran).
func DeclaredObjects(p *model.Platform) ([]*Object, error) {
	built, err := manifests.Build(p)
	if err != nil {
		return nil, err
	}
	var out []*Object
	for _, g := range built.Groups() {
		for _, u := range g.Objects {
			out = append(out, &Object{Desired: u, GVR: GVROf(u)})
		}
	}
	return out, nil
}

func resourceFor(dyn dynamic.Interface, o *Object) dynamic.ResourceInterface {
	if ns := o.Desired.GetNamespace(); ns != "" {
		return dyn.Resource(o.GVR).Namespace(ns)
	}
	return dyn.Resource(o.GVR)
}

// GVROf is the resource an object is served as. Every kind Paddock creates
// has the regular plural; a wrong guess fails the LIST, and the engine runs.
func GVROf(u *unstructured.Unstructured) schema.GroupVersionResource {
	gvr, _ := meta.UnsafeGuessKindToResource(u.GroupVersionKind())
	return gvr
}

// TypeToken is the kubernetes provider's type token of an object
// (kubernetes:core/v1:Namespace), as the components register it.
func TypeToken(apiVersion, kind string) string {
	gv := apiVersion
	if !strings.Contains(gv, "/") {
		gv = "core/" + gv
	}
	return "kubernetes:" + gv + ":" + kind
}

// ObjectKey is "namespace/name", or "name" for a cluster-scoped object: the
// resource name the components give it, and the report's Name.
func ObjectKey(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// urnName is the resource name at the end of a URN.
func urnName(urn string) string {
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		return urn[i+2:]
	}
	return urn
}

// describeKey turns "kubernetes:core/v1:Namespace::agents-a" into
// "Namespace agents-a".
func describeKey(key string) string {
	t, n, _ := strings.Cut(key, "::")
	if i := strings.LastIndex(t, ":"); i >= 0 {
		t = t[i+1:]
	}
	return t + " " + n
}

func oneLine(err error) string {
	s := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
