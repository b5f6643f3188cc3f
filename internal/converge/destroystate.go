package converge

import (
	"encoding/json"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// The part of a stack's deployment the direct destroy plan reads. A stack at
// the spec's limit (1,000 tenants) holds about 27,000 resources; decoding
// them whole, every input and output as maps, took more memory than the rest
// of destroy together (2.2 GiB at 1,000 tenants). Here each resource is read
// into the few fields the plan needs and everything else is skipped by the
// decoder without being kept. A field of an unexpected shape (a secret where
// a name was, say) reads as absent, as it did when the maps were read with
// type assertions: the plan then leaves the stack to Pulumi's destroy.

type destroyState struct {
	// Only counted: a pending operation sends the stack to Pulumi.
	PendingOperations []struct{}        `json:"pending_operations"`
	Resources         []destroyResource `json:"resources"`
}

type destroyResource struct {
	URN            resource.URN `json:"urn"`
	Custom         bool         `json:"custom"`
	Type           string       `json:"type"`
	ID             string       `json:"id"`
	Provider       string       `json:"provider"`
	Protect        bool         `json:"protect"`
	RetainOnDelete bool         `json:"retainOnDelete"`
	Inputs         destroyProps `json:"inputs"`
	Outputs        destroyProps `json:"outputs"`
}

// destroyProps are the properties a plan reads of a resource's inputs or
// outputs: a Kubernetes object's identity, a provider's kubeconfig and
// context, and what a CustomResourceDefinition defines.
type destroyProps struct {
	ObjectIdentity
	Kubeconfig lenientString          `json:"kubeconfig"`
	Context    lenientString          `json:"context"`
	Spec       lenientObject[crdSpec] `json:"spec"`
}

type crdSpec struct {
	Group lenientString `json:"group"`
	Scope lenientString `json:"scope"`
	Names lenientObject[struct {
		Kind lenientString `json:"kind"`
	}] `json:"names"`
}

// decodeDestroyState reads deployment (a stack's exported state).
func decodeDestroyState(deployment []byte) (*destroyState, error) {
	var d destroyState
	if err := json.Unmarshal(deployment, &d); err != nil {
		return nil, err
	}
	return &d, nil
}
