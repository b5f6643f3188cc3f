// Package components holds Paddock's Pulumi ComponentResources, one per concept
// (platform, Agent Sandbox release, runtime class, tenant, template, warm pool).
// Each reads the model, builds its objects with package manifests and registers them
// as real pulumi-kubernetes resources parented to itself. Providers are passed
// down from the caller; components never read HCL, the CLI or the engine.
package components

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/paddock-platform/paddock/components/internal/k8sres"
)

// Object is one Kubernetes object registered with the kubernetes provider.
type Object = k8sres.Object

// TypeToken is the kubernetes provider's token for an object's apiVersion and kind.
func TypeToken(apiVersion, kind string) string { return k8sres.TypeToken(apiVersion, kind) }

// ResourceName is the Pulumi name of an object: namespace/name, or name.
func ResourceName(u *unstructured.Unstructured) string { return k8sres.Name(u) }

func registerTyped(ctx *pulumi.Context, obj runtime.Object, opts ...pulumi.ResourceOption) (*Object, error) {
	return k8sres.Register(ctx, obj, opts...)
}

func registerObject(ctx *pulumi.Context, u *unstructured.Unstructured, opts ...pulumi.ResourceOption) (*Object, error) {
	return k8sres.RegisterUnstructured(ctx, u, opts...)
}
