package model

import "time"

// Observability is the opt-in monitoring of the platform: a ServiceMonitor
// for the Agent Sandbox controller and a PrometheusRule with the alerts the
// Agent Sandbox guide asks for. Nil (no observability block) renders nothing,
// so a cluster without the Prometheus Operator is never asked for its CRDs.
type Observability struct {
	// ServiceMonitor and PrometheusRule select the objects rendered; the
	// block's presence turns both on unless the spec says false.
	ServiceMonitor bool
	PrometheusRule bool

	// LifetimeFactor: alert when a claimed sandbox has lived longer than
	// LifetimeFactor × its tenant's max_ttl (expiry did not happen).
	LifetimeFactor float64
	// ClaimExpiriesPerHour: alert when at least this many sessions of one
	// tenant ran into max_ttl within an hour (sessions dying mid-work).
	ClaimExpiriesPerHour int64
	// QuotaSaturation: alert when a tenant uses at least this fraction of a
	// ResourceQuota resource (the signature of a runaway loop).
	QuotaSaturation float64
	// QuotaSaturatedFor: how long the quota must stay saturated before the
	// alert fires (a burst of claims that drains at once is not a runaway).
	QuotaSaturatedFor time.Duration
	// LifetimeExceededFor: how long a sandbox must stay past its limit
	// before the alert fires (a claim being deleted right now is not stuck).
	LifetimeExceededFor time.Duration
	// PoolEmptyFor: alert when a warm pool has had no ready sandbox this long.
	PoolEmptyFor time.Duration
	// ControllerDownFor: alert when the controller's metrics endpoint has been
	// unreachable this long.
	ControllerDownFor time.Duration
	// Labels are added to both objects, for the Prometheus Operator's
	// serviceMonitorSelector and ruleSelector (kube-prometheus-stack selects
	// by "release").
	Labels map[string]string

	Src   Range
	Attrs Attrs
}

// Defaults of the observability block's thresholds.
const (
	DefaultLifetimeFactor       = 2.0
	DefaultClaimExpiriesPerHour = 3
	DefaultQuotaSaturation      = 0.9
	DefaultQuotaSaturatedFor    = 15 * time.Minute
	DefaultLifetimeExceededFor  = 5 * time.Minute
	DefaultPoolEmptyFor         = 10 * time.Minute
	DefaultControllerDownFor    = 5 * time.Minute
)

// DefaultObservability is what an empty observability block means: both
// objects, with the default thresholds.
func DefaultObservability() Observability {
	return Observability{
		ServiceMonitor:       true,
		PrometheusRule:       true,
		LifetimeFactor:       DefaultLifetimeFactor,
		ClaimExpiriesPerHour: DefaultClaimExpiriesPerHour,
		QuotaSaturation:      DefaultQuotaSaturation,
		QuotaSaturatedFor:    DefaultQuotaSaturatedFor,
		LifetimeExceededFor:  DefaultLifetimeExceededFor,
		PoolEmptyFor:         DefaultPoolEmptyFor,
		ControllerDownFor:    DefaultControllerDownFor,
	}
}

// WantsServiceMonitor reports whether the platform renders the ServiceMonitor.
func (p *Platform) WantsServiceMonitor() bool {
	return p.Observability != nil && p.Observability.ServiceMonitor
}

// WantsPrometheusRule reports whether the platform renders the PrometheusRule.
func (p *Platform) WantsPrometheusRule() bool {
	return p.Observability != nil && p.Observability.PrometheusRule
}
