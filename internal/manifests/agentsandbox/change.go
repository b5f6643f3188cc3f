package agentsandbox

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// What moving an installed release to another one changes, what it disrupts,
// and whether the move can be undone. Pure: it compares the two releases'
// objects as Paddock renders them; the engine adds what only the live cluster
// knows (which versions objects are stored in, whether any exist).

// Change is the difference between two renders of the release.
type Change struct {
	From, To string
	// CRDs lists each CRD that differs, by name.
	CRDs []CRDChange
	// Controller lists what changed in the controller Deployment (image, args,
	// the rest of its pod template), one line each.
	Controller []string
	// Webhooks lists changes to the conversion webhooks of the CRDs and to any
	// admission webhook configuration of the release.
	Webhooks []string
	// Other lists other objects added, removed or changed (RBAC, Services).
	Other []string
	// Forward is what this move risks for stored objects; Back is what moving
	// from To back to From would risk. Empty means safe.
	Forward, Back []Risk
}

// CRDChange is what changed in one CRD.
type CRDChange struct {
	Name             string
	Added, Removed   bool     // the whole CRD
	VersionsAdded    []string // versions listed only by To
	VersionsRemoved  []string // versions listed only by From
	Served           []string // "v1alpha1 served -> not served"
	StorageFrom      string   // storage versions, when they differ
	StorageTo        string
	Schema           []string // per version: "v1beta1: +status.observedGeneration"
	ConversionChange bool
}

// Risk kinds: why a move can lose or strand stored objects.
const (
	RiskCRDRemoved     = "crd-removed"     // the CRD goes, with every object of it
	RiskVersionRemoved = "version-removed" // objects stored in a version the target no longer lists
	RiskStorageChanged = "storage-changed" // objects written as the installed storage version, which the target does not store
)

// Risk is one reason a move may not be safe.
type Risk struct {
	Kind   string
	CRD    string // name
	Plural string
	Group  string
	// Version is the version at stake: removed, or the installed storage version.
	Version string
	// TargetStorage is the storage version of the target release's CRD.
	TargetStorage string
}

// Reason is one line saying why the risk makes the move unsafe.
func (r Risk) Reason(from, to string) string {
	switch r.Kind {
	case RiskCRDRemoved:
		return fmt.Sprintf("CRD %s is not part of %s: moving there deletes it, and every object of it with it", r.CRD, to)
	case RiskVersionRemoved:
		return fmt.Sprintf("CRD %s: %s lists %s, %s does not; objects stored as %s cannot be read, and Kubernetes refuses the CRD update while status.storedVersions holds it", r.CRD, from, r.Version, to, r.Version)
	case RiskStorageChanged:
		return fmt.Sprintf("CRD %s: %s stores objects as %s, %s as %s; objects written since %s was installed stay stored as %s and reach %s's controller only through conversion", r.CRD, from, r.Version, to, r.TargetStorage, from, r.Version, to)
	}
	return r.Kind
}

// Steps are the manual steps that make the move safe, as shell lines.
func (r Risk) Steps(from, to string) []string {
	res := r.Plural + "." + r.Group
	backup := fmt.Sprintf("kubectl get %s -A -o yaml > %s-backup.yaml   # keep a copy", res, r.Plural)
	switch r.Kind {
	case RiskCRDRemoved:
		return []string{backup, fmt.Sprintf("kubectl delete %s -A --all   # only once nothing needs them: %s has no such kind", res, to)}
	case RiskVersionRemoved:
		return []string{
			backup,
			fmt.Sprintf("kubectl get %s -A -o json | kubectl replace -f -   # with %s installed: rewrites every object at its storage version", res, from),
			fmt.Sprintf("kubectl patch crd %s --subresource=status --type=merge -p '{\"status\":{\"storedVersions\":[\"<%s's storage version>\"]}}'", r.CRD, from),
		}
	case RiskStorageChanged:
		return []string{
			backup,
			fmt.Sprintf("kubectl delete %s -A --all   # %s cannot rewrite them as %s; sessions end, warm pools and templates come back from the spec", res, from, r.TargetStorage),
			fmt.Sprintf("kubectl patch crd %s --subresource=status --type=merge -p '{\"status\":{\"storedVersions\":[\"%s\"]}}'", r.CRD, r.TargetStorage),
		}
	}
	return nil
}

// IsRollback reports whether to is an older release than from.
func IsRollback(from, to string) bool {
	return semver.IsValid(from) && semver.IsValid(to) && semver.Compare(to, from) < 0
}

// Compare describes moving from the release rendered as fromObjs to the one
// rendered as toObjs.
func Compare(from string, fromObjs []*unstructured.Unstructured, to string, toObjs []*unstructured.Unstructured) Change {
	c := Change{From: from, To: to}
	fromIdx, toIdx := index(fromObjs), index(toObjs)
	keys := map[string]bool{}
	for k := range fromIdx {
		keys[k] = true
	}
	for k := range toIdx {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		a, b := fromIdx[k], toIdx[k]
		kind := strings.SplitN(k, "/", 2)[0]
		switch {
		case kind == "CustomResourceDefinition":
			if cc, changed := compareCRD(a, b); changed {
				c.CRDs = append(c.CRDs, cc)
				if cc.ConversionChange {
					c.Webhooks = append(c.Webhooks, fmt.Sprintf("conversion webhook of CRD %s changed", cc.Name))
				}
			}
		case kind == "Deployment" && nameOf(a, b) == ControllerDeployment:
			c.Controller = compareController(a, b)
		default:
			line := compareObject(k, a, b)
			if line == "" {
				continue
			}
			if kind == "ValidatingWebhookConfiguration" || kind == "MutatingWebhookConfiguration" {
				c.Webhooks = append(c.Webhooks, line)
			} else {
				c.Other = append(c.Other, line)
			}
		}
	}
	c.Forward = Risks(fromObjs, toObjs)
	c.Back = Risks(toObjs, fromObjs)
	return c
}

// Risks lists what moving from the release rendered as fromObjs to the one
// rendered as toObjs risks for objects stored under the former: a CRD the
// target lacks, a version it no longer lists, a storage version it changes.
func Risks(fromObjs, toObjs []*unstructured.Unstructured) []Risk {
	fromIdx, toIdx := index(fromObjs), index(toObjs)
	var out []Risk
	var names []string
	for k, u := range fromIdx {
		if u.GetKind() == "CustomResourceDefinition" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		a, b := fromIdx[k], toIdx[k]
		plural, _, _ := unstructured.NestedString(a.Object, "spec", "names", "plural")
		group, _, _ := unstructured.NestedString(a.Object, "spec", "group")
		r := Risk{CRD: a.GetName(), Plural: plural, Group: group}
		if b == nil {
			r.Kind = RiskCRDRemoved
			out = append(out, r)
			continue
		}
		av, bv := crdVersions(a), crdVersions(b)
		for _, v := range sortedKeys(av) {
			if _, ok := bv[v]; !ok {
				r := r
				r.Kind, r.Version = RiskVersionRemoved, v
				out = append(out, r)
			}
		}
		if sa, sb := storageOf(av), storageOf(bv); sa != sb {
			r.Kind, r.Version, r.TargetStorage = RiskStorageChanged, sa, sb
			out = append(out, r)
		}
	}
	return out
}

// Summary is the release change for people: what changes, what it disrupts,
// and whether going back is safe.
func (c Change) Summary() string {
	var b strings.Builder
	dir := "upgrade"
	if IsRollback(c.From, c.To) {
		dir = "rollback"
	}
	fmt.Fprintf(&b, "Agent Sandbox release %s -> %s (%s):\n", c.From, c.To, dir)
	if len(c.CRDs) == 0 {
		b.WriteString("  CRDs: unchanged\n")
	} else {
		b.WriteString("  CRDs:\n")
		for _, cc := range c.CRDs {
			fmt.Fprintf(&b, "    %s: %s\n", cc.Name, cc.describe())
		}
	}
	if len(c.Controller) == 0 {
		b.WriteString("  controller: unchanged\n")
	} else {
		fmt.Fprintf(&b, "  controller: %s\n", strings.Join(c.Controller, "; "))
	}
	if len(c.Webhooks) == 0 {
		b.WriteString("  webhooks: unchanged\n")
	} else {
		fmt.Fprintf(&b, "  webhooks: %s\n", strings.Join(c.Webhooks, "; "))
	}
	if len(c.Other) > 0 {
		fmt.Fprintf(&b, "  other objects: %s\n", strings.Join(c.Other, "; "))
	}
	b.WriteString("  disruption:\n")
	for _, d := range c.Disruption() {
		fmt.Fprintf(&b, "    - %s\n", d)
	}
	if len(c.Forward) > 0 {
		fmt.Fprintf(&b, "  this move risks stored objects:\n")
		for _, r := range c.Forward {
			fmt.Fprintf(&b, "    - %s\n", r.Reason(c.From, c.To))
		}
	}
	if len(c.Back) == 0 {
		fmt.Fprintf(&b, "  going back to %s: safe (every CRD keeps its versions and its storage version)\n", c.From)
	} else {
		fmt.Fprintf(&b, "  going back to %s: not safe once objects are written:\n", c.From)
		for _, r := range c.Back {
			fmt.Fprintf(&b, "    - %s\n", r.Reason(c.To, c.From))
		}
	}
	return b.String()
}

// Disruption says what the move does to what runs.
func (c Change) Disruption() []string {
	var out []string
	if len(c.Controller) > 0 {
		out = append(out,
			"the controller restarts: claims made meanwhile are admitted and wait until it is back; none is refused or lost",
			"running sandboxes keep running: their pods belong to the Sandbox objects, not to the controller, and are not restarted",
			"warm pools are topped up again by the new controller; claimed sandboxes are never touched")
	} else {
		out = append(out, "the controller does not restart; running sandboxes and warm pools are not touched")
	}
	for _, cc := range c.CRDs {
		if len(cc.Schema) > 0 || len(cc.VersionsAdded) > 0 {
			out = append(out, "CRDs are updated in place: no object is rewritten or deleted; fields a release does not know are dropped from an object when it is next written")
			break
		}
	}
	return out
}

func (cc CRDChange) describe() string {
	switch {
	case cc.Added:
		return "added"
	case cc.Removed:
		return "removed (with every object of it)"
	}
	var parts []string
	if len(cc.VersionsAdded) > 0 {
		parts = append(parts, "versions added "+strings.Join(cc.VersionsAdded, ", "))
	}
	if len(cc.VersionsRemoved) > 0 {
		parts = append(parts, "versions removed "+strings.Join(cc.VersionsRemoved, ", "))
	}
	parts = append(parts, cc.Served...)
	if cc.StorageFrom != cc.StorageTo {
		parts = append(parts, fmt.Sprintf("storage version %s -> %s", cc.StorageFrom, cc.StorageTo))
	}
	for _, s := range cc.Schema {
		parts = append(parts, "schema "+s)
	}
	if cc.ConversionChange {
		parts = append(parts, "conversion changed")
	}
	if len(parts) == 0 {
		parts = append(parts, "metadata changed")
	}
	return strings.Join(parts, "; ")
}

// index keys a release's objects by kind/namespace/name, without the version label.
func index(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		c := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(u.Object)}
		if l := c.GetLabels(); l != nil {
			delete(l, VersionLabel)
			c.SetLabels(l)
		}
		out[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = c
	}
	return out
}

func nameOf(a, b *unstructured.Unstructured) string {
	if a != nil {
		return a.GetName()
	}
	return b.GetName()
}

func compareObject(key string, a, b *unstructured.Unstructured) string {
	label := strings.Replace(strings.Replace(key, "//", " ", 1), "/", " ", -1)
	switch {
	case a == nil:
		return label + " added"
	case b == nil:
		return label + " removed"
	case !reflect.DeepEqual(a.Object, b.Object):
		return label + " changed"
	}
	return ""
}

// crdVersions maps each listed version to its entry.
func crdVersions(u *unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _ := m["name"].(string); name != "" {
			out[name] = m
		}
	}
	return out
}

func storageOf(vs map[string]map[string]any) string {
	for name, m := range vs {
		if s, _ := m["storage"].(bool); s {
			return name
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func compareCRD(a, b *unstructured.Unstructured) (CRDChange, bool) {
	cc := CRDChange{Name: nameOf(a, b)}
	switch {
	case a == nil:
		cc.Added = true
		return cc, true
	case b == nil:
		cc.Removed = true
		return cc, true
	case reflect.DeepEqual(a.Object, b.Object):
		return cc, false
	}
	av, bv := crdVersions(a), crdVersions(b)
	cc.StorageFrom, cc.StorageTo = storageOf(av), storageOf(bv)
	for _, v := range sortedKeys(bv) {
		if _, ok := av[v]; !ok {
			cc.VersionsAdded = append(cc.VersionsAdded, v)
		}
	}
	for _, v := range sortedKeys(av) {
		bm, ok := bv[v]
		if !ok {
			cc.VersionsRemoved = append(cc.VersionsRemoved, v)
			continue
		}
		am := av[v]
		as, _ := am["served"].(bool)
		bs, _ := bm["served"].(bool)
		if as != bs {
			cc.Served = append(cc.Served, fmt.Sprintf("%s %s -> %s", v, servedWord(as), servedWord(bs)))
		}
		if d := schemaDiff(am["schema"], bm["schema"]); d != "" {
			cc.Schema = append(cc.Schema, v+": "+d)
		}
	}
	ac, _, _ := unstructured.NestedFieldNoCopy(a.Object, "spec", "conversion")
	bc, _, _ := unstructured.NestedFieldNoCopy(b.Object, "spec", "conversion")
	cc.ConversionChange = !reflect.DeepEqual(ac, bc)
	return cc, true
}

func servedWord(b bool) string {
	if b {
		return "served"
	}
	return "not served"
}

// schemaDiff names the fields one version's schema gained and lost, and says
// when anything else (validation, descriptions) changed; "" when equal.
func schemaDiff(a, b any) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	pa, pb := map[string]bool{}, map[string]bool{}
	fieldPaths(a, "", pa)
	fieldPaths(b, "", pb)
	var added, removed, parts []string
	for p := range pb {
		if !pa[p] {
			added = append(added, p)
		}
	}
	for p := range pa {
		if !pb[p] {
			removed = append(removed, p)
		}
	}
	for _, p := range tops(added) {
		parts = append(parts, "+"+p)
	}
	for _, p := range tops(removed) {
		parts = append(parts, "-"+p)
	}
	if len(parts) == 0 {
		if reflect.DeepEqual(withoutDescriptions(a), withoutDescriptions(b)) {
			return "descriptions changed"
		}
		return "validation changed"
	}
	return strings.Join(parts, " ")
}

// fieldPaths collects the dotted paths of every property of an OpenAPI schema
// (openAPIV3Schema at the top); array items add "[]".
func fieldPaths(schema any, prefix string, out map[string]bool) {
	m, _ := schema.(map[string]any)
	if m == nil {
		return
	}
	if inner, ok := m["openAPIV3Schema"]; ok && prefix == "" {
		fieldPaths(inner, "", out)
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, sub := range props {
			p := name
			if prefix != "" {
				p = prefix + "." + name
			}
			out[p] = true
			fieldPaths(sub, p, out)
		}
	}
	if items, ok := m["items"]; ok {
		fieldPaths(items, prefix+"[]", out)
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		fieldPaths(ap, prefix+"{}", out)
	}
}

// tops sorts paths and keeps only the top of each subtree: a field added with
// its children is named once.
func tops(paths []string) []string {
	sort.Strings(paths)
	var out []string
	for _, p := range paths {
		if n := len(out); n > 0 {
			last := out[n-1]
			if strings.HasPrefix(p, last+".") || strings.HasPrefix(p, last+"[]") || strings.HasPrefix(p, last+"{}") {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

func withoutDescriptions(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if k == "description" {
				if _, isString := x.(string); isString {
					continue
				}
			}
			out[k] = withoutDescriptions(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = withoutDescriptions(x)
		}
		return out
	}
	return v
}

// compareController lists what changed in the controller Deployment.
func compareController(a, b *unstructured.Unstructured) []string {
	switch {
	case a == nil:
		return []string{"Deployment added"}
	case b == nil:
		return []string{"Deployment removed"}
	}
	var out []string
	ai, aa, arest := controllerParts(a)
	bi, ba, brest := controllerParts(b)
	if ai != bi {
		out = append(out, fmt.Sprintf("image %s -> %s", ai, bi))
	}
	var added, removed []string
	for _, x := range ba {
		if !slices.Contains(aa, x) {
			added = append(added, x)
		}
	}
	for _, x := range aa {
		if !slices.Contains(ba, x) {
			removed = append(removed, x)
		}
	}
	if len(added) > 0 {
		out = append(out, "args added "+strings.Join(added, " "))
	}
	if len(removed) > 0 {
		out = append(out, "args removed "+strings.Join(removed, " "))
	}
	if !reflect.DeepEqual(arest, brest) {
		out = append(out, "Deployment otherwise changed")
	}
	return out
}

// controllerParts splits the controller Deployment into the controller
// container's image and args, and everything else.
func controllerParts(u *unstructured.Unstructured) (image string, args []string, rest map[string]any) {
	rest = runtime.DeepCopyJSON(u.Object)
	containers, _, _ := unstructured.NestedSlice(rest, "spec", "template", "spec", "containers")
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		if cm["image"] != nil && image == "" {
			if img, _ := cm["image"].(string); img != "" {
				image = img
				args = nil
				as, _ := cm["args"].([]any)
				for _, x := range as {
					if s, ok := x.(string); ok {
						args = append(args, s)
					}
				}
			}
		}
		delete(cm, "image")
		delete(cm, "args")
	}
	_ = unstructured.SetNestedSlice(rest, containers, "spec", "template", "spec", "containers")
	return image, args, rest
}
