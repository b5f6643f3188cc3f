package schemas

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
)

func loadObservability(t *testing.T, block string) *model.Observability {
	t.Helper()
	p, diags := NewLoader().LoadSource("spec.hcl", []byte(head+block), LoadOptions{Environ: []string{}})
	if diags.HasErrors() || p == nil {
		t.Fatalf("%v", diags)
	}
	return p.Observability
}

// No block, no observability; an empty block asks for both objects with the
// default thresholds; every argument reaches the model.
func TestLoadObservability(t *testing.T) {
	if o := loadObservability(t, ""); o != nil {
		t.Errorf("no block gave %+v", o)
	}
	o := loadObservability(t, "observability {}\n")
	want := model.DefaultObservability()
	want.Src, want.Attrs = o.Src, o.Attrs
	check(t, "empty block", *o, want)
	if o.Src.String() != "spec.hcl:5:1" {
		t.Errorf("block source %q", o.Src)
	}

	o = loadObservability(t, `observability {
  service_monitor     = false
  prometheus_rule     = true
  lifetime_factor     = 1.5
  claim_expiry_rate   = 10
  quota_saturation    = 0.8
  quota_saturated_for = "3m"
  lifetime_exceeded_for = "1h"
  pool_empty_for      = "30m"
  controller_down_for = "2m"
  labels              = { release = "kube-prometheus-stack" }
}
`)
	check(t, "set", []any{o.ServiceMonitor, o.PrometheusRule, o.LifetimeFactor, o.ClaimExpiriesPerHour, o.QuotaSaturation, o.QuotaSaturatedFor, o.LifetimeExceededFor, o.PoolEmptyFor, o.ControllerDownFor, o.Labels},
		[]any{false, true, 1.5, int64(10), 0.8, 3 * time.Minute, time.Hour, 30 * time.Minute, 2 * time.Minute, map[string]string{"release": "kube-prometheus-stack"}})
	if !o.Attrs["quota_saturation"].Known() {
		t.Errorf("no source range of quota_saturation: %+v", o.Attrs)
	}
}

// Bad values are errors at the value, file:line:column, saying the range.
func TestObservabilityErrors(t *testing.T) {
	for _, tt := range []struct{ name, body, summary, detail string }{
		{"factor below 1", `lifetime_factor = /*@*/0.5`, "Value out of range", "lifetime_factor must be between 1 and 10, not 0.5."},
		{"saturation above 1", `quota_saturation = /*@*/1.2`, "Value out of range", "quota_saturation must be between 0.5 and 1, not 1.2."},
		{"saturation as percent", `quota_saturation = /*@*/90`, "Value out of range", "between 0.5 and 1, not 90."},
		{"expiry rate fraction", `claim_expiry_rate = /*@*/2.5`, "Invalid value", "claim_expiry_rate must be a whole number between 1 and 10000"},
		{"expiry rate zero", `claim_expiry_rate = /*@*/0`, "Value out of range", "between 1 and 10000, not 0."},
		{"pool empty too short", `pool_empty_for = /*@*/"10s"`, "Value out of range", "pool_empty_for must be between 1m and 24h, not 10s."},
		{"quota for too long", `quota_saturated_for = /*@*/"2d"`, "Value out of range", "quota_saturated_for must be between 1m and 24h, not 2d."},
		{"lifetime for too short", `lifetime_exceeded_for = /*@*/"30s"`, "Value out of range", "lifetime_exceeded_for must be between 1m and 24h, not 30s."},
		{"controller down not a duration", `controller_down_for = /*@*/"five minutes"`, "Invalid duration", "is not a duration"},
		{"flag not a bool", `service_monitor = /*@*/"maybe"`, "Incorrect value type", "a bool is required"},
		{"label key", `labels = { /*@*/"bad key!" = "x" }`, "Invalid label key", ""},
		{"unknown argument", `/*@*/quota_saturaton = 0.9`, "Unsupported argument", `Did you mean "quota_saturation"?`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := head + "observability {\n  " + tt.body + "\n}\n"
			assertDiagnosticAt(t, src, tt.summary, tt.detail)
		})
	}
}

// One observability block per spec, across its files.
func TestObservabilityIsASingleton(t *testing.T) {
	src := head + "observability {}\n/*@*/observability {}\n"
	want := markerPos(t, "spec.hcl", src)
	_, diags := NewLoader().LoadSource("spec.hcl", []byte(src), LoadOptions{Environ: []string{}})
	for _, d := range diags {
		if d.Summary == "Duplicate observability block" {
			if got := pos(*d.Subject); got != want {
				t.Errorf("at %s, want %s", got, want)
			}
			return
		}
	}
	t.Errorf("no duplicate error: %v", diags)
}

// `paddock schema` describes the block: fractions are numbers, not integers,
// so an editor accepts quota_saturation = 0.85 and flags a string.
func TestObservabilityJSONSchema(t *testing.T) {
	s := compileSchema(t)
	var good, bad any
	_ = json.Unmarshal([]byte(`{"observability": {"quota_saturation": 0.85, "lifetime_factor": 2.5, "claim_expiry_rate": 3, "pool_empty_for": "10m", "labels": {"release": "kps"}}}`), &good)
	if err := s.Validate(good); err != nil {
		t.Errorf("a valid observability block does not validate: %v", err)
	}
	_ = json.Unmarshal([]byte(`{"observability": {"quota_saturation": "high"}}`), &bad)
	if err := s.Validate(bad); err == nil {
		t.Error("a string quota_saturation validates")
	}
}
