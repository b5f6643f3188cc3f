package pulumitest

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/paddock-platform/paddock/components/internal/proppath"
)

// Unwrap strips secret and known-output wrappers: assertions are about
// values, secrecy is tested where it matters.
func Unwrap(v resource.PropertyValue) resource.PropertyValue {
	for {
		switch {
		case v.IsSecret():
			v = v.SecretValue().Element
		case v.IsOutput() && v.OutputValue().Known:
			v = v.OutputValue().Element
		default:
			return v
		}
	}
}

// Lookup walks pm along path ("a.b[c.d][0].e", see proppath), unwrapping on
// the way; the value found is returned as is.
func Lookup(pm resource.PropertyMap, path string) (resource.PropertyValue, bool) {
	v := resource.NewObjectProperty(pm)
	for _, part := range proppath.Split(path) {
		v = Unwrap(v)
		switch {
		case v.IsObject():
			next, ok := v.ObjectValue()[resource.PropertyKey(part)]
			if !ok {
				return resource.PropertyValue{}, false
			}
			v = next
		case v.IsArray():
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v.ArrayValue()) {
				return resource.PropertyValue{}, false
			}
			v = v.ArrayValue()[i]
		default:
			return resource.PropertyValue{}, false
		}
	}
	return v, true
}

// Get is the unwrapped input at path; the test fails if there is none.
func (r Resource) Get(t testing.TB, path string) resource.PropertyValue {
	t.Helper()
	v, ok := Lookup(r.Inputs, path)
	if !ok {
		t.Fatalf("%s: no input %s", r.ID(), path)
	}
	return Unwrap(v)
}

// StringAt is the string input at path; the test fails if it is not one.
func (r Resource) StringAt(t testing.TB, path string) string {
	t.Helper()
	v := r.Get(t, path)
	if !v.IsString() {
		t.Fatalf("%s: %s = %v, not a string", r.ID(), path, v)
	}
	return v.StringValue()
}

func (r Resource) WantString(t testing.TB, path, want string) {
	t.Helper()
	if v := r.Get(t, path); !v.IsString() || v.StringValue() != want {
		t.Errorf("%s: %s = %v, want %q", r.ID(), path, v, want)
	}
}

func (r Resource) WantBool(t testing.TB, path string, want bool) {
	t.Helper()
	if v := r.Get(t, path); !v.IsBool() || v.BoolValue() != want {
		t.Errorf("%s: %s = %v, want %v", r.ID(), path, v, want)
	}
}

func (r Resource) WantNumber(t testing.TB, path string, want float64) {
	t.Helper()
	if v := r.Get(t, path); !v.IsNumber() || v.NumberValue() != want {
		t.Errorf("%s: %s = %v, want %v", r.ID(), path, v, want)
	}
}

// Absent fails the test if the input at path is set (to anything but null).
func (r Resource) Absent(t testing.TB, path string) {
	t.Helper()
	if v, ok := Lookup(r.Inputs, path); ok && !Unwrap(v).IsNull() {
		t.Errorf("%s: %s = %v, want unset", r.ID(), path, v)
	}
}

// StringsAt is the array of strings at path; the test fails if it is unset
// or not an array.
func (r Resource) StringsAt(t testing.TB, path string) []string {
	t.Helper()
	v := r.Get(t, path)
	if !v.IsArray() {
		t.Fatalf("%s: %s = %v, not an array", r.ID(), path, v)
	}
	var out []string
	for _, e := range v.ArrayValue() {
		out = append(out, Unwrap(e).StringValue())
	}
	return out
}

// StringMapAt is the object of strings at path ({} when unset, so callers
// can index it).
func (r Resource) StringMapAt(t testing.TB, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	v, ok := Lookup(r.Inputs, path)
	if !ok {
		return out
	}
	v = Unwrap(v)
	if !v.IsObject() {
		t.Fatalf("%s: %s = %v, not an object", r.ID(), path, v)
	}
	for k, e := range v.ObjectValue() {
		out[string(k)] = Unwrap(e).StringValue()
	}
	return out
}

// ObjectsAt is the array of objects of strings at path (nil when unset).
func (r Resource) ObjectsAt(t testing.TB, path string) []map[string]string {
	t.Helper()
	v, ok := Lookup(r.Inputs, path)
	if !ok || Unwrap(v).IsNull() {
		return nil
	}
	var out []map[string]string
	for i := range Unwrap(v).ArrayValue() {
		out = append(out, r.StringMapAt(t, fmt.Sprintf("%s[%d]", path, i)))
	}
	return out
}
