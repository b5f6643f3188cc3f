package rules

import (
	"strings"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-015", Title: "Audit sink destination",
		Hint: "Name the sink (letters, digits, _ - .), pick kind bigquery, storage or pubsub, and a destination valid for it: a dataset id ([A-Za-z0-9_]), a bucket name (3-63 of [a-z0-9_.-]), a topic name.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			names := map[string]bool{}
			dests := map[string]bool{}
			for _, s := range p.AuditSinks {
				addr := "audit_sink." + s.Name
				if !sinkNameRE.MatchString(s.Name) {
					out = append(out, v(addr, "name", "%q is not a log sink name", s.Name))
				}
				if names[s.Name] {
					out = append(out, v(addr, "name", "sink %q is declared twice", s.Name))
				}
				names[s.Name] = true
				if k := s.Kind + "/" + s.Destination; dests[k] {
					out = append(out, v(addr, "destination", "destination %s is used by two sinks (Paddock creates and owns it)", k))
				} else {
					dests[k] = true
				}
				switch s.Kind {
				case gcpinputs.AuditBigQuery:
					if !datasetRE.MatchString(s.Destination) || len(s.Destination) > 1024 {
						out = append(out, v(addr, "destination", "%q is not a BigQuery dataset id", s.Destination))
					}
					if s.RetentionDays < 0 {
						out = append(out, v(addr, "retention_days", "negative retention"))
					}
				case gcpinputs.AuditStorage:
					if !bucketRE.MatchString(s.Destination) || strings.HasPrefix(s.Destination, "goog") || strings.Contains(s.Destination, "google") {
						out = append(out, v(addr, "destination", "%q is not a valid Cloud Storage bucket name", s.Destination))
					}
					if s.RetentionDays < 1 {
						out = append(out, v(addr, "retention_days", "an audit bucket needs a retention policy of at least one day"))
					}
				case gcpinputs.AuditPubSub:
					if !topicRE.MatchString(s.Destination) || strings.HasPrefix(strings.ToLower(s.Destination), "goog") {
						out = append(out, v(addr, "destination", "%q is not a valid Pub/Sub topic name", s.Destination))
					}
					if s.RetentionDays < 0 || s.RetentionDays > 31 {
						out = append(out, v(addr, "retention_days", "Pub/Sub keeps messages 10 minutes to 31 days, not %d days", s.RetentionDays))
					}
				default:
					out = append(out, v(addr, "kind", "unknown sink kind %q (want bigquery, storage or pubsub)", s.Kind))
				}
				if s.LockRetention && s.Kind != gcpinputs.AuditStorage {
					out = append(out, v(addr, "lock_retention", "only a storage sink has a lockable retention policy"))
				}
				if _, err := gcpinputs.AuditFilter(s.Filter); err != nil {
					out = append(out, v(addr, "filters", "%s", strings.TrimPrefix(err.Error(), "audit filter: ")))
				}
			}
			return out
		},
	})
}
