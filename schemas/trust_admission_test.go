package schemas

import (
	"reflect"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

// A trust_admission block names one mutating admission object by kind and
// name, with its reason, and reaches the model in spec order.
func TestTrustAdmission(t *testing.T) {
	src := head + `trust_admission "istio-sidecar-injector" {
  kind   = "MutatingWebhookConfiguration"
  reason = "Istio injects its sidecar into tenant pods."
}
trust_admission "istio-sidecar-injector" {
  kind   = "MutatingAdmissionPolicy"
  reason = "A policy of the same name is another object."
}
`
	p, diags := NewLoader().LoadSource("spec.hcl", []byte(src), LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, tr := range p.TrustedAdmission {
		got = append(got, tr.Ref()+": "+tr.Reason)
	}
	want := []string{
		"mutatingwebhookconfiguration/istio-sidecar-injector: Istio injects its sidecar into tenant pods.",
		"mutatingadmissionpolicy/istio-sidecar-injector: A policy of the same name is another object.",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("trusted = %q, want %q", got, want)
	}
	if tr := p.TrustOf(model.AdmissionWebhook, "istio-sidecar-injector"); tr == nil || tr.Src.Line != 5 {
		t.Errorf("TrustOf = %+v, want the block at line 5", tr)
	}
	if p.TrustOf(model.AdmissionWebhook, "istio") != nil {
		t.Error("trust is by exact name: istio is not trusted")
	}
}

// Every mistake in a trust_admission block is an error at its place that
// says what to write.
func TestTrustAdmissionErrors(t *testing.T) {
	tests := []struct {
		name, src, summary, detail string
	}{
		{"unknown argument", head + "trust_admission \"x\" {\n  kind = \"MutatingWebhookConfiguration\"\n  reason = \"r\"\n  /*@*/namespace = \"a\"\n}\n",
			"Unsupported argument", `An argument named "namespace" is not expected here`},
		{"empty reason", head + "trust_admission \"x\" {\n  kind = \"MutatingWebhookConfiguration\"\n  reason = /*@*/\"  \"\n}\n",
			"Invalid trust reason", "reason is empty"},
		{"missing reason", head + "/*@*/trust_admission \"x\" {\n  kind = \"MutatingWebhookConfiguration\"\n}\n",
			"Missing required argument", `reason = "why this object may rewrite`},
		{"missing kind", head + "/*@*/trust_admission \"x\" {\n  reason = \"r\"\n}\n",
			"Missing required argument", `kind = "MutatingWebhookConfiguration"`},
		{"unknown kind", head + "trust_admission \"x\" {\n  kind = /*@*/\"MutatingWebhook\"\n  reason = \"r\"\n}\n",
			"Invalid admission kind", "MutatingWebhookConfiguration"},
		{"bad name", head + "trust_admission /*@*/\"Inject_Keys\" {\n  kind = \"MutatingWebhookConfiguration\"\n  reason = \"r\"\n}\n",
			"Invalid trusted admission object name", "kubectl get mutatingwebhookconfigurations"},
		{"duplicate", head + "trust_admission \"x\" {\n  kind = \"MutatingWebhookConfiguration\"\n  reason = \"r\"\n}\ntrust_admission /*@*/\"x\" {\n  kind = \"MutatingWebhookConfiguration\"\n  reason = \"again\"\n}\n",
			"Duplicate trust_admission", "is already trusted at spec.hcl:5:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := markerPos(t, "spec.hcl", tt.src)
			_, diags := NewLoader().LoadSource("spec.hcl", []byte(tt.src), LoadOptions{})
			for _, d := range diags {
				if d.Summary != tt.summary {
					continue
				}
				if got := pos(*d.Subject); got != want {
					t.Errorf("%q at %s, want %s", d.Summary, got, want)
				}
				if !strings.Contains(d.Detail, tt.detail) {
					t.Errorf("detail %q does not contain %q", d.Detail, tt.detail)
				}
				return
			}
			t.Errorf("no %q diagnostic; got %v", tt.summary, diags)
		})
	}
}
