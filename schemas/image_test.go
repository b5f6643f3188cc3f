package schemas

import (
	"strings"
	"testing"
)

// Image references are checked with the reference grammar and its length
// limits, at the image argument, with the value clipped in the message.
func TestImageReferences(t *testing.T) {
	long := "r.example.com/" + strings.Repeat("a", 600<<10) + ":1"
	for _, c := range []struct {
		image  string
		detail string // "" for a valid reference
	}{
		{"python:3.12-slim", ""},
		{"python", ""},
		{"r.example.com:5000/team/agent:1.2.3", ""},
		{"r.example.com/a@sha256:" + strings.Repeat("0", 64), ""},
		{"r.example.com/a:1@sha256:" + strings.Repeat("0", 64), ""},
		{long, "an image reference has at most 520"},
		{"r.example.com/" + strings.Repeat("a", 300) + ":1", "must not be more than 255 characters"},
		{"r.example.com/a:" + strings.Repeat("t", 129), "is not an image reference"},
		{"Python:3.12", "must be lowercase"},
		{"r.example.com/a@sha256:abc", "is not an image reference"},
		{"r.example.com//a:1", "is not an image reference"},
		{"python:", "is not an image reference"},
	} {
		src := head + "tenant \"t\" {\n  template \"x\" {\n    image = \"" + c.image + "\"\n  }\n}\n"
		l := NewLoader()
		p, diags := l.LoadSource("spec.hcl", []byte(src), LoadOptions{Environ: []string{}})
		name := c.image
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		if c.detail == "" {
			if diags.HasErrors() {
				t.Errorf("%s: %v", name, diags)
			}
			continue
		}
		if p != nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		var found bool
		for _, d := range diags {
			if d.Summary != "Invalid image" {
				continue
			}
			found = true
			if got := pos(*d.Subject); got != "spec.hcl:7:13" {
				t.Errorf("%s: at %s", name, got)
			}
			if !strings.Contains(d.Detail, c.detail) {
				t.Errorf("%s: detail %q does not contain %q", name, d.Detail, c.detail)
			}
			if len(d.Detail) > 400 {
				t.Errorf("%s: detail is %d bytes long", name, len(d.Detail))
			}
		}
		if !found {
			t.Errorf("%s: no Invalid image diagnostic: %v", name, diags)
		}
	}
}
