package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/localcluster"
)

// The summary names each firing alert with where and since when, and the
// pending ones by name; without a local Prometheus it says nothing.
func TestPrintAlerts(t *testing.T) {
	var b bytes.Buffer
	printAlerts(&b, alertsJSON{})
	if b.Len() != 0 {
		t.Errorf("no Prometheus, yet printed %q", b.String())
	}
	at := time.Date(2026, 12, 5, 19, 0, 0, 0, time.Local)
	printAlerts(&b, alertsJSON{
		URL: "http://127.0.0.1:1",
		Firing: []localcluster.Alert{{
			Labels:      map[string]string{"alertname": "PaddockTenantQuotaSaturated", "severity": "warning", "namespace": "agents-a"},
			Annotations: map[string]string{"summary": "Tenant quota pods in agents-a is 100% used"},
			State:       "firing", ActiveAt: at,
		}},
		Pending: []localcluster.Alert{{Labels: map[string]string{"alertname": "PaddockWarmPoolEmpty"}, State: "pending"}},
	})
	out := b.String()
	for _, want := range []string{"alerts (local Prometheus http://127.0.0.1:1)", "PaddockTenantQuotaSaturated", "agents-a", "19:00:00", "Tenant quota pods", "pending", "PaddockWarmPoolEmpty"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	printAlerts(&b, alertsJSON{URL: "http://127.0.0.1:1", Firing: []localcluster.Alert{}})
	if !strings.Contains(b.String(), "none firing") {
		t.Errorf("no alerts: %q", b.String())
	}
}
