package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/flowcontrol"
)

// FloorWorkers is how many server-side applies the floor keeps in flight.
const FloorWorkers = 16

// Stages splits objects the way any client must apply them: first what the
// rest depends on (CRDs, namespaces and other cluster-scoped objects), then
// everything else, which needs the CRDs established.
func Stages(objs []*unstructured.Unstructured) (first, rest []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GetNamespace() == "" || o.GetKind() == "CustomResourceDefinition" {
			first = append(first, o)
		} else {
			rest = append(rest, o)
		}
	}
	return first, rest
}

// floorClients are the floors' clients: no client-side rate limit, as
// fast as the API server answers. Building them is part of the time
// measured, as it is part of any tool's.
func floorClients(cfg *rest.Config) (dynamic.Interface, *restmapper.DeferredDiscoveryRESTMapper, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)), nil
}

// Floor applies objs with server-side apply as fast as a client can: no
// client-side rate limit, FloorWorkers in flight, the dependency order of
// Stages and nothing else (no state, no diff, no wait for readiness). It is
// the lower bound any tool that applies these objects is compared against.
func Floor(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) (time.Duration, error) {
	start := time.Now()
	dyn, mapper, err := floorClients(cfg)
	if err != nil {
		return 0, err
	}
	first, rest := Stages(objs)
	if err := applyAll(ctx, dyn, mapper, first); err != nil {
		return 0, err
	}
	if err := waitEstablished(ctx, dyn, first); err != nil {
		return 0, err
	}
	mapper.Reset()
	if err := applyAll(ctx, dyn, mapper, rest); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func applyAll(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, objs []*unstructured.Unstructured) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(FloorWorkers)
	for _, o := range objs {
		g.Go(func() error { return apply(gctx, dyn, mapper, o) })
	}
	return g.Wait()
}

func apply(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	var m *meta.RESTMapping
	var err error
	// A CRD just established may take a moment to appear in discovery.
	for i := 0; i < 50; i++ {
		if m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			break
		}
		if rm, ok := mapper.(interface{ Reset() }); ok {
			rm.Reset()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	force := true
	_, err = ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "paddock-bench-floor", Force: force})
	if err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// waitEstablished waits for every CRD among objs to be Established.
func waitEstablished(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		for {
			u, err := dyn.Resource(crdResource).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if err == nil && established(u) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %w", o.GetName(), ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// FloorDestroy deletes objs as fast as a client can: every cluster-scoped
// object (namespaces, CRDs, cluster roles, runtime classes...) and every
// namespaced object outside the platform's own namespaces at once,
// FloorWorkers in flight, no client-side rate limit, background propagation;
// what lives in the platform's namespaces goes with them. It returns when
// every namespace and CRD of objs is gone: the lower bound paddock destroy
// is compared against, on the same cluster.
func FloorDestroy(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) (time.Duration, error) {
	start := time.Now()
	dyn, mapper, err := floorClients(cfg)
	if err != nil {
		return 0, err
	}
	if err := deleteAll(ctx, dyn, mapper, DirectDeletes(objs)); err != nil {
		return 0, err
	}
	if err := waitGone(ctx, dyn, objs, 100*time.Millisecond); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// DirectDeletes are the objects of objs a destroy must delete itself: the
// cluster-scoped ones and those in namespaces the platform does not own.
// Everything else is deleted with its namespace.
func DirectDeletes(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	owned := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" {
			owned[o.GetName()] = true
		}
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if ns := o.GetNamespace(); ns == "" || !owned[ns] {
			out = append(out, o)
		}
	}
	return out
}

func deleteAll(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, objs []*unstructured.Unstructured) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(FloorWorkers)
	policy := metav1.DeletePropagationBackground
	for _, o := range objs {
		g.Go(func() error {
			gvk := o.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if meta.IsNoMatchError(err) {
				return nil // its CRD is gone already, and it with it
			}
			if err != nil {
				return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			}
			err = ri.Delete(gctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
			}
			return nil
		})
	}
	return g.Wait()
}

var namespaceResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// waitGone lists namespaces and CRDs (two requests a round, whatever the
// platform's size) until none of objs' is left, and names what is left when
// ctx ends or after FloorDestroyTimeout.
func waitGone(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured, every time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, FloorDestroyTimeout)
	defer cancel()
	want := map[schema.GroupVersionResource]map[string]bool{namespaceResource: {}, crdResource: {}}
	for _, o := range objs {
		switch {
		case o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1":
			want[namespaceResource][o.GetName()] = true
		case o.GetKind() == "CustomResourceDefinition":
			want[crdResource][o.GetName()] = true
		}
	}
	for {
		var left []string
		for res, names := range want {
			if len(names) == 0 {
				continue
			}
			l, err := dyn.Resource(res).List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("listing %s while waiting for them to go: %w", res.Resource, err)
			}
			for _, item := range l.Items {
				if names[item.GetName()] {
					left = append(left, res.Resource+"/"+item.GetName())
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			sort.Strings(left)
			return fmt.Errorf("floor destroy: still there when the wait ended (%v, bound %s): %s (a finalizer whose controller is gone? look with kubectl get -o yaml)", ctx.Err(), FloorDestroyTimeout, strings.Join(left, ", "))
		case <-time.After(every):
		}
	}
}

// FloorDestroyTimeout bounds the floor's wait for namespaces and CRDs to go.
const FloorDestroyTimeout = 10 * time.Minute
