package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

func observed(sm, pr bool) *model.Platform {
	o := model.DefaultObservability()
	o.ServiceMonitor, o.PrometheusRule = sm, pr
	o.Src = model.Range{Filename: "platform.hcl", Line: 40, Column: 1}
	return &model.Platform{Name: "p", Observability: &o}
}

// A spec asking for monitoring objects on a cluster without the Prometheus
// Operator's CRDs is refused before anything is applied, naming the missing
// CRDs, the block, what to install and how to turn it off.
func TestMissingMonitoringCRDsAreRefused(t *testing.T) {
	err := checkMonitoringCRDs(context.Background(), crdClient(), "up", observed(true, true))
	if err == nil {
		t.Fatal("a cluster without the CRDs was let through")
	}
	for _, want := range []string{
		"up refused before applying anything",
		"observability block (platform.hcl:40:1)",
		"servicemonitors.monitoring.coreos.com, prometheusrules.monitoring.coreos.com",
		"Install the Prometheus Operator",
		"set service_monitor = false and prometheus_rule = false",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
}

// Only the CRDs of the objects asked for are required, and they must serve v1.
func TestMonitoringCRDsChecked(t *testing.T) {
	sm := crd("servicemonitors.monitoring.coreos.com", []string{"v1"}, nil)
	pr := crd("prometheusrules.monitoring.coreos.com", []string{"v1"}, nil)
	ctx := context.Background()
	if err := checkMonitoringCRDs(ctx, crdClient(sm, pr), "preview", observed(true, true)); err != nil {
		t.Errorf("both CRDs installed: %v", err)
	}
	if err := checkMonitoringCRDs(ctx, crdClient(sm), "preview", observed(true, false)); err != nil {
		t.Errorf("only a ServiceMonitor asked for: %v", err)
	}
	err := checkMonitoringCRDs(ctx, crdClient(sm), "preview", observed(false, true))
	if err == nil || !strings.Contains(err.Error(), "lacks the CRD(s) prometheusrules.monitoring.coreos.com.") {
		t.Errorf("PrometheusRule without its CRD: %v", err)
	}
	old := crd("prometheusrules.monitoring.coreos.com", []string{"v1beta1"}, nil)
	err = checkMonitoringCRDs(ctx, crdClient(sm, old), "preview", observed(true, true))
	if err == nil || !strings.Contains(err.Error(), "installed, but not serving v1") {
		t.Errorf("a CRD not serving v1: %v", err)
	}
}

// Without the block (or with both objects off) no CRD is read at all: the
// guard is a no-op even without a cluster.
func TestNoObservabilityNeedsNoCRDs(t *testing.T) {
	e := &Engine{}
	for _, p := range []*model.Platform{{Name: "p"}, observed(false, false)} {
		if err := e.guardMonitoringCRDs(context.Background(), "up", p); err != nil {
			t.Errorf("%v", err)
		}
	}
}
