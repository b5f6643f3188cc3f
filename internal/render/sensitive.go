package render

import (
	"fmt"
	"sort"
	"strings"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// SensitiveValue is a place in the rendered output that holds a value from
// a sensitive variable (or a Pulumi config secret): rendered YAML is a file
// people commit, so `paddock render` refuses to write it unless told to.
type SensitiveValue struct {
	// File is the file ToDir writes the object into ("tenant-a.yaml").
	File string
	// Object is "Kind namespace/name" (or "Kind name" when cluster-scoped).
	Object string
	// Path is the field: "spec.podTemplate.spec.containers[0].env[0].value".
	Path string
}

func (s SensitiveValue) String() string {
	return fmt.Sprintf("%s: %s %s", s.File, s.Object, s.Path)
}

// Sensitive lists every field of the objects render writes for p that holds a
// sensitive value of p: fields of object specs first, then names and labels
// (manifests.SensitiveField.NameOrLabel), each in file and object order. The
// paths name fields, never values (a key that is itself sensitive shows
// redacted).
func Sensitive(p *model.Platform) ([]SensitiveValue, error) {
	values := p.SensitiveValues()
	if len(values) == 0 {
		return nil, nil
	}
	groups, err := manifests.Platform(p)
	if err != nil {
		return nil, err
	}
	type place struct {
		SensitiveValue
		nameOrLabel bool
	}
	var places []place
	for _, g := range groups {
		for _, u := range g.Objects {
			object := u.GetKind() + " " + u.GetName()
			if ns := u.GetNamespace(); ns != "" {
				object = u.GetKind() + " " + ns + "/" + u.GetName()
			}
			for _, f := range manifests.SensitiveFields(Clean(u), values) {
				places = append(places, place{
					SensitiveValue: SensitiveValue{File: g.Name + ".yaml", Object: p.Redact(object), Path: p.Redact(f.Path)},
					nameOrLabel:    f.NameOrLabel,
				})
			}
		}
	}
	// Values in object specs (an env value, an image) first: they are what
	// a secret usually is; names and labels, repeated in every object, after.
	sort.SliceStable(places, func(i, j int) bool { return !places[i].nameOrLabel && places[j].nameOrLabel })
	out := make([]SensitiveValue, len(places))
	for i, pl := range places {
		out[i] = pl.SensitiveValue
	}
	return out, nil
}

// SensitiveError refuses to render sensitive values in plain text.
type SensitiveError struct {
	Values []SensitiveValue
}

// maxListed bounds how many places an error or warning lists.
const maxListed = 20

func (e *SensitiveError) Error() string {
	return fmt.Sprintf("the rendered objects would hold %d value%s of sensitive variables in plain text:\n%s\n"+
		"Rendered YAML is meant to be committed. Put secrets in a Secret of the tenant's namespace and read them with a "+
		"secret_env block (the template then holds only a reference), keep names and labels free of sensitive values, "+
		"or pass --allow-sensitive to write them anyway (the files are then written mode 0600; keep them out of version control)",
		len(e.Values), plural(len(e.Values)), List(e.Values))
}

// List is values one per line, indented, at most maxListed of them.
func List(values []SensitiveValue) string {
	var b strings.Builder
	for i, v := range values {
		if i == maxListed {
			fmt.Fprintf(&b, "  ... and %d more\n", len(values)-maxListed)
			break
		}
		fmt.Fprintf(&b, "  %s\n", v)
	}
	return strings.TrimRight(b.String(), "\n")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
