// Package promoperator holds the Prometheus Operator API facts Paddock's
// opt-in monitoring objects use. Paddock does not import the operator's Go
// module (its dependencies would move the pinned k8s.io modules), so the
// group, version and resources are declared here, once.
package promoperator

import "k8s.io/apimachinery/pkg/runtime/schema"

// GroupVersion is the operator's stable API (monitoring.coreos.com/v1).
var GroupVersion = schema.GroupVersion{Group: "monitoring.coreos.com", Version: "v1"}

// The resources and kinds Paddock renders.
var (
	ServiceMonitors = GroupVersion.WithResource("servicemonitors")
	PrometheusRules = GroupVersion.WithResource("prometheusrules")
)

const (
	ServiceMonitorKind = "ServiceMonitor"
	PrometheusRuleKind = "PrometheusRule"
)

// CRDs are the CustomResourceDefinitions a cluster must serve before
// Paddock can apply the objects ("servicemonitors.monitoring.coreos.com").
func CRDs() []string {
	return []string{ServiceMonitors.GroupResource().String(), PrometheusRules.GroupResource().String()}
}
