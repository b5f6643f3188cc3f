// Direct destroy's deleter: what the plan (destroyplan.go) names is deleted
// through the API server, layer by layer, and waited on until gone.

package converge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"

	"github.com/paddock-platform/paddock/internal/model"
)

// DirectDeleter deletes objects through the API server in parallel and
// waits for them to be gone. It only needs their metadata: the metadata
// client sends and lists no bodies (the Agent Sandbox CRDs alone are over
// a megabyte).
type DirectDeleter struct {
	client  metadata.Interface
	mapper  meta.RESTMapper
	out     io.Writer
	workers int
	timeout time.Duration
	// poll is the first pause between two lists of what is left; it grows
	// up to directDestroyMaxPoll.
	poll time.Duration
}

// destroyClients builds the metadata client and REST mapper direct destroy
// uses for the platform's cluster: metadata only, since it deletes and
// lists without needing object bodies (the Agent Sandbox CRDs alone are
// over 1 MB).
func destroyClients(p *model.Platform) (metadata.Interface, meta.RESTMapper, error) {
	cfg, err := restConfigFor(p)
	if err != nil {
		return nil, nil, err
	}
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return client, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)), nil
}

// NewDirectDeleter is the deleter of direct destroy for the platform's
// cluster (destroyClients), saying on out what it does, its waits bounded
// for a stack of objects objects (directDestroyBound).
func NewDirectDeleter(p *model.Platform, out io.Writer, objects int) (*DirectDeleter, error) {
	client, mapper, err := destroyClients(p)
	if err != nil {
		return nil, err
	}
	return &DirectDeleter{client: client, mapper: mapper, out: out, workers: directDestroyWorkers, timeout: directDestroyBound(objects), poll: 100 * time.Millisecond}, nil
}

// target is an object resolved to the resource the API server serves it as.
type target struct {
	obj        DestroyObject
	gvr        schema.GroupVersionResource
	namespaced bool
}

// resolve maps objects to their resources. A kind the cluster no longer
// serves has no objects left (its CRD's deletion took them): it is skipped.
func (d *DirectDeleter) resolve(objs []DestroyObject) ([]target, error) {
	var out []target
	for _, o := range objs {
		m, err := d.mapper.RESTMapping(o.GVK.GroupKind(), o.GVK.Version)
		if meta.IsNoMatchError(err) {
			// The version may be gone while the kind is still served.
			m, err = d.mapper.RESTMapping(o.GVK.GroupKind())
		}
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("looking up %s: %w", o, err)
		}
		out = append(out, target{obj: o, gvr: m.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace})
	}
	return out, nil
}

// deleteAll deletes every target at once, workers at a time. An object
// already gone is deleted.
func (d *DirectDeleter) deleteAll(ctx context.Context, targets []target) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(d.workers)
	background := metav1.DeletePropagationBackground
	var mu sync.Mutex
	var failed []string
	for _, t := range targets {
		g.Go(func() error {
			ri := d.client.Resource(t.gvr)
			var err error
			if t.namespaced {
				err = ri.Namespace(t.obj.Namespace).Delete(gctx, t.obj.Name, metav1.DeleteOptions{PropagationPolicy: &background})
			} else {
				err = ri.Delete(gctx, t.obj.Name, metav1.DeleteOptions{PropagationPolicy: &background})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				mu.Lock()
				failed = append(failed, fmt.Sprintf("%s: %v", t.obj, err))
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("deleting %d object(s) failed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

// awaited is what a wait is for: the named objects, and every object of
// the kinds in kinds that lives in one of namespaces.
type awaited struct {
	objects    []target
	kinds      []target // obj and namespaced unused: one per kind
	namespaces map[string]bool
}

// leftover is an object still there, with what holds it.
type leftover struct {
	what       string
	finalizers []string
	deleting   bool
}

// waitGone polls, one list per resource, until nothing awaited is left,
// and fails after d.timeout naming what is still there and its finalizers.
func (d *DirectDeleter) waitGone(ctx context.Context, what string, a awaited) error {
	type list struct {
		gvr       schema.GroupVersionResource
		kind      string
		namespace string // "" lists all namespaces
		names     map[string]bool
		anyIn     map[string]bool
	}
	byGVR := map[schema.GroupVersionResource]*list{}
	var lists []*list
	get := func(t target) *list {
		l, ok := byGVR[t.gvr]
		if !ok {
			l = &list{gvr: t.gvr, kind: t.obj.GVK.Kind, namespace: t.obj.Namespace, names: map[string]bool{}, anyIn: map[string]bool{}}
			byGVR[t.gvr] = l
			lists = append(lists, l)
		}
		return l
	}
	for _, t := range a.objects {
		l := get(t)
		if l.namespace != t.obj.Namespace {
			l.namespace = ""
		}
		l.names[t.obj.Namespace+"/"+t.obj.Name] = true
	}
	for _, k := range a.kinds {
		l := get(target{obj: DestroyObject{GVK: k.obj.GVK}, gvr: k.gvr})
		l.namespace = ""
		for ns := range a.namespaces {
			l.anyIn[ns] = true
		}
	}
	if len(lists) == 0 {
		return nil
	}
	deadline := time.Now().Add(d.timeout)
	pause := d.poll
	for {
		var mu sync.Mutex
		var left []leftover
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(d.workers)
		for _, l := range lists {
			g.Go(func() error {
				items, err := d.client.Resource(l.gvr).Namespace(l.namespace).List(gctx, metav1.ListOptions{})
				if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
					return nil // the kind is gone, and its objects with it
				}
				if err != nil {
					return fmt.Errorf("listing %s: %w", l.gvr.Resource, err)
				}
				for _, it := range items.Items {
					key := it.Namespace + "/" + it.Name
					if !l.names[key] && !l.anyIn[it.Namespace] {
						continue
					}
					name := it.Name
					if it.Namespace != "" {
						name = key
					}
					mu.Lock()
					left = append(left, leftover{what: l.kind + " " + name, finalizers: it.Finalizers, deleting: it.DeletionTimestamp != nil})
					mu.Unlock()
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return stillThereError(what, d.timeout, left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*3/2, directDestroyMaxPoll)
	}
}

// stillThereError names what a wait found left after timeout, and what
// holds each.
func stillThereError(what string, timeout time.Duration, left []leftover) error {
	sort.Slice(left, func(i, j int) bool { return left[i].what < left[j].what })
	var b strings.Builder
	fmt.Fprintf(&b, "after %s, %d object(s) of %s are still there:", timeout, len(left), what)
	const shown = 20
	for i, l := range left {
		if i == shown {
			fmt.Fprintf(&b, "\n  ... and %d more", len(left)-shown)
			break
		}
		fmt.Fprintf(&b, "\n  %s", l.what)
		switch {
		case len(l.finalizers) > 0:
			fmt.Fprintf(&b, " (being deleted, held by finalizers: %s)", strings.Join(l.finalizers, ", "))
		case l.deleting:
			b.WriteString(" (being deleted)")
		default:
			b.WriteString(" (not being deleted: created again since?)")
		}
	}
	b.WriteString("\n  the state still holds every object: once whatever holds them lets go (a finalizer's controller must run), run destroy again")
	return errors.New(b.String())
}

// Run deletes the plan's objects in the one order they need, and returns
// once every one is gone.
func (d *DirectDeleter) Run(ctx context.Context, plan *DestroyPlan) error {
	pools, err := d.resolve(plan.WarmPools)
	if err != nil {
		return err
	}
	tenants, err := d.resolve(plan.Tenants.all())
	if err != nil {
		return err
	}
	release, err := d.resolve(plan.Release.all())
	if err != nil {
		return err
	}
	runtimeClasses, err := d.resolve(plan.RuntimeClasses.all())
	if err != nil {
		return err
	}
	var sandboxKinds []target
	sandboxKind := map[schema.GroupKind]bool{}
	for _, gk := range plan.SandboxKinds {
		sandboxKind[gk] = true
		m, err := d.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue // its CRD is gone, and its objects with it
		}
		if err != nil {
			return fmt.Errorf("looking up %s: %w", gk, err)
		}
		sandboxKinds = append(sandboxKinds, target{obj: DestroyObject{GVK: m.GroupVersionKind}, gvr: m.Resource})
	}
	tenantNamespaces := map[string]bool{}
	for _, ns := range plan.Tenants.Namespaces {
		tenantNamespaces[ns.Name] = true
	}

	// Each step says when it ended, so the next bottleneck is named.
	start := time.Now()
	since := func() string { return time.Since(start).Round(10 * time.Millisecond).String() }
	// 1. The tenants, all at once, their warm pools first: no refill for
	// the controller to attempt in a terminating namespace.
	fmt.Fprintf(d.out, "  deleting %d warm pool(s), then %d tenant namespace(s) and %d other tenant object(s)\n", len(plan.WarmPools), len(plan.Tenants.Namespaces), len(plan.Tenants.Objects))
	if err := d.deleteAll(ctx, pools); err != nil {
		return err
	}
	if err := d.deleteAll(ctx, tenants); err != nil {
		return err
	}
	// 2. Their Agent Sandbox objects, which the release's controller may
	// have to finalize.
	sandboxes := awaited{kinds: sandboxKinds, namespaces: tenantNamespaces}
	for _, t := range tenants {
		if sandboxKind[t.obj.GVK.GroupKind()] {
			sandboxes.objects = append(sandboxes.objects, t)
		}
	}
	if err := d.waitGone(ctx, "the tenants' Agent Sandbox objects", sandboxes); err != nil {
		return err
	}
	// 3. The release, while the tenant namespaces finish.
	fmt.Fprintf(d.out, "  %s: the tenants' sandbox objects are gone; deleting the Agent Sandbox release: %d namespace(s) and %d other object(s)\n", since(), len(plan.Release.Namespaces), len(plan.Release.Objects))
	if err := d.deleteAll(ctx, release); err != nil {
		return err
	}
	// 4. The runtime classes, once no tenant pod is left to run under one.
	if err := d.waitGone(ctx, "the tenants", awaited{objects: tenants}); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  %s: the tenants are gone; deleting %d runtime class(es)\n", since(), len(runtimeClasses))
	if err := d.deleteAll(ctx, runtimeClasses); err != nil {
		return err
	}
	if err := d.waitGone(ctx, "the release and runtime classes", awaited{objects: append(release, runtimeClasses...)}); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  %s: the release and runtime classes are gone\n", since())
	return nil
}
