package components

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/components/internal/k8sres"
	"github.com/paddock-platform/paddock/internal/manifests/promoperator"
)

// MonitoringArgs are the inputs of the opt-in Prometheus Operator objects.
type MonitoringArgs struct {
	// Objects are the ServiceMonitor and PrometheusRule
	// (manifests.Objects.Observability).
	Objects []*unstructured.Unstructured
	// DependsOn are the release's resources: the objects live in its namespace.
	DependsOn []pulumi.Resource
}

// Monitoring registers the ServiceMonitor that scrapes the Agent Sandbox
// controller and the PrometheusRule of the platform's alerts.
type Monitoring struct {
	pulumi.ResourceState

	ServiceMonitor pulumi.StringOutput `pulumi:"serviceMonitor"`
	PrometheusRule pulumi.StringOutput `pulumi:"prometheusRule"`
}

// NewMonitoring registers the objects as children.
func NewMonitoring(ctx *pulumi.Context, name string, args *MonitoringArgs, opts ...pulumi.ResourceOption) (*Monitoring, error) {
	m := &Monitoring{}
	if err := ctx.RegisterComponentResource("paddock:observability:Monitoring", name, m, opts...); err != nil {
		return nil, err
	}
	var serviceMonitor, prometheusRule string
	for _, u := range args.Objects {
		if _, err := k8sres.RegisterUnstructured(ctx, u, pulumi.Parent(m), pulumi.DependsOn(args.DependsOn)); err != nil {
			return nil, err
		}
		switch u.GetKind() {
		case promoperator.ServiceMonitorKind:
			serviceMonitor = k8sres.Name(u)
		case promoperator.PrometheusRuleKind:
			prometheusRule = k8sres.Name(u)
		}
	}
	m.ServiceMonitor = pulumi.String(serviceMonitor).ToStringOutput()
	m.PrometheusRule = pulumi.String(prometheusRule).ToStringOutput()
	return m, ctx.RegisterResourceOutputs(m, pulumi.Map{"serviceMonitor": m.ServiceMonitor, "prometheusRule": m.PrometheusRule})
}
