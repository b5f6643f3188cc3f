// Package replacement knows which inputs of the GKE cluster and node pool
// make the pinned pulumi-gcp provider replace the resource rather than update
// it, and finds them in a change between the inputs a stack recorded and the
// inputs the program registers now.
//
// Pulumi mocks accept any change; on GCP, a replaced cluster takes every
// node, sandbox and in-cluster object with it, and a replaced node pool every
// sandbox on it. The knowledge comes from the provider's schema at the pinned
// version (forcenew.json, with where it was read), not from this code.
//
// Values are plain JSON-shaped Go values (map[string]any, []any, string,
// float64, bool, nil) plus Unknown for a value not known before the update.
// The package knows neither Pulumi nor the model.
package replacement

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

//go:embed forcenew.json
var forceNewJSON []byte

// Rule is one input whose change replaces the resource.
type Rule struct {
	// Path is the input, by Pulumi property names ("nodeConfig.metadata").
	Path string `json:"path"`
	// When is "" for any change, "disabled" for a change from true to false.
	When string `json:"when,omitempty"`
	// Set compares a list regardless of order.
	Set bool `json:"set,omitempty"`
	// Default is the value an absent input stands for (nil: none).
	Default any `json:"default,omitempty"`
}

// Resource is what the schema says of one resource type.
type Resource struct {
	Replace []Rule `json:"replace"`
	// InPlace are the other inputs Paddock registers, updated in place.
	InPlace []string `json:"inPlace"`
}

// Schema is forcenew.json: the pinned provider's replacement rules.
type Schema struct {
	PulumiGCP  string              `json:"pulumiGcp"`
	Provider   string              `json:"provider"`
	Provenance []string            `json:"provenance"`
	Resources  map[string]Resource `json:"resources"`
}

// Load parses the embedded schema.
func Load() (*Schema, error) {
	var s Schema
	dec := json.NewDecoder(strings.NewReader(string(forceNewJSON)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("forcenew.json: %w", err)
	}
	return &s, nil
}

// Unknown stands for a value the program does not know before the update
// (an output of another resource). A rule on an unknown value is skipped: its
// source is another resource, whose own inputs are compared.
var Unknown = unknown{}

type unknown struct{}

func (unknown) String() string { return "(known after the update)" }

// Change is one input whose change replaces the resource.
type Change struct {
	Path     string
	Old, New any
	Rule     Rule
}

// Describe is the change for a message: path, old and new value.
func (c Change) Describe() string {
	return fmt.Sprintf("%s %s -> %s", c.Path, show(c.Old), show(c.New))
}

func show(v any) string {
	if v == nil {
		return "(unset)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Replacements are the changes from old to new inputs of a resource of type
// typ that make the provider replace it (none for a type the schema does not
// cover).
func (s *Schema) Replacements(typ string, old, new map[string]any) []Change {
	var out []Change
	for _, r := range s.Resources[typ].Replace {
		o, oOK := Lookup(old, r.Path)
		n, nOK := Lookup(new, r.Path)
		if !oOK {
			o = r.Default
		}
		if !nOK {
			n = r.Default
		}
		if hasUnknown(o) || hasUnknown(n) {
			continue
		}
		if changes(r, o, n) {
			out = append(out, Change{Path: r.Path, Old: o, New: n, Rule: r})
		}
	}
	return out
}

func changes(r Rule, o, n any) bool {
	if r.When == "disabled" {
		return o == true && n != true
	}
	if r.Set {
		o, n = sorted(o), sorted(n)
	}
	return !reflect.DeepEqual(normal(o), normal(n))
}

// Classified reports whether path (a leaf input Paddock registers) is covered
// by a replace rule or an in-place entry of typ: an unclassified input is one
// nobody has checked against the provider's schema.
func (s *Schema) Classified(typ, path string) bool {
	res := s.Resources[typ]
	for _, r := range res.Replace {
		if within(path, r.Path) {
			return true
		}
	}
	for _, p := range res.InPlace {
		if within(path, p) {
			return true
		}
	}
	return false
}

// within reports whether path is prefix or below it ("a.b[0].c" is within "a.b").
func within(path, prefix string) bool {
	if path == prefix {
		return true
	}
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	next := path[len(prefix)]
	return next == '.' || next == '['
}

// Lookup returns the value at a dotted path of plain values.
func Lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		if cur == Unknown {
			return Unknown, true
		}
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func hasUnknown(v any) bool {
	switch x := v.(type) {
	case unknown:
		return true
	case map[string]any:
		for _, e := range x {
			if hasUnknown(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasUnknown(e) {
				return true
			}
		}
	}
	return false
}

// normal makes numbers float64 and drops the bridge's bookkeeping keys
// ("__defaults"), so recorded and registered inputs compare.
func normal(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if !strings.HasPrefix(k, "__") {
				out[k] = normal(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normal(e)
		}
		return out
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return v
}

func sorted(v any) any {
	l, ok := v.([]any)
	if !ok {
		return v
	}
	c := append([]any(nil), l...)
	sort.Slice(c, func(i, j int) bool { return fmt.Sprint(c[i]) < fmt.Sprint(c[j]) })
	return c
}
