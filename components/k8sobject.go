// Package components holds Paddock's Pulumi ComponentResources, one per concept
// (platform, Agent Sandbox release, runtime class, tenant, template, warm pool).
// Each reads the model, builds its objects with package objects and registers them
// as real pulumi-kubernetes resources parented to itself. Providers are passed
// down from the caller; components never read HCL, the CLI or the engine.
package components

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/paddock-platform/paddock/components/objects"
)

// Object is one Kubernetes object registered with the kubernetes provider under its
// canonical type token (kubernetes:core/v1:Namespace, kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool, ...).
// It is the same resource the typed SDK constructors register, built from the
// typed k8s.io object rather than from hand-copied Pulumi args.
type Object struct {
	pulumi.CustomResourceState

	ApiVersion pulumi.StringOutput `pulumi:"apiVersion"`
	Kind       pulumi.StringOutput `pulumi:"kind"`
	Metadata   pulumi.MapOutput    `pulumi:"metadata"`
	Status     pulumi.AnyOutput    `pulumi:"status"`
}

// TypeToken is the kubernetes provider's token for an object's apiVersion and kind.
func TypeToken(apiVersion, kind string) string {
	gv := apiVersion
	if !strings.Contains(gv, "/") {
		gv = "core/" + gv
	}
	return fmt.Sprintf("kubernetes:%s:%s", gv, kind)
}

// ResourceName is the Pulumi name of an object: namespace/name, or name.
func ResourceName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// registerTyped registers a typed k8s object.
func registerTyped(ctx *pulumi.Context, obj runtime.Object, opts ...pulumi.ResourceOption) (*Object, error) {
	u, err := objects.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return registerObject(ctx, u, opts...)
}

// registerObject registers an unstructured object with the kubernetes provider.
func registerObject(ctx *pulumi.Context, u *unstructured.Unstructured, opts ...pulumi.ResourceOption) (*Object, error) {
	props, ok := toInput(u.Object).(pulumi.Map)
	if !ok {
		return nil, fmt.Errorf("object %s is not a map", ResourceName(u))
	}
	var res Object
	if err := ctx.RegisterResource(TypeToken(u.GetAPIVersion(), u.GetKind()), ResourceName(u), props, &res, opts...); err != nil {
		return nil, fmt.Errorf("registering %s %s: %w", u.GetKind(), ResourceName(u), err)
	}
	return &res, nil
}

// toInput converts unstructured JSON values into Pulumi inputs, keeping map keys
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
