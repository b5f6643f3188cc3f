//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/render"
	"github.com/paddock-platform/paddock/internal/specload"
)

// assertConverged checks that the stack holds no pending operation, that the
// cluster and the state agree both ways (every object labelled as the
// platform's is in the state, every object of the state is in the cluster),
// and that the cluster holds what the spec in specDir declares: the very
// objects `up` applies and `render` writes, each with every field the spec
// sets, and no other object labelled as the platform's.
func assertConverged(t *testing.T, e *env, stack, platform, specDir string) {
	t.Helper()
	inStack, pending, err := e.engineFor().Inventory(stack)
	if err != nil {
		t.Fatalf("reading the state of %s: %v", stack, err)
	}
	if len(pending) > 0 {
		t.Errorf("stack %s still holds %d pending operation(s): %v", stack, len(pending), pending)
	}
	if len(inStack) == 0 {
		t.Fatalf("stack %s holds no Kubernetes object", stack)
	}
	labelled, err := drift.Labelled(ctxT(t, time.Minute), e.kube.Discovery(), e.meta, platform)
	if err != nil {
		t.Fatal(err)
	}
	orphans, missing := drift.Orphans(labelled, inStack)
	for _, o := range orphans {
		t.Errorf("orphan: %s %s/%s is labelled as %s's but not in its stack", o.Kind, o.Namespace, o.Name, platform)
	}
	for _, m := range missing {
		t.Errorf("missing: %s is in the stack but not in the cluster", m)
	}
	diffs, compared := specDiffs(t, e, specDir, labelled)
	for _, d := range diffs {
		t.Errorf("cluster ≠ spec: %s", d)
	}
	if compared < 30 {
		t.Errorf("compared only %d declared objects with the cluster", compared)
	}
}

// objectKey identifies an object across API versions of its group.
func objectKey(apiVersion, kind, namespace, name string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	return group + "/" + kind + "/" + namespace + "/" + name
}

// specDiffs compares the cluster with the objects the spec in dir declares,
// and says how many it compared.
func specDiffs(t *testing.T, e *env, dir string, labelled []drift.ObjectRef) ([]string, int) {
	t.Helper()
	p, err := specload.Load(dir, specload.Options{}, io.Discard)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	want, err := render.All(p)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.kube.Discovery()))
	var diffs []string
	declared := map[string]bool{}
	for _, w := range want {
		declared[objectKey(w.GetAPIVersion(), w.GetKind(), w.GetNamespace(), w.GetName())] = true
		what := fmt.Sprintf("%s %s", w.GetKind(), strings.TrimPrefix(w.GetNamespace()+"/"+w.GetName(), "/"))
		gvk := w.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: the cluster does not serve %s: %v", what, gvk, err))
			continue
		}
		ri := e.dyn.Resource(m.Resource)
		var live *unstructured.Unstructured
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			live, err = ri.Namespace(w.GetNamespace()).Get(ctxT(t, 10*time.Second), w.GetName(), metav1.GetOptions{})
		} else {
			live, err = ri.Get(ctxT(t, 10*time.Second), w.GetName(), metav1.GetOptions{})
		}
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: declared, not in the cluster: %v", what, err))
			continue
		}
		for _, d := range subsetDiff("", declaredFields(w), live.Object) {
			diffs = append(diffs, what+": "+d)
		}
	}
	for _, l := range labelled {
		if !declared[objectKey(l.APIVersion, l.Kind, l.Namespace, l.Name)] {
			diffs = append(diffs, fmt.Sprintf("%s is labelled as the platform's but the spec does not declare it", l))
		}
	}
	sort.Strings(diffs)
	return diffs, len(want)
}

// declaredFields is what of a declared object the cluster must hold: all of
// it but the metadata the server owns and Pulumi's own annotations (the
// engine reads them, they are not the object's).
func declaredFields(u *unstructured.Unstructured) map[string]any {
	c := render.Clean(u).Object
	md, _ := c["metadata"].(map[string]any)
	keep := map[string]any{}
	for _, k := range []string{"name", "namespace", "labels", "annotations"} {
		if v, ok := md[k]; ok {
			keep[k] = v
		}
	}
	c["metadata"] = keep
	return c
}

// subsetDiff lists where got lacks or differs from a field want sets. The
// server may add fields (defaults, status); it may not drop or change one.
// Quantities compare by value ("1024Mi" is "1Gi"), numbers by value.
func subsetDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			if len(w) == 0 && got == nil {
				return nil
			}
			return []string{fmt.Sprintf("%s: want an object, cluster has %v", orRoot(path), short(got))}
		}
		var out []string
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, present := g[k]
			if !present {
				if empty(w[k]) {
					continue
				}
				out = append(out, fmt.Sprintf("%s.%s: declared %v, absent in the cluster", path, k, short(w[k])))
				continue
			}
			out = append(out, subsetDiff(path+"."+k, w[k], gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			if len(w) == 0 && got == nil {
				return nil
			}
			return []string{fmt.Sprintf("%s: declared %d item(s), cluster has %v", orRoot(path), len(w), short(got))}
		}
		var out []string
		for i := range w {
			out = append(out, subsetDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	case string:
		if g, ok := got.(string); ok && g == w {
			return nil
		}
		if g, ok := got.(string); ok {
			qw, errW := resource.ParseQuantity(w)
			qg, errG := resource.ParseQuantity(g)
			if errW == nil && errG == nil && qw.Cmp(qg) == 0 {
				return nil
			}
		}
	case int64, float64, int32, int:
		if fw, ok := number(w); ok {
			if fg, ok := number(got); ok && fw == fg {
				return nil
			}
		}
	default:
		if fmt.Sprint(want) == fmt.Sprint(got) {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: declared %v, cluster has %v", orRoot(path), short(want), short(got))}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func orRoot(path string) string {
	if path == "" {
		return "(object)"
	}
	return path
}

func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}
