package vaptest

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

func policy(vars []admissionv1.Variable, validations ...admissionv1.Validation) *admissionv1.ValidatingAdmissionPolicy {
	return &admissionv1.ValidatingAdmissionPolicy{Spec: admissionv1.ValidatingAdmissionPolicySpec{Variables: vars, Validations: validations}}
}

// The first validation that does not hold refuses, with its message; one
// that ends in an error refuses too (failurePolicy Fail), naming it.
func TestAdmitLikeTheAPIServer(t *testing.T) {
	p := policy(
		[]admissionv1.Variable{
			{Name: "size", Expression: "object.spec.size"},
			{Name: "missing", Expression: "object.spec.absent"},
		},
		admissionv1.Validation{Expression: "variables.size <= 3", Message: "at most 3"},
		admissionv1.Validation{Expression: "oldObject == null || request.operation == 'UPDATE' && variables.size >= oldObject.spec.size", Message: "never shrinks"},
		admissionv1.Validation{Expression: "!has(object.spec.strict) || variables.missing == 1"},
	)
	obj := func(size int64, strict bool) map[string]any {
		spec := map[string]any{"size": size}
		if strict {
			spec["strict"] = true
		}
		return map[string]any{"spec": spec}
	}
	for _, c := range []struct {
		name     string
		obj, old map[string]any
		want     string
		index    int
	}{
		{"admitted", obj(2, false), nil, "", 0},
		{"first rule", obj(4, false), nil, "at most 3", 0},
		{"update", obj(1, false), obj(2, false), "never shrinks", 1},
		{"a variable that failed", obj(1, true), nil, "expression '!has(object.spec.strict) || variables.missing == 1' resulted in error", 2},
	} {
		r, err := Admit(p, c.obj, c.old)
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && r != nil:
			t.Errorf("%s: refused %+v", c.name, r)
		case c.want != "" && (r == nil || !strings.HasPrefix(r.Message, c.want) || r.Index != c.index):
			t.Errorf("%s: %+v, want %q from validation %d", c.name, r, c.want, c.index)
		}
	}
	if _, err := Admit(policy(nil, admissionv1.Validation{Expression: "object.("}), obj(1, false), nil); err == nil {
		t.Error("a policy that does not compile was evaluated")
	}
}
