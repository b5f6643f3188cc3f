// The fast path's comparison: the program's objects, the state's inputs and
// the live cluster's objects brought to one form and compared field by field
// (quantities by value, secrets by their marks).

package converge

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
)

// fastWorkers bounds the fast path's requests in flight (one LIST per kind
// plus the dry-runs; the rate limit is ClusterQPS).
const fastWorkers = 16

// FormsUse says how a comparison uses the cache of stored forms.
type FormsUse int

const (
	FormsCached    FormsUse = iota // every declared object: cached forms, the cache keeps only theirs
	FormsRecompute                 // every declared object: ask the server for every form
	FormsSubset                    // some objects: cached forms, the cache keeps the others too
)

// CompareWhole compares the live objects with objs whole (compareLive),
// with the stack's cache of stored forms, kept in the file cache ("" keeps
// none), taking the stored forms of the objects a run created from their
// creations (created.go) where it can (created may be nil). It keeps the
// objects and clients on the result for a repair, and says on out when the
// cache is not saved.
func CompareWhole(ctx context.Context, c *Clients, p *model.Platform, cache string, objs []*Object, use FormsUse, created *Creations, out io.Writer) (*Comparison, error) {
	v, err := c.Disco.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("the API server's version: %w", err)
	}
	// A stored form is what admission made of an object: the cache holds only
	// while the cluster's mutating admission is what it was when it was kept.
	admission, err := drift.AdmissionFingerprint(ctx, c.Kube)
	if err != nil {
		return nil, err
	}
	forms := loadStoredForms(cache, v.GitVersion+" mutating admission "+admission, use == FormsRecompute, use != FormsSubset)
	forms.created = created
	res, err := compareLive(ctx, c.Dyn, p.Name, objs, forms, p.SensitiveValues())
	if err != nil {
		return nil, err
	}
	if err := forms.save(); err != nil {
		fmt.Fprintf(out, "paddock: the cache of stored forms was not saved (%s); the next run asks the server again\n", oneLine(err))
	}
	res.Objects, res.Clients = objs, c
	return res, nil
}

// comparableInputs is an object's inputs in the form both the program's
// and the state's compare in: what the provider drops from the inputs it
// records (read-only metadata, a CRD's status and preserveUnknownFields:
// false) dropped, as are its own "__" keys, the status no apply sets, and
// null values.
func comparableInputs(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		if strings.HasPrefix(k, "__") || k == "status" {
			continue
		}
		out[k] = v
	}
	if md, ok := out["metadata"].(map[string]any); ok {
		c := make(map[string]any, len(md))
		for k, v := range md {
			switch k {
			case "creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp", "generation", "managedFields", "resourceVersion", "uid":
				continue
			}
			c[k] = v
		}
		out["metadata"] = c
	}
	if spec, ok := out["spec"].(map[string]any); ok && out["kind"] == "CustomResourceDefinition" && spec["preserveUnknownFields"] == false {
		c := make(map[string]any, len(spec))
		for k, v := range spec {
			if k != "preserveUnknownFields" {
				c[k] = v
			}
		}
		out["spec"] = c
	}
	return NormalizeInputs(out).(map[string]any)
}

// NormalizeInputs is an object as the program registers it (k8sres.toInput):
// JSON values, numbers as float64, null map entries dropped.
func NormalizeInputs(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e == nil {
				continue
			}
			out[k] = NormalizeInputs(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = NormalizeInputs(e)
		}
		return out
	}
	return jsonNumber(v)
}

// jsonNumber turns any Go number into float64, as JSON decodes numbers.
func jsonNumber(v any) any {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int32:
		return float64(n)
	case int64:
		return float64(n)
	case float32:
		return float64(n)
	}
	return v
}

// markSecrets wraps each string that contains a sensitive value as a
// secret, as the program's stack transformation does.
func markSecrets(v any, sensitive []string) any {
	if len(sensitive) == 0 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = markSecrets(e, sensitive)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = markSecrets(e, sensitive)
		}
		return x
	case string:
		for _, s := range sensitive {
			if s != "" && strings.Contains(x, s) {
				return secret{x}
			}
		}
	}
	return v
}

// inputsEqual compares declared inputs with recorded ones: the same keys
// and elements, leaves equal as Kubernetes means them (the provider records
// known kinds after a round trip through their Go types, which may rewrite
// a quantity's "1000m" as "1"), and secrets where secrets were (a value that
// became secret, or stopped being one, differs).
func inputsEqual(a, b any) bool { return inputsEqualIn(a, b, false) }

func inputsEqualIn(a, b any, quantities bool) bool {
	switch x := a.(type) {
	case secret:
		y, ok := b.(secret)
		return ok && inputsEqualIn(x.value, y.value, quantities)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !inputsEqualIn(v, w, quantities || quantityField[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !inputsEqualIn(x[i], y[i], quantities) {
				return false
			}
		}
		return true
	}
	switch b.(type) {
	case secret, map[string]any, []any:
		return false
	}
	return scalarEqual(a, b, quantities)
}

// compareLive reads the live platform with one LIST per kind and compares
// every object whole with its desired form as the server stores it
// (drift.Compare; forms answers that form from its cache or a dry-run).
func compareLive(ctx context.Context, dyn dynamic.Interface, platform string, objs []*Object, forms *storedForms, sensitive []string) (*Comparison, error) {
	res := &Comparison{Report: &drift.Report{}}
	var mu sync.Mutex
	count := func(n *int) { mu.Lock(); *n++; mu.Unlock() }

	byGVR := map[schema.GroupVersionResource][]*Object{}
	var gvrs []schema.GroupVersionResource
	for _, o := range objs {
		if _, ok := byGVR[o.GVR]; !ok {
			gvrs = append(gvrs, o.GVR)
		}
		byGVR[o.GVR] = append(byGVR[o.GVR], o)
	}
	selector := model.PlatformLabel + "=" + platform
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(fastWorkers)
	for _, gvr := range gvrs {
		g.Go(func() error {
			count(&res.Lists)
			list, err := dyn.Resource(gvr).List(gctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("listing %s: %w", gvr.Resource, err)
			}
			live := map[string]*unstructured.Unstructured{}
			if list != nil {
				for i := range list.Items {
					live[ObjectKey(&list.Items[i])] = &list.Items[i]
				}
			}
			for _, o := range byGVR[gvr] {
				o.Live = live[ObjectKey(o.Desired)]
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	// An object missing from its list may only have lost the label.
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(fastWorkers)
	for _, o := range objs {
		if o.Live != nil {
			continue
		}
		g.Go(func() error {
			count(&res.Gets)
			u, err := resourceFor(dyn, o).Get(gctx, o.Desired.GetName(), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("reading %s %s: %w", o.Desired.GetKind(), ObjectKey(o.Desired), err)
			}
			o.Live = u
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(fastWorkers)
	for _, o := range objs {
		o.Diffs, o.Expected, o.Immutable = nil, nil, ""
		if o.Live == nil || o.Live.GetDeletionTimestamp() != nil {
			o.Live = nil
			continue
		}
		g.Go(func() error {
			// immutableOr: the live object can no longer take the desired one
			// in place (an immutable field was changed by recreating it, a
			// RuntimeClass's handler say): compare with the desired object as
			// built and say so; never an error, whichever answer it came from.
			immutableOr := func(expected map[string]any, err error) (map[string]any, error) {
				if apierrors.IsInvalid(err) {
					o.Immutable = oneLine(err)
					return o.Desired.Object, nil
				}
				if err != nil {
					return nil, fmt.Errorf("the stored form of %s %s (a dry-run update): %w", o.Desired.GetKind(), ObjectKey(o.Desired), err)
				}
				return expected, nil
			}
			expected, asked, err := forms.get(gctx, dyn, o, sensitive)
			if asked {
				count(&res.DryRuns)
			}
			if expected, err = immutableOr(expected, err); err != nil {
				return err
			}
			diffs := drift.Compare(expected, o.Live, drift.Options{})
			if len(diffs) > 0 && !asked && o.Immutable == "" {
				// A cached form is believed only when it agrees.
				count(&res.DryRuns)
				if expected, err = immutableOr(forms.refresh(gctx, dyn, o, sensitive)); err != nil {
					return err
				}
				diffs = drift.Compare(expected, o.Live, drift.Options{})
			}
			o.Expected = expected
			o.Diffs = drift.Fields(diffs, sensitive)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	for _, o := range objs {
		r := drift.Resource{Type: TypeToken(o.Desired.GetAPIVersion(), o.Desired.GetKind()), Kind: o.Desired.GetKind(), Name: ObjectKey(o.Desired), Cause: drift.CauseCluster}
		if o.State != nil {
			r.URN, r.Type = o.State.URN, o.State.Type
		}
		switch {
		case o.Live == nil:
			r.Change, r.Repair = drift.Missing, "`paddock up` recreates it"
		case o.Immutable != "":
			r.Change, r.Repair, r.Fields = drift.Replaced, "`paddock up` replaces it ("+o.Immutable+")", o.Diffs
		case len(o.Diffs) > 0:
			r.Change, r.Repair, r.Fields = drift.Modified, "`paddock up` puts the object back as Paddock applies it, removing what was added", o.Diffs
		default:
			continue
		}
		res.Report.Resources = append(res.Report.Resources, r)
	}
	res.Report.Checked = len(objs)
	return res, nil
}

// scalarEqual compares two leaf values as Kubernetes means them: numbers by
// value whatever their Go type, and, in a field that holds quantities,
// quantities by amount ("1Gi" and "1073741824", "500m" and "0.5"). Elsewhere
// strings compare exactly: a label "1.0" changed to "1" is drift.
func scalarEqual(d, l any, quantities bool) bool {
	d, l = jsonNumber(d), jsonNumber(l)
	if reflect.DeepEqual(d, l) {
		return true
	}
	if !quantities {
		return false
	}
	ds, dok := quantityText(d)
	ls, lok := quantityText(l)
	if !dok || !lok {
		return false
	}
	dq, err1 := apiresource.ParseQuantity(ds)
	lq, err2 := apiresource.ParseQuantity(ls)
	return err1 == nil && err2 == nil && dq.Cmp(lq) == 0
}

// quantityField are the keys under which Kubernetes objects hold quantities
// (resource requests and limits, quota, limit ranges, runtime class
// overhead, volume sizes).
var quantityField = map[string]bool{
	"requests": true, "limits": true, "hard": true, "used": true, "default": true, "defaultRequest": true,
	"max": true, "min": true, "maxLimitRequestRatio": true, "podFixed": true, "capacity": true,
	"allocatable": true, "sizeLimit": true, "storage": true,
}

// quantityText is a leaf that may be a quantity, as text.
func quantityText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return fmt.Sprint(x), true
	}
	return "", false
}
