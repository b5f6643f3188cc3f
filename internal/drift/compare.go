package drift

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// This file is the one home of "how does a live object differ from what
// Paddock applies". `up` (its fast path and its repair), `drift` and
// `verify` all call Compare; none keeps a comparison of its own.
//
// The whole object is compared, not the fields the spec happens to declare:
// a rule added to a default-deny policy, a matchCondition that switches a
// guardrail off or a volume slipped into a template are as much drift as a
// changed declared value. To compare without false positives from what the
// API server adds (defaults, allocated values), the reference is the
// desired object as the server stores it (Expected: the engine gets it
// from a server-side dry-run of the desired object), and what is never
// Paddock's to set is left out of both sides (Ignored).

// Writer is who last wrote a field, from the object's managedFields.
type Writer struct {
	Manager   string    `json:"manager"`
	Operation string    `json:"operation"`
	Time      time.Time `json:"time,omitempty"`
	// Subresource is the subresource it wrote through ("scale": `kubectl
	// scale`, an autoscaler), "" for the object itself.
	Subresource string `json:"subresource,omitempty"`
}

func (w Writer) String() string {
	s := w.Manager + " (" + strings.ToLower(w.Operation)
	if w.Subresource != "" {
		s += " through /" + w.Subresource
	}
	if !w.Time.IsZero() {
		s += " at " + w.Time.UTC().Format(time.RFC3339)
	}
	return s + ")"
}

// controllerFields are fields of Paddock's objects, by kind, that the
// objects' controllers write outside status, as paths (as Path renders
// them): left out of both sides of every comparison.
var controllerFields = map[string][]string{
	// The deployment controller's revision counter.
	"Deployment": {`metadata.annotations["deployment.kubernetes.io/revision"]`},
	// The Agent Sandbox controller, where it manages its webhook
	// certificates, injects their CA into the CRDs' conversion webhook.
	"CustomResourceDefinition": {"spec.conversion.webhook.clientConfig.caBundle"},
	// The Agent Sandbox controller labels a template with the hash of what
	// it derives from it (its network policy).
	"SandboxTemplate": {`metadata.labels["agents.x-k8s.io/sandbox-template-ref-hash"]`},
}

// CarryControllerFields copies into dst the fields of live that its
// controllers own (controllerFields): a repair writes the object whole and
// must not take them away.
func CarryControllerFields(dst, live map[string]any) {
	kind, _ := live["kind"].(string)
	for _, p := range controllerFields[kind] {
		keys := splitPath(p)
		src, dstAt := live, dst
		for i, k := range keys {
			if i == len(keys)-1 {
				if v, ok := src[k]; ok {
					dstAt[k] = v
				}
				break
			}
			next, ok := src[k].(map[string]any)
			if !ok {
				break
			}
			d, ok := dstAt[k].(map[string]any)
			if !ok {
				d = map[string]any{}
				dstAt[k] = d
			}
			src, dstAt = next, d
		}
	}
}

// serverMetadata is what every write changes or the server alone sets.
var serverMetadata = []string{"creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp", "generation", "managedFields", "resourceVersion", "selfLink", "uid"}

// Comparable is obj without what no apply sets: status (the object's
// controllers own it), the server's metadata, null values, and the fields
// controllers write (controllerFields). It never modifies obj.
func Comparable(obj map[string]any) map[string]any {
	out := normalize(obj).(map[string]any)
	delete(out, "status")
	if md, ok := out["metadata"].(map[string]any); ok {
		for _, k := range serverMetadata {
			delete(md, k)
		}
	}
	kind, _ := out["kind"].(string)
	for _, p := range controllerFields[kind] {
		removePath(out, p)
	}
	return out
}

// normalize deep-copies a JSON-shaped value with null map entries dropped
// and every number as int64 where it is whole, float64 otherwise, whatever
// Go type a decoder gave it.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e != nil {
				out[k] = normalize(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return normalizeFloat(float64(x))
	case float64:
		return normalizeFloat(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return normalizeFloat(f)
	}
	return v
}

func normalizeFloat(f float64) any {
	if f == float64(int64(f)) {
		return int64(f)
	}
	return f
}

// removePath deletes a dotted map path (metadata.annotations.x) from m, and
// the maps it leaves empty. Keys holding dots are written in brackets:
// metadata.labels["a.b/c"].
func removePath(m map[string]any, path string) {
	var remove func(m map[string]any, keys []string)
	remove = func(m map[string]any, keys []string) {
		if len(keys) == 1 {
			delete(m, keys[0])
			return
		}
		next, ok := m[keys[0]].(map[string]any)
		if !ok {
			return
		}
		remove(next, keys[1:])
		if len(next) == 0 {
			delete(m, keys[0])
		}
	}
	if keys := splitPath(path); len(keys) > 0 {
		remove(m, keys)
	}
}

// splitPath splits a.b["c.d"].e into its map keys.
func splitPath(path string) []string {
	var keys []string
	for path != "" {
		switch {
		case strings.HasPrefix(path, "["):
			end := strings.Index(path, "]")
			if end < 0 {
				return append(keys, path)
			}
			k, err := strconv.Unquote(path[1:end])
			if err != nil {
				k = path[1:end]
			}
			keys = append(keys, k)
			path = strings.TrimPrefix(path[end+1:], ".")
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				return append(keys, path)
			}
			keys = append(keys, path[:end])
			path = strings.TrimPrefix(path[end:], ".")
		}
	}
	return keys
}

// step is one element of a path into an object: a map key, a list element
// matched by its key field (name=x), or a list index.
type step struct {
	key      string // map key
	index    int    // list index, when key and matchKey are ""
	matchKey string // list element matched by matchKey == matchVal
	matchVal any
	scalar   any  // the element's value, for lists of scalars (managedFields "v:")
	isScalar bool // scalar is set
}

// Path is where a difference is.
type Path []step

func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.key != "":
			if isPlainKey(s.key) {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(s.key)
			} else {
				b.WriteString("[" + strconv.Quote(s.key) + "]")
			}
		case s.matchKey != "":
			fmt.Fprintf(&b, "[%s=%v]", s.matchKey, s.matchVal)
		default:
			fmt.Fprintf(&b, "[%d]", s.index)
		}
	}
	return b.String()
}

func isPlainKey(k string) bool {
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return k != ""
}

func (p Path) with(s step) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, s)
}

// Difference is one place where the live object is not what Paddock applies.
type Difference struct {
	Path Path
	// Expected is the value Paddock applies (nil: absent); Live the cluster's.
	Expected, Live any
	// Writers are the managers that own the live field (or the list or map
	// that holds it), Paddock's own last; empty for a field nobody owns,
	// such as one removed.
	Writers []Writer
	// AddedBy are the mutating admission objects that could have added the
	// live value (model.AdmissionRef names), when the reference noted it as
	// admission's (Admission.Reference); Can says what they rewrite.
	AddedBy []string
	Can     string
}

// RepairManager is the field manager Paddock's own repairs write under.
const RepairManager = "paddock"

// isPaddockManager reports whether a field manager is Paddock's: the
// kubernetes provider's server-side applies ("pulumi-kubernetes-<id>") or
// Paddock's repairs. It only attributes changes: whether an object drifted
// never depends on who wrote it, so a manager name borrowed by someone else
// hides nothing.
func isPaddockManager(m string) bool {
	return m == RepairManager || strings.HasPrefix(m, "pulumi-kubernetes")
}

// Options says whose writes are Paddock's.
type Options struct {
	// Ours reports whether a field manager is Paddock's (the provider's
	// apply, Paddock's repair).
	Ours func(manager string) bool
}

// Compare lists every difference between the live object and expected (the
// desired object as the server stores it): fields and list elements added,
// removed or changed anywhere, with who wrote them.
func Compare(expected map[string]any, live *unstructured.Unstructured, o Options) []Difference {
	e := Comparable(expected)
	notes := takeAdmission(e)
	l := Comparable(live.Object)
	var out []Difference
	diffValue(nil, e, l, &out)
	if len(out) == 0 {
		return nil
	}
	for i := range out {
		p := out[i].Path.String()
		for _, n := range notes {
			if under(p, n.path) {
				out[i].AddedBy, out[i].Can = n.by, n.can
				break
			}
		}
	}
	ours := o.Ours
	if ours == nil {
		ours = isPaddockManager
	}
	owners := parseOwners(live.GetManagedFields())
	for i := range out {
		out[i].Writers = owners.of(out[i].Path, ours)
	}
	return out
}

// Fields turns differences into the report's fields.
func Fields(diffs []Difference, sensitive []string) []Field {
	out := make([]Field, 0, len(diffs))
	for _, d := range diffs {
		f := Field{Path: d.Path.String(), Cause: CauseCluster, Declared: redact(d.Expected, sensitive), Live: redact(d.Live, sensitive), Writers: d.Writers, AddedBy: d.AddedBy}
		if len(d.AddedBy) > 0 {
			f.Admission = strings.Join(d.AddedBy, ", ") + " can rewrite " + d.Can
		}
		out = append(out, f)
	}
	return out
}

// redact replaces every value holding a sensitive string by "[secret]".
func redact(v any, sensitive []string) any {
	if HoldsSensitive(v, sensitive) {
		return "[secret]"
	}
	return v
}

// HoldsSensitive reports whether any string in v (keys included) contains
// one of the sensitive values.
func HoldsSensitive(v any, sensitive []string) bool {
	if len(sensitive) == 0 {
		return false
	}
	has := func(s string) bool {
		for _, x := range sensitive {
			if x != "" && strings.Contains(s, x) {
				return true
			}
		}
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return has(x)
		case map[string]any:
			for k, e := range x {
				if has(k) || walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

func diffValue(p Path, e, l any, out *[]Difference) {
	switch ev := e.(type) {
	case map[string]any:
		lm, ok := l.(map[string]any)
		if !ok {
			*out = append(*out, Difference{Path: p, Expected: e, Live: l})
			return
		}
		for _, k := range unionKeys(ev, lm) {
			ee, eok := ev[k]
			le, lok := lm[k]
			switch {
			case !eok:
				*out = append(*out, Difference{Path: p.with(step{key: k}), Live: le})
			case !lok:
				*out = append(*out, Difference{Path: p.with(step{key: k}), Expected: ee})
			default:
				diffValue(p.with(step{key: k}), ee, le, out)
			}
		}
	case []any:
		la, ok := l.([]any)
		if !ok {
			*out = append(*out, Difference{Path: p, Expected: e, Live: l})
			return
		}
		diffList(p, ev, la, out)
	default:
		if !reflect.DeepEqual(e, l) {
			*out = append(*out, Difference{Path: p, Expected: e, Live: l})
		}
	}
}

// listKeys are the fields Kubernetes keys its merge lists by, most common
// first: a list whose elements all carry one of them, uniquely, on both
// sides is compared element by element by that key, so an element slipped
// in at the front reads as one added element, not every index changed.
var listKeys = []string{"name", "mountPath", "containerPort", "devicePath", "ip", "type"}

func diffList(p Path, e, l []any, out *[]Difference) {
	if key := commonKey(e, l); key != "" {
		lv := map[any]int{}
		for i, x := range l {
			lv[x.(map[string]any)[key]] = i
		}
		seen := map[any]bool{}
		inOrder, sameSet := true, len(e) == len(l)
		for i, x := range e {
			v := x.(map[string]any)[key]
			seen[v] = true
			s := step{matchKey: key, matchVal: v}
			j, ok := lv[v]
			if !ok {
				*out = append(*out, Difference{Path: p.with(s), Expected: x})
				sameSet = false
				continue
			}
			if j != i {
				inOrder = false
			}
			diffValue(p.with(s), x, l[j], out)
		}
		for _, x := range l {
			if v := x.(map[string]any)[key]; !seen[v] {
				*out = append(*out, Difference{Path: p.with(step{matchKey: key, matchVal: v}), Live: x})
				sameSet = false
			}
		}
		if sameSet && !inOrder {
			// The same elements in another order: order matters to Kubernetes
			// (the first container, the first matching rule).
			*out = append(*out, Difference{Path: p, Expected: e, Live: l})
		}
		return
	}
	for i := 0; i < len(e) || i < len(l); i++ {
		s := step{index: i}
		switch {
		case i >= len(l):
			*out = append(*out, Difference{Path: p.with(s), Expected: e[i]})
		case i >= len(e):
			s.scalar, s.isScalar = l[i], isScalar(l[i])
			*out = append(*out, Difference{Path: p.with(s), Live: l[i]})
		default:
			s.scalar, s.isScalar = l[i], isScalar(l[i])
			diffValue(p.with(s), e[i], l[i], out)
		}
	}
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// commonKey is the list key every element of both lists carries, with
// values unique on each side, or "".
func commonKey(e, l []any) string {
	if len(e) == 0 && len(l) == 0 {
		return ""
	}
next:
	for _, key := range listKeys {
		for _, side := range [][]any{e, l} {
			seen := map[any]bool{}
			for _, x := range side {
				m, ok := x.(map[string]any)
				if !ok {
					return ""
				}
				v, ok := m[key]
				if !ok || !isScalar(v) || seen[v] {
					continue next
				}
				seen[v] = true
			}
		}
		return key
	}
	return ""
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// owner is one managedFields entry of the main resource, as a tree.
type owner struct {
	w    Writer
	tree map[string]any
}

type owners []owner

func parseOwners(entries []metav1.ManagedFieldsEntry) owners {
	var out owners
	for _, m := range entries {
		// Status is its controllers'; a write through another subresource
		// (/scale sets spec.replicas) changes the object's own fields, so its
		// writer is named like any other.
		if m.Subresource == "status" || m.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if err := json.Unmarshal(m.FieldsV1.Raw, &tree); err != nil {
			continue
		}
		w := Writer{Manager: m.Manager, Operation: string(m.Operation), Subresource: m.Subresource}
		if m.Time != nil {
			w.Time = m.Time.Time
		}
		out = append(out, owner{w: w, tree: tree})
	}
	return out
}

// of lists the writers owning the field at p, or the atomic list or map
// holding it, or a part of it: others first (newest first), Paddock's last.
func (os owners) of(p Path, ours func(string) bool) []Writer {
	var theirs, mine []Writer
	for _, o := range os {
		if !ownsPath(o.tree, p) {
			continue
		}
		if ours != nil && ours(o.w.Manager) {
			mine = append(mine, o.w)
		} else {
			theirs = append(theirs, o.w)
		}
	}
	sort.SliceStable(theirs, func(i, j int) bool { return theirs[i].Time.After(theirs[j].Time) })
	return append(theirs, mine...)
}

// ownsPath walks a managedFields tree along p: it owns p when the walk ends
// at p (it owns p or part of it) or stops early at a leaf (an atomic value
// holding p).
func ownsPath(tree map[string]any, p Path) bool {
	node := tree
	for _, s := range p {
		var next any
		found := false
		switch {
		case s.key != "":
			next, found = node["f:"+s.key]
		case s.matchKey != "":
			for k, v := range node {
				if !strings.HasPrefix(k, "k:") {
					continue
				}
				var kv map[string]any
				if json.Unmarshal([]byte(k[2:]), &kv) == nil && reflect.DeepEqual(normalize(kv[s.matchKey]), normalize(s.matchVal)) {
					next, found = v, true
					break
				}
			}
		default:
			next, found = node["i:"+strconv.Itoa(s.index)]
			if !found && s.isScalar {
				if b, err := json.Marshal(s.scalar); err == nil {
					next, found = node["v:"+string(b)]
				}
			}
		}
		if !found {
			return false
		}
		child, _ := next.(map[string]any)
		if len(child) == 0 {
			return true // a leaf: owns everything below it
		}
		node = child
	}
	return true
}

// StoredForm is desired as the API server would store it over live: a
// server-side dry-run update (nothing is persisted) under live's
// resourceVersion, re-read on a conflict. It is the reference Compare needs.
func StoredForm(ctx context.Context, res dynamic.ResourceInterface, desired, live *unstructured.Unstructured) (map[string]any, error) {
	for attempt := 0; ; attempt++ {
		body := desired.DeepCopy()
		body.SetResourceVersion(live.GetResourceVersion())
		u, err := res.Update(ctx, body, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: RepairManager})
		if apierrors.IsConflict(err) && attempt < 3 {
			if live, err = res.Get(ctx, desired.GetName(), metav1.GetOptions{}); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return u.Object, nil
	}
}
