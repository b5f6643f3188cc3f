package components

import (
	"slices"
	"testing"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/pulumitest"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

const (
	tMonitoring     = "paddock:observability:Monitoring"
	tServiceMonitor = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
	tPrometheusRule = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
)

func runWithProvider(t *testing.T, p *model.Platform) *pulumitest.Mocks {
	t.Helper()
	m := &pulumitest.Mocks{}
	if err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		prov, err := kubernetes.NewProvider(ctx, "cluster", &kubernetes.ProviderArgs{})
		if err != nil {
			return err
		}
		_, err = NewPlatform(ctx, p.Name, &PlatformArgs{Platform: p}, pulumi.Providers(prov))
		return err
	}, pulumi.WithMocks("paddock", "test", m)); err != nil {
		t.Fatal(err)
	}
	return m
}

// The monitoring objects are one component under the platform, each object
// its child, on the caller's provider, after the release whose namespace
// they live in.
func TestMonitoringComponent(t *testing.T) {
	p := testPlatform(model.TargetKubeconfig)
	o := model.DefaultObservability()
	p.Observability = &o
	m := runWithProvider(t, p)

	mon := m.Find(t, tMonitoring, "monitoring")
	if mon.Parent != "paddock:index:Platform::demo" {
		t.Errorf("monitoring is parented to %q", mon.Parent)
	}
	for _, typ := range []string{tServiceMonitor, tPrometheusRule} {
		rs := m.OfType(typ)
		if len(rs) != 1 {
			t.Fatalf("%d %s registered:\n%s", len(rs), typ, m.List())
		}
		r := rs[0]
		if r.Parent != mon.ID() {
			t.Errorf("%s is parented to %q", r.ID(), r.Parent)
		}
		if r.Provider != "pulumi:providers:kubernetes::cluster" {
			t.Errorf("%s uses provider %q", r.ID(), r.Provider)
		}
		if !slices.Contains(r.Deps, "kubernetes:core/v1:Namespace::agent-sandbox-system") {
			t.Errorf("%s does not wait for the release namespace (deps %v)", r.ID(), r.Deps)
		}
		r.WantString(t, "metadata.labels[app.kubernetes.io/managed-by]", "paddock")
	}
	m.Find(t, tPrometheusRule, "agent-sandbox-system/"+manifests.PrometheusRuleName)
}

// Without the block nothing of the Prometheus Operator is registered.
func TestNoMonitoringWithoutTheBlock(t *testing.T) {
	m := runWithProvider(t, testPlatform(model.TargetKubeconfig))
	for _, typ := range []string{tMonitoring, tServiceMonitor, tPrometheusRule} {
		if rs := m.OfType(typ); len(rs) > 0 {
			t.Errorf("%d %s registered without an observability block", len(rs), typ)
		}
	}
}
