package pulumitest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// PreviewOptions shape a golden preview.
type PreviewOptions struct {
	// Header is written first, verbatim: what the preview shows and how to
	// regenerate it.
	Header string
	// HideProvider, if set, omits the provider line where it is true (e.g.
	// default providers, whose names carry the plugin version).
	HideProvider func(provider string) bool
	// Inputs, if set, chooses the inputs shown for r; all by default.
	Inputs func(r Resource) resource.PropertyMap
}

// Preview renders resources as golden text: for each, its type, name, kind,
// parent and provider, then its inputs flattened to one sorted "path = value"
// line per leaf, with secrets and unknowns masked. Pass Mocks.Sorted() so the
// text does not depend on registration order.
func Preview(resources []Resource, opts PreviewOptions) string {
	var b strings.Builder
	b.WriteString(opts.Header)
	for _, r := range resources {
		kind := "custom"
		if !r.Custom {
			kind = "component"
		}
		fmt.Fprintf(&b, "\n%s %q (%s)\n", r.Type, r.Name, kind)
		if r.Parent != "" {
			fmt.Fprintf(&b, "  parent   %s\n", r.Parent)
		}
		if r.Provider != "" && (opts.HideProvider == nil || !opts.HideProvider(r.Provider)) {
			fmt.Fprintf(&b, "  provider %s\n", r.Provider)
		}
		inputs := r.Inputs
		if opts.Inputs != nil {
			inputs = opts.Inputs(r)
		}
		var lines []string
		flatten(&lines, "", resource.NewObjectProperty(inputs))
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

// flatten appends a "path = value" line per leaf of v, object keys sorted;
// a key that needs it (dots, slashes, brackets) is bracketed, as proppath
// reads it back.
func flatten(out *[]string, path string, v resource.PropertyValue) {
	switch {
	case v.IsSecret():
		*out = append(*out, path+" = [secret]")
	case v.IsComputed() || (v.IsOutput() && !v.OutputValue().Known):
		*out = append(*out, path+" = [unknown]")
	case v.IsOutput():
		if v.OutputValue().Secret {
			*out = append(*out, path+" = [secret]")
			return
		}
		flatten(out, path, v.OutputValue().Element)
	case v.IsObject():
		obj := v.ObjectValue()
		if len(obj) == 0 {
			if path != "" {
				*out = append(*out, path+" = {}")
			}
			return
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, string(k))
		}
		sort.Strings(keys)
		for _, k := range keys {
			flatten(out, joinKey(path, k), obj[resource.PropertyKey(k)])
		}
	case v.IsArray():
		arr := v.ArrayValue()
		if len(arr) == 0 {
			*out = append(*out, path+" = []")
			return
		}
		for i, e := range arr {
			flatten(out, fmt.Sprintf("%s[%d]", path, i), e)
		}
	case v.IsString():
		s := v.StringValue()
		if strings.Contains(s, "\n") {
			*out = append(*out, path+" = <<")
			for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
				*out = append(*out, "    | "+l)
			}
			return
		}
		*out = append(*out, path+" = "+strconv.Quote(s))
	case v.IsNumber():
		*out = append(*out, path+" = "+strconv.FormatFloat(v.NumberValue(), 'f', -1, 64))
	case v.IsBool():
		*out = append(*out, fmt.Sprintf("%s = %v", path, v.BoolValue()))
	case v.IsNull():
		*out = append(*out, path+" = null")
	default:
		*out = append(*out, fmt.Sprintf("%s = %v", path, v))
	}
}

func joinKey(path, k string) string {
	if strings.ContainsAny(k, "./[]") {
		return path + "[" + k + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// CheckGolden compares got with the golden file at path, or rewrites the
// file when update is set (the test's -update flag).
func CheckGolden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the mock run; if the change is intended, rerun with -update.\n%s", path, LineDiff(string(want), got))
	}
}

// LineDiff shows the first ten differing lines of two texts, for failure
// messages: golden previews are long, and a change is usually local.
func LineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl == gl {
			continue
		}
		fmt.Fprintf(&b, "line %d:\n  - %s\n  + %s\n", i+1, wl, gl)
		if shown++; shown >= 10 {
			b.WriteString("  ...\n")
			break
		}
	}
	return b.String()
}
