package gcp

import (
	"fmt"

	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/monitoring"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

// Alerts are the platform's Cloud Monitoring alert policies: a ResourceQuota of
// a tenant refusing work (the signature of a runaway loop), and sandboxes
// living far longer than any session should. Both read what GKE writes by
// default (Admin Activity audit logs, the kubernetes.io/container/uptime
// system metric), so they need nothing installed in the cluster.
type Alerts struct {
	pulumi.ResourceState

	Policies pulumi.StringArrayOutput `pulumi:"policies"`
}

// NewAlerts registers the selected alert policies.
func NewAlerts(ctx *pulumi.Context, name string, args *AlertArgs, opts ...pulumi.ResourceOption) (*Alerts, error) {
	al := &Alerts{}
	if err := ctx.RegisterComponentResource("paddock:gcp:Alerts", name, al, opts...); err != nil {
		return nil, err
	}
	a := *args
	parent := pulumi.Parent(al)
	labels := pulumi.ToStringMap(gcpinputs.GCPLabels(a.ClusterName, a.Labels))
	channels := pulumi.ToStringArray(a.NotificationChannels)
	var names pulumi.StringArray

	if a.QuotaSaturation {
		p, err := monitoring.NewAlertPolicy(ctx, name+"-quota-saturation", &monitoring.AlertPolicyArgs{
			Project:     pulumi.String(a.Project),
			DisplayName: pulumi.String(fmt.Sprintf("Paddock %s: tenant quota exhausted", a.ClusterName)),
			Combiner:    pulumi.String("OR"),
			Severity:    pulumi.String("WARNING"),
			Conditions: monitoring.AlertPolicyConditionArray{monitoring.AlertPolicyConditionArgs{
				DisplayName: pulumi.String("A tenant's ResourceQuota refused a request"),
				ConditionMatchedLog: &monitoring.AlertPolicyConditionConditionMatchedLogArgs{
					Filter: pulumi.String(gcpinputs.QuotaExceededFilter(a.Project, a.Location, a.ClusterName, a.Namespaces)),
					LabelExtractors: pulumi.StringMap{
						"resource": pulumi.String(`EXTRACT(protoPayload.resourceName)`),
					},
				},
			}},
			// Log-match conditions need a notification rate limit.
			AlertStrategy: &monitoring.AlertPolicyAlertStrategyArgs{
				NotificationRateLimit: &monitoring.AlertPolicyAlertStrategyNotificationRateLimitArgs{Period: pulumi.String("300s")},
				AutoClose:             pulumi.String("1800s"),
			},
			Documentation: &monitoring.AlertPolicyDocumentationArgs{
				MimeType: pulumi.String("text/markdown"),
				Content: pulumi.String("A ResourceQuota in a tenant namespace refused a request: the tenant's fleet is at its cap. " +
					"A sandbox stuck in a loop is the usual cause; check the tenant's claims and warm pools before raising the quota."),
			},
			NotificationChannels: channels,
			UserLabels:           labels,
		}, parent)
		if err != nil {
			return nil, err
		}
		names = append(names, p.DisplayName)
	}

	if a.SandboxMaxLifetime > 0 {
		secs := a.SandboxMaxLifetime.Seconds()
		p, err := monitoring.NewAlertPolicy(ctx, name+"-sandbox-lifetime", &monitoring.AlertPolicyArgs{
			Project:     pulumi.String(a.Project),
			DisplayName: pulumi.String(fmt.Sprintf("Paddock %s: sandbox older than %s", a.ClusterName, a.SandboxMaxLifetime)),
			Combiner:    pulumi.String("OR"),
			Severity:    pulumi.String("WARNING"),
			Conditions: monitoring.AlertPolicyConditionArray{monitoring.AlertPolicyConditionArgs{
				DisplayName: pulumi.String("Sandbox container uptime above the session maximum"),
				ConditionThreshold: &monitoring.AlertPolicyConditionConditionThresholdArgs{
					Filter:         pulumi.String(gcpinputs.SandboxUptimeFilter(a.Location, a.ClusterName, a.Namespaces)),
					Comparison:     pulumi.String("COMPARISON_GT"),
					ThresholdValue: pulumi.Float64(secs),
					Duration:       pulumi.String("0s"),
					Aggregations: monitoring.AlertPolicyConditionConditionThresholdAggregationArray{
						monitoring.AlertPolicyConditionConditionThresholdAggregationArgs{
							AlignmentPeriod:  pulumi.String("300s"),
							PerSeriesAligner: pulumi.String("ALIGN_MAX"),
						},
					},
					Trigger: &monitoring.AlertPolicyConditionConditionThresholdTriggerArgs{Count: pulumi.Int(1)},
				},
			}},
			Documentation: &monitoring.AlertPolicyDocumentationArgs{
				MimeType: pulumi.String("text/markdown"),
				Content: pulumi.String(fmt.Sprintf("A sandbox container in a tenant namespace has run for more than %s, longer than any session should. "+
					"Its claim's expiry did not reap it: check the claim's lifecycle and the agent-sandbox controller.", a.SandboxMaxLifetime)),
			},
			NotificationChannels: channels,
			UserLabels:           labels,
		}, parent)
		if err != nil {
			return nil, err
		}
		names = append(names, p.DisplayName)
	}
	al.Policies = names.ToStringArrayOutput()
	return al, ctx.RegisterResourceOutputs(al, pulumi.Map{"policies": al.Policies})
}
