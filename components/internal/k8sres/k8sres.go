// Package k8sres registers Kubernetes objects (typed k8s.io/api values or
// unstructured) as pulumi-kubernetes resources under their canonical type tokens
// (kubernetes:core/v1:Namespace, kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool, ...):
// the same resources the typed SDK constructors register, built from the
// upstream Go types rather than hand-copied Pulumi args. Both the in-cluster
// components and the GCP layer register through it.
package k8sres

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/paddock-platform/paddock/internal/manifests"
)

// Object is one Kubernetes object registered with the kubernetes provider.
type Object struct {
	pulumi.CustomResourceState

	ApiVersion pulumi.StringOutput `pulumi:"apiVersion"`
	Kind       pulumi.StringOutput `pulumi:"kind"`
	Metadata   pulumi.MapOutput    `pulumi:"metadata"`
	Status     pulumi.AnyOutput    `pulumi:"status"`
}

// TypeToken is the kubernetes provider's token for an apiVersion and kind.
func TypeToken(apiVersion, kind string) string {
	gv := apiVersion
	if !strings.Contains(gv, "/") {
		gv = "core/" + gv
	}
	return fmt.Sprintf("kubernetes:%s:%s", gv, kind)
}

// Name is the Pulumi name of an object: namespace/name, or name.
func Name(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// Register registers a typed object.
func Register(ctx *pulumi.Context, obj runtime.Object, opts ...pulumi.ResourceOption) (*Object, error) {
	u, err := manifests.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return RegisterUnstructured(ctx, u, opts...)
}

// RegisterUnstructured registers an object that has no typed Go form.
func RegisterUnstructured(ctx *pulumi.Context, u *unstructured.Unstructured, opts ...pulumi.ResourceOption) (*Object, error) {
	props, ok := toInput(u.Object).(pulumi.Map)
	if !ok {
		return nil, fmt.Errorf("object %s is not a map", Name(u))
	}
	var res Object
	if err := ctx.RegisterResource(TypeToken(u.GetAPIVersion(), u.GetKind()), Name(u), props, &res, opts...); err != nil {
		return nil, fmt.Errorf("registering %s %s: %w", u.GetKind(), Name(u), err)
	}
	return &res, nil
}

// toInput converts unstructured JSON values into Pulumi inputs, with map keys
// in sorted order so the registered inputs are stable run to run.
func toInput(v any) pulumi.Input {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		m := pulumi.Map{}
		for _, k := range keys {
			if x[k] == nil {
				continue
			}
			m[k] = toInput(x[k])
		}
		return m
	case []any:
		a := make(pulumi.Array, 0, len(x))
		for _, e := range x {
			a = append(a, toInput(e))
		}
		return a
	case string:
		return pulumi.String(x)
	case bool:
		return pulumi.Bool(x)
	case int64:
		return pulumi.Int(int(x))
	case int32:
		return pulumi.Int(int(x))
	case int:
		return pulumi.Int(x)
	case float64:
		return pulumi.Float64(x)
	default:
		return pulumi.Any(x)
	}
}
