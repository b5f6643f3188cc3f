package manifests_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/manifests"
)

// Every field that holds a sensitive value is found, map keys included, and
// exactly the names, labels and selectors among them are marked as such.
func TestSensitiveFields(t *testing.T) {
	const s = "initech"
	u := &unstructured.Unstructured{Object: map[string]any{
		"kind": "Thing",
		"metadata": map[string]any{
			"name":        "agents-" + s,
			"namespace":   s,
			"labels":      map[string]any{"paddock.dev/tenant": s, s + ".example.com/team": "a"},
			"annotations": map[string]any{"note": s},
		},
		"spec": map[string]any{
			"podSelector": map[string]any{
				"matchLabels":      map[string]any{"app": s},
				"matchExpressions": []any{map[string]any{"key": s, "operator": "In", "values": []any{"x", s}}},
			},
			"nodeSelector": map[string]any{"pool": s},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"team": s}},
				"spec":     map[string]any{"containers": []any{map[string]any{"env": []any{map[string]any{"name": "CUSTOMER", "value": s}}}}},
			},
			"subjects":   []any{map[string]any{"kind": "ServiceAccount", "name": "agent", "namespace": s}},
			"roleRef":    map[string]any{"name": s},
			"policyName": "paddock-" + s,
			"image":      "r.example.com/" + s + ":1",
			"untouched":  "nothing to see",
		},
	}}
	want := map[string]struct{ key, nameOrLabel bool }{
		"metadata.name":                                  {false, true},
		"metadata.namespace":                             {false, true},
		`metadata.labels["paddock.dev/tenant"]`:          {false, true},
		`metadata.labels["initech.example.com/team"]`:    {true, true},
		"metadata.annotations.note":                      {false, false},
		"spec.podSelector.matchLabels.app":               {false, true},
		"spec.podSelector.matchExpressions[0].key":       {false, true},
		"spec.podSelector.matchExpressions[0].values[1]": {false, true},
		"spec.nodeSelector.pool":                         {false, true},
		"spec.template.metadata.labels.team":             {false, true},
		"spec.template.spec.containers[0].env[0].value":  {false, false},
		"spec.subjects[0].namespace":                     {false, true},
		"spec.roleRef.name":                              {false, true},
		"spec.policyName":                                {false, true},
		"spec.image":                                     {false, false},
	}
	got := manifests.SensitiveFields(u, []string{"", s})
	seen := map[string]bool{}
	for _, f := range got {
		w, ok := want[f.Path]
		switch {
		case !ok:
			t.Errorf("unexpected field %s", f.Path)
		case f.Key != w.key || f.NameOrLabel != w.nameOrLabel:
			t.Errorf("%s: key %v, name or label %v; want %v, %v", f.Path, f.Key, f.NameOrLabel, w.key, w.nameOrLabel)
		}
		if f.Text == "" || !manifests.ContainsSensitive(f.Text, []string{s}) {
			t.Errorf("%s: text %q", f.Path, f.Text)
		}
		seen[f.Path] = true
	}
	for path := range want {
		if !seen[path] {
			t.Errorf("field %s not found", path)
		}
	}
	if got := manifests.SensitiveFields(u, []string{""}); len(got) != 0 {
		t.Errorf("an empty value matches: %v", got)
	}
}
