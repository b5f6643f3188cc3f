package converge

import (
	"context"
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

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
)

// This file is what a run deletes of what the runs before it left (the
// engine's recover.go and journal.go find them): the selection, the
// deletion and the wait for it. It also holds the wait for the platform's
// namespaces and CRDs that a killed destroy left being deleted.

// pollEvery is the pause between two looks at what is still being deleted:
// a variable so tests can shorten it.
var pollEvery = 500 * time.Millisecond

// pruneKey identifies an object across the API versions of its group.
func pruneKey(o drift.ObjectRef) string {
	group := ""
	if i := strings.Index(o.APIVersion, "/"); i >= 0 {
		group = o.APIVersion[:i]
	}
	return group + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name
}

// PruneSelection is what a recovering run deletes: the labelled objects a
// dead run declared (so may have created) that no state holds and the spec
// does not declare. An object labelled by hand that no dead run declared is
// left to drift's S05 report.
func PruneSelection(labelled, deadDeclared, inState, declared []drift.ObjectRef) []drift.ObjectRef {
	keys := func(refs []drift.ObjectRef) map[string]bool {
		m := make(map[string]bool, len(refs))
		for _, r := range refs {
			m[pruneKey(r)] = true
		}
		return m
	}
	fromDead, held, wanted := keys(deadDeclared), keys(inState), keys(declared)
	var out []drift.ObjectRef
	seen := map[string]bool{}
	for _, o := range labelled {
		k := pruneKey(o)
		if fromDead[k] && !held[k] && !wanted[k] && !seen[k] {
			seen[k] = true
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return pruneKey(out[i]) < pruneKey(out[j]) })
	return out
}

func FirstRefs(refs []drift.ObjectRef, n int) string {
	var s []string
	for i, r := range refs {
		if i == n {
			s = append(s, fmt.Sprintf("(+%d)", len(refs)-n))
			break
		}
		s = append(s, r.String())
	}
	return strings.Join(s, ", ")
}

// resourceFor is the resource client of o.
func (c *Clients) resourceFor(o drift.ObjectRef) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	m, err := c.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}, gv.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("%s: %w", o, err)
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// DeleteLeftovers deletes objs, all at once (a namespace takes its objects
// along, so their own deletes may find them gone), and waits up to timeout
// for every one of them to be gone.
func DeleteLeftovers(ctx context.Context, c *Clients, objs []drift.ObjectRef, timeout time.Duration) error {
	get := func(ctx context.Context, o drift.ObjectRef) (finalizers []string, gone bool, err error) {
		gvr, namespaced, err := c.resourceFor(o)
		if err != nil {
			return nil, false, err
		}
		ri := c.Dyn.Resource(gvr)
		if namespaced {
			u, err := ri.Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, true, nil
			}
			if err != nil {
				return nil, false, err
			}
			return u.GetFinalizers(), false, nil
		}
		u, err := ri.Get(ctx, o.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		return u.GetFinalizers(), false, nil
	}
	background := metav1.DeletePropagationBackground
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, o := range objs {
		g.Go(func() error {
			gvr, namespaced, err := c.resourceFor(o)
			if err != nil {
				return err
			}
			opts := metav1.DeleteOptions{PropagationPolicy: &background}
			if namespaced {
				err = c.Dyn.Resource(gvr).Namespace(o.Namespace).Delete(gctx, o.Name, opts)
			} else {
				err = c.Dyn.Resource(gvr).Delete(gctx, o.Name, opts)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting %s: %w", o, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	left := objs
	for {
		var (
			mu   sync.Mutex
			next []drift.ObjectRef
			why  = map[string][]string{}
		)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for _, o := range left {
			g.Go(func() error {
				fin, gone, err := get(gctx, o)
				if err != nil {
					return fmt.Errorf("waiting for %s to be deleted: %w", o, err)
				}
				if !gone {
					mu.Lock()
					next = append(next, o)
					why[o.String()] = fin
					mu.Unlock()
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		if len(next) == 0 {
			return nil
		}
		left = next
		if time.Now().After(deadline) {
			sort.Slice(left, func(i, j int) bool { return pruneKey(left[i]) < pruneKey(left[j]) })
			var names []string
			for _, o := range left {
				s := o.String()
				if f := why[s]; len(f) > 0 {
					s += " (finalizers " + strings.Join(f, ", ") + ")"
				}
				names = append(names, s)
			}
			return fmt.Errorf("%d object(s) still being deleted after %s: %s", len(left), timeout, strings.Join(names, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// CRDResource is the resource of CustomResourceDefinitions.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// WaitTerminating waits, up to timeout, for the platform's namespaces and
// CRDs that are being deleted (a destroy killed midway leaves them so) to
// be gone, saying so on out: an apply into a namespace being deleted is
// refused, and a CRD being deleted takes what the apply creates along with
// it.
func WaitTerminating(ctx context.Context, c *Clients, out io.Writer, op, platform string, timeout time.Duration) error {
	selector := metav1.ListOptions{LabelSelector: model.PlatformLabel + "=" + platform}
	terminating := func() ([]string, error) {
		var names []string
		nss, err := c.Kube.CoreV1().Namespaces().List(ctx, selector)
		if err != nil {
			return nil, fmt.Errorf("listing the platform's namespaces: %w", err)
		}
		for _, ns := range nss.Items {
			if ns.DeletionTimestamp != nil {
				names = append(names, "namespace "+ns.Name)
			}
		}
		crds, err := c.Dyn.Resource(CRDResource).List(ctx, selector)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("listing the platform's CRDs: %w", err)
		}
		if crds != nil {
			for _, crd := range crds.Items {
				if crd.GetDeletionTimestamp() != nil {
					names = append(names, "CRD "+crd.GetName())
				}
			}
		}
		sort.Strings(names)
		return names, nil
	}
	names, err := terminating()
	if err != nil || len(names) == 0 {
		return err
	}
	start := time.Now()
	fmt.Fprintf(out, "paddock %s: waiting (up to %s) for %d object(s) of the platform still being deleted, as an interrupted destroy leaves them: %s\n",
		op, timeout, len(names), strings.Join(names, ", "))
	for len(names) > 0 {
		if time.Since(start) > timeout {
			return fmt.Errorf("%s: %s still being deleted after %s, so nothing was applied: see what holds them with `kubectl get %s -o yaml` (finalizers, status.conditions), then run %s again",
				op, strings.Join(names, ", "), timeout, kubectlRef(names[0]), op)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
		if names, err = terminating(); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "paddock %s: they are gone (%.1fs)\n", op, time.Since(start).Seconds())
	return nil
}

// kubectlRef turns "namespace x" or "CRD y" into kubectl's "namespace x" or
// "crd y".
func kubectlRef(name string) string {
	kind, obj, _ := strings.Cut(name, " ")
	return strings.ToLower(kind) + " " + obj
}
