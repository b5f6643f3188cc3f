package manifests

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Where a value of a sensitive variable lands in the objects Paddock builds:
// one walk of an object, shared by `paddock render` (which refuses to write
// any such field in plain text) and policy (which refuses a spec whose names
// and labels hold one, since those can never be kept secret).

// SensitiveField is one field of an object whose text holds a sensitive value.
type SensitiveField struct {
	// Path names the field: "spec.podTemplate.spec.containers[0].env[0].value",
	// `metadata.labels["paddock.dev/platform"]`. A map key that holds the
	// value is named by its own path, so Path may hold the value itself:
	// redact it before printing.
	Path string
	// Key is set when the map key, not the value under it, holds the value.
	Key bool
	// Text is the key or value that holds the sensitive value, unredacted:
	// for matching only, never for printing.
	Text string
	// NameOrLabel is set for fields that name or label an object, or select
	// objects by their names and labels (see nameOrLabel): Kubernetes shows
	// them in every list, event and audit record, so they cannot hold a
	// secret whatever the output does with the rest.
	NameOrLabel bool
}

// SensitiveFields lists the fields of u whose text (a string value or a map
// key) contains one of values, in path order (map keys sorted). Empty values
// are ignored: they would match everything.
func SensitiveFields(u *unstructured.Unstructured, values []string) []SensitiveField {
	var out []SensitiveField
	// names are the field names on the way to the current value, list
	// indices left out: what nameOrLabel judges a field by.
	var walk func(path string, names []string, v any)
	walk = func(path string, names []string, v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				sub := k
				if strings.ContainsAny(k, "./[]") {
					sub = "[" + strconv.Quote(k) + "]"
				} else if path != "" {
					sub = "." + k
				}
				// A fresh slice per key: append must not share the backing
				// array between siblings.
				inner := append(names[:len(names):len(names)], k)
				if ContainsSensitive(k, values) {
					out = append(out, SensitiveField{Path: path + sub, Key: true, Text: k, NameOrLabel: nameOrLabel(inner)})
				}
				walk(path+sub, inner, x[k])
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), names, e)
			}
		case string:
			if ContainsSensitive(x, values) {
				out = append(out, SensitiveField{Path: path, Text: x, NameOrLabel: nameOrLabel(names)})
			}
		}
	}
	walk("", nil, u.Object)
	return out
}

// ContainsSensitive reports whether s contains one of values (empty values
// never match).
func ContainsSensitive(s string, values []string) bool {
	for _, v := range values {
		if v != "" && strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// nameOrLabel reports whether the field reached through names (field names
// from the object's root, list indices left out; for a map key, the key
// last) names or labels an object, or selects objects by name or label:
//
//   - metadata.name, .namespace and .generateName, of the object or of an
//     object template inside it;
//   - metadata.labels, keys and values, at any depth (pod templates too);
//   - label selectors: matchLabels, matchExpressions keys and values, and
//     nodeSelector (which must repeat the labels of the nodes it selects);
//   - references by name that RBAC and admission show with the object:
//     subjects' names and namespaces, roleRef.name, a binding's policyName.
func nameOrLabel(names []string) bool {
	n := len(names)
	at := func(i int) string { // names[n-i], or "" past the root
		if i > n {
			return ""
		}
		return names[n-i]
	}
	last, parent := at(1), at(2)
	switch {
	case parent == "metadata" && (last == "name" || last == "namespace" || last == "generateName"):
		return true
	case parent == "labels" && at(3) == "metadata":
		return true
	case parent == "matchLabels" || parent == "nodeSelector":
		return true
	case parent == "matchExpressions" && (last == "key" || last == "values"):
		return true
	case parent == "subjects" && (last == "name" || last == "namespace"):
		return true
	case parent == "roleRef" && last == "name":
		return true
	case last == "policyName":
		return true
	}
	return false
}
