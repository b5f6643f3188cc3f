package policy_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
)

// The spec's trust_admission blocks are shown like waivers: in the whole
// report with their reason and place, counted in the brief line, and in
// the JSON report.
func TestReportShowsTrustedAdmission(t *testing.T) {
	p := &model.Platform{Name: "demo", TrustedAdmission: []model.TrustedAdmission{{
		Kind: model.AdmissionWebhook, Name: "istio-sidecar-injector", Reason: "the mesh injects its sidecar",
		Src: model.Range{Filename: "spec.hcl", Line: 40, Column: 1}}}}
	r := policy.Check(p, time.Now())
	var full, brief, js bytes.Buffer
	if err := r.WriteText(&full, policy.TextOptions{NoSnippets: true}); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&brief, policy.TextOptions{Brief: true, Details: "paddock validate"}); err != nil {
		t.Fatal(err)
	}
	if err := policy.WriteJSON(&js, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Trusted mutating admission (1):", "mutatingwebhookconfiguration/istio-sidecar-injector (spec.hcl:40:1)", "reason: the mesh injects its sidecar"} {
		if !strings.Contains(full.String(), want) {
			t.Errorf("full report lacks %q:\n%s", want, full.String())
		}
	}
	if !strings.Contains(brief.String(), "1 trusted admission object") {
		t.Errorf("brief: %s", brief.String())
	}
	if !strings.Contains(js.String(), `"trustedAdmission"`) || !strings.Contains(js.String(), `"name": "istio-sidecar-injector"`) {
		t.Errorf("json: %s", js.String())
	}
}
