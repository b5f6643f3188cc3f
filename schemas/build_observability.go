package schemas

import (
	"time"

	"github.com/paddock-platform/paddock/internal/model"
)

// Bounds of the observability thresholds: below them an alert fires on
// ordinary operation, above them it never fires in time to matter.
const (
	minLifetimeFactor  = 1.0
	maxLifetimeFactor  = 10.0
	minClaimExpiryRate = 1
	maxClaimExpiryRate = 10000
	minQuotaSaturation = 0.5
	maxQuotaSaturation = 1.0
	minAlertFor        = time.Minute
	maxAlertFor        = 24 * time.Hour
)

// observability builds the observability block: which objects it asks for,
// the alert thresholds (model.DefaultObservability where unset) and the
// objects' labels.
func (b *builder) observability(n *node) model.Observability {
	o := model.DefaultObservability()
	o.Src, o.Attrs = n.src(), n.attrs()
	if v, st := b.boolean(n.attr(argServiceMonitor)); st == set {
		o.ServiceMonitor = v
	}
	if v, st := b.boolean(n.attr(argPrometheusRule)); st == set {
		o.PrometheusRule = v
	}
	if v, st := b.fraction(n.attr(argLifetimeFactor), minLifetimeFactor, maxLifetimeFactor); st == set {
		o.LifetimeFactor = v
	}
	if v, st := b.integer(n.attr(argClaimExpiryRate), minClaimExpiryRate, maxClaimExpiryRate); st == set {
		o.ClaimExpiriesPerHour = v
	}
	if v, st := b.fraction(n.attr(argQuotaSaturation), minQuotaSaturation, maxQuotaSaturation); st == set {
		o.QuotaSaturation = v
	}
	if d, st := b.duration(n.attr(argQuotaSaturatedFor), minAlertFor, maxAlertFor, false); st == set {
		o.QuotaSaturatedFor = d
	}
	if d, st := b.duration(n.attr(argLifetimeExceededFor), minAlertFor, maxAlertFor, false); st == set {
		o.LifetimeExceededFor = d
	}
	if d, st := b.duration(n.attr(argPoolEmptyFor), minAlertFor, maxAlertFor, false); st == set {
		o.PoolEmptyFor = d
	}
	if d, st := b.duration(n.attr(argControllerDownFor), minAlertFor, maxAlertFor, false); st == set {
		o.ControllerDownFor = d
	}
	if entries, st := b.strMap(n.attr(argLabels)); st == set {
		o.Labels = b.labels(entries, "label")
	}
	return o
}
