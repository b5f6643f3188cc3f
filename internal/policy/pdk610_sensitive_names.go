package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// PDK-610 judges the objects Paddock applies, like the egress rules: the
// platform's objects are built (manifests.Build, as render and up build
// them) and every field that names or labels one, or selects objects by
// name or label, is searched for a value of a sensitive variable (or of a
// config secret), with the very walk `paddock render` refuses such values
// with (manifests.SensitiveFields). However the value got there (string
// interpolation, a local, lower() or format(), a for_each key, a config
// secret the spec never declared sensitive), it is found in the object; the
// model only says which spec argument to point at.
//
// No waiver silences it: redaction hides a value from Paddock's own output,
// but Kubernetes prints names and labels in every list, event and audit
// record, where nothing can hide it again.

const ruleSensitiveName = "PDK-610"

// maxPlacesListed bounds how many object fields one finding names.
const maxPlacesListed = 3

func init() {
	register(Rule{
		ID: ruleSensitiveName, Title: "Sensitive value in a name or label", Severity: Error, Kind: Static, Unwaivable: true,
		Control:   "Sensitive values stay secret: object names, namespaces, labels and selectors show in every list, event, audit record and kubectl output, which nothing redacts",
		Checklist: []string{"L11"},
		Fix:       "Name and label objects with values that are not sensitive (a variable without sensitive = true); keep the secret itself in a Secret of the tenant's namespace and read it with secret_env.",
		check:     checkSensitiveNames,
	})
}

// nameSource is a value of the model that Paddock writes into names,
// namespaces, labels or selectors, and the spec argument it comes from.
type nameSource struct {
	value string
	// object is the address findings name ("platform", "tenant.a").
	object string
	// what names the value in a message: "The namespace of tenant \"a\"".
	what string
	src  model.Range
}

// nameSources are the values of p that the objects' names, namespaces,
// labels and selectors are made of, each with its spec argument. A value the
// spec leaves to its default (a namespace derived from the tenant name, a
// node selector from the node pool's labels) is not listed: the value it
// derives from is.
func nameSources(p *model.Platform) []nameSource {
	var out []nameSource
	add := func(value, object, what string, src model.Range) {
		if value != "" {
			out = append(out, nameSource{value: value, object: object, what: what, src: src})
		}
	}
	addMap := func(m map[string]string, object, what string, src model.Range) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k, object, what, src)
			add(m[k], object, what, src)
		}
	}
	add(p.Name, "platform", "The platform name", p.Attrs.At("name", p.Src))
	for _, np := range p.NodePools {
		// A runtime class of the pool selects its nodes by these labels.
		addMap(np.Labels, nodePoolAddr(&np), fmt.Sprintf("The labels of node pool %q", np.Name), np.Attrs.At("labels", np.Src))
	}
	for _, rc := range p.RuntimeClasses {
		add(rc.Name, runtimeClassAddr(&rc), fmt.Sprintf("The name of runtime class %q", rc.Name), rc.Src)
		if at, set := rc.Attrs["node_selector"]; set {
			addMap(rc.NodeSelector, runtimeClassAddr(&rc), fmt.Sprintf("The node_selector of runtime class %q", rc.Name), at)
		}
	}
	for i := range p.Tenants {
		t := &p.Tenants[i]
		// A tenant of a for_each is named by its key: point at the for_each.
		add(t.Name, tenantAddr(t), fmt.Sprintf("The name of tenant %q", t.Name), t.Attrs.At("for_each", t.Src))
		if at, set := t.Attrs["namespace"]; set {
			add(t.Namespace, tenantAddr(t), fmt.Sprintf("The namespace of tenant %q", t.Name), at)
		}
		for j := range t.Templates {
			tpl := &t.Templates[j]
			add(tpl.Name, templateAddr(t, tpl), fmt.Sprintf("The name of template %q of tenant %q", tpl.Name, t.Name), tpl.Src)
		}
		for j := range t.WarmPools {
			wp := &t.WarmPools[j]
			add(wp.Name, warmPoolAddr(t, wp), fmt.Sprintf("The name of warm pool %q of tenant %q", wp.Name, t.Name), wp.Src)
		}
		if px := t.Egress.Proxy; px != nil {
			if at, set := px.Attrs["namespace"]; set {
				add(px.Namespace, tenantAddr(t), fmt.Sprintf("The egress proxy namespace of tenant %q", t.Name), at)
			}
			addMap(px.PodLabels, tenantAddr(t), fmt.Sprintf("The egress proxy pod_labels of tenant %q", t.Name), px.Attrs.At("pod_labels", px.Src))
		}
	}
	return out
}

// builtObject is one built object and the spec block it belongs to: where
// a finding points when no nameSource explains a field.
type builtObject struct {
	u     *unstructured.Unstructured
	owner nameSource
}

func builtObjects(p *model.Platform, built *manifests.Objects) []builtObject {
	platform := nameSource{object: "platform", what: "the platform", src: p.Src}
	var out []builtObject
	for _, u := range built.Release {
		out = append(out, builtObject{u, platform})
	}
	for _, rc := range built.RuntimeClasses {
		owner := nameSource{object: runtimeClassAddr(&rc.RuntimeClass), what: fmt.Sprintf("runtime class %q", rc.RuntimeClass.Name), src: rc.RuntimeClass.Src}
		out = append(out, builtObject{rc.Object, owner})
	}
	for _, tp := range built.Tenants {
		t := tp.Tenant
		owner := nameSource{object: tenantAddr(&t), what: fmt.Sprintf("tenant %q", t.Name), src: t.Src}
		for _, u := range tp.All() {
			out = append(out, builtObject{u, owner})
		}
	}
	return out
}

// findingKey is one finding of PDK-610: a spec argument (every key and
// value of a map argument together), or a block whose objects hold the
// value where no argument explains it.
type findingKey struct {
	object, what string
	src          model.Range
	explained    bool
}

func checkSensitiveNames(c *checker) {
	values := c.p.SensitiveValues()
	if len(values) == 0 {
		return
	}
	var sensitive []nameSource
	for _, s := range nameSources(c.p) {
		if manifests.ContainsSensitive(s.value, values) {
			sensitive = append(sensitive, s)
		}
	}
	built, err := manifests.Build(c.p)
	if err != nil {
		// Without the objects, judge the spec's own values: a name that
		// holds a secret holds it whatever else fails.
		for _, s := range sensitive {
			c.report(c.p.Redact(s.object), s.src,
				"%s holds a value of a sensitive variable, and names or labels the platform's objects (which cannot be built to say which: %v). Kubernetes shows names and labels in every list, event, audit record and kubectl output, so the value would be in plain sight.",
				s.what, err)
		}
		return
	}

	var order []findingKey
	places := map[findingKey][]string{}
	add := func(k findingKey, place string) {
		list, seen := places[k]
		if !seen {
			order = append(order, k)
		}
		if !slices.Contains(list, place) {
			places[k] = append(list, place)
		}
	}
	for _, o := range builtObjects(c.p, built) {
		object := o.u.GetKind() + " " + o.u.GetName()
		if ns := o.u.GetNamespace(); ns != "" {
			object = o.u.GetKind() + " " + ns + "/" + o.u.GetName()
		}
		for _, field := range manifests.SensitiveFields(o.u, values) {
			if !field.NameOrLabel {
				continue // a value in an object's spec: render refuses to write it, up keeps it a secret in state
			}
			place := object + " " + field.Path
			if field.Key {
				place += " (key)"
			}
			sources := fieldSources(field.Text, sensitive)
			if len(sources) == 0 {
				add(findingKey{object: o.owner.object, what: o.owner.what, src: o.owner.src}, place)
			}
			for _, s := range sources {
				add(findingKey{object: s.object, what: s.what, src: s.src, explained: true}, place)
			}
		}
	}
	const why = "Kubernetes shows these in every list, event, audit record and kubectl output, so no redaction can keep the value secret."
	for _, k := range order {
		n := len(places[k])
		if k.explained {
			c.report(c.p.Redact(k.object), k.src,
				"%s holds a value of a sensitive variable, and Paddock writes it into %d name, namespace, label or selector field%s of the platform's objects: %s. %s",
				k.what, n, plural(n), listPlaces(places[k]), why)
			continue
		}
		c.report(c.p.Redact(k.object), k.src,
			"A value of a sensitive variable reaches %d name, namespace, label or selector field%s of the objects of %s, from no argument Paddock can point at: %s. %s",
			n, plural(n), k.what, listPlaces(places[k]), why)
	}
}

// fieldSources are the sources whose value appears whole in text, less any
// that only appears as part of another one (a tenant name inside the
// namespace set from it): the most specific spec arguments the text is made
// of.
func fieldSources(text string, sources []nameSource) []nameSource {
	var in []nameSource
	for _, s := range sources {
		if strings.Contains(text, s.value) {
			in = append(in, s)
		}
	}
	var out []nameSource
	for _, s := range in {
		inner := false
		for _, o := range in {
			if len(o.value) > len(s.value) && strings.Contains(o.value, s.value) {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, s)
		}
	}
	return out
}

// listPlaces is the first few places, and how many more there are.
func listPlaces(places []string) string {
	if len(places) <= maxPlacesListed {
		return strings.Join(places, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(places[:maxPlacesListed], ", "), len(places)-maxPlacesListed)
}
