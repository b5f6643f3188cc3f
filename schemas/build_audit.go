package schemas

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
)

// Building audit sinks and waivers.

var (
	bigQueryRe = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]\.[A-Za-z0-9_]{1,1000}$`)
	bucketRe   = regexp.MustCompile(`^gs://[a-z0-9][-a-z0-9_.]{1,220}[a-z0-9](/.*)?$`)
	topicRe    = regexp.MustCompile(`^projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/topics/[A-Za-z][-A-Za-z0-9_.~+%]{2,254}$`)
	scopeRe    = regexp.MustCompile(`^[a-z_]+(\.[a-z0-9]([-a-z0-9_]*[a-z0-9])?)?(\.[a-z_]+\.[a-z0-9]([-a-z0-9_]*[a-z0-9])?)*$`)
)

// auditSink builds an audit_sink block: its kind, a destination of the form
// that kind needs, and its filters (model.DefaultAuditFilters when unset).
func (b *builder) auditSink(n *node) model.AuditSink {
	s := model.AuditSink{Name: n.Label, Filters: model.DefaultAuditFilters(), Src: n.src(), Attrs: n.attrs()}
	kind, st := b.enum(n.attr(argKind), auditKinds, "audit sink kind")
	b.required(st, n.attr(argKind), n.blockMeta, argKind, "its kind", `kind = "bigquery" (or "storage", "pubsub")`)
	s.Kind = kind
	dest, st := b.str(n.attr(argDestination))
	if b.required(st, n.attr(argDestination), n.blockMeta, argDestination, "where records go", `destination = "my-project.agent_audit"`) == set {
		var re *regexp.Regexp
		var example string
		switch kind {
		case model.AuditBigQuery:
			re, example = bigQueryRe, `"my-project.agent_audit" (project.dataset)`
		case model.AuditStorage:
			re, example = bucketRe, `"gs://my-audit-bucket"`
		case model.AuditPubSub:
			re, example = topicRe, `"projects/my-project/topics/agent-audit"`
		}
		if re != nil && !re.MatchString(dest) {
			b.errorf(n.attr(argDestination).Expr.Range(), "Invalid audit destination",
				"%q is not a %s destination. Write it as %s.", dest, kind, example)
		} else if project := model.AuditDestinationProject(kind, dest); b.p.Target.Kind == model.TargetGKE && project != "" && b.p.Target.Project != "" && project != b.p.Target.Project {
			// The sink reads the cluster project's audit logs, so it lives
			// there, and Paddock creates its destination next to it.
			b.errorf(n.attr(argDestination).Expr.Range(), "Audit destination in another project",
				"%q is in project %q, but the cluster's project is %q: Paddock creates the log sink and its %s in the cluster's project. Write %q.",
				dest, project, b.p.Target.Project, kind, model.AuditDestinationIn(kind, dest, b.p.Target.Project))
		}
		s.Destination = dest
	}
	if filters, st := b.strList(n.attr(argFilters)); st == set {
		if len(filters) == 0 {
			b.errorf(n.attr(argFilters).Expr.Range(), "Invalid filters", "filters is empty, so the sink would receive nothing. List what it receives: %s.", quotedList(auditFilters))
		}
		for _, f := range filters {
			if !slices.Contains(auditFilters, f) {
				b.errorf(n.attr(argFilters).Expr.Range(), "Invalid audit filter",
					"%q is not an audit filter.%s Use %s.", f, didYouMeanSentence(f, auditFilters), quotedList(auditFilters))
			}
		}
		s.Filters = filters
	}
	if v, st := b.boolean(n.attr(argIncludePayloads)); st == set {
		s.IncludePayloads = v
	}
	return s
}

// waiver builds a waiver block: the rule it waives, its scope, the reason and
// the expiry.
func (b *builder) waiver(wc *node) model.Waiver {
	w := model.Waiver{Src: wc.src()}
	rule, st := b.str(wc.attr(argRule))
	if b.required(st, wc.attr(argRule), wc.blockMeta, argRule, "the ID of the rule it waives", `rule = "PDK-306"`) == set {
		if strings.TrimSpace(rule) == "" {
			b.errorf(wc.attr(argRule).Expr.Range(), "Invalid waiver rule", "rule is empty. Set the ID of the policy rule this waiver is for, as printed with the finding.")
		}
		w.Rule = rule
	}
	reason, st := b.str(wc.attr(argReason))
	if b.required(st, wc.attr(argReason), wc.blockMeta, argReason, "a reason", `reason = "why this exception is acceptable, and until when"`) == set {
		if strings.TrimSpace(reason) == "" {
			b.errorf(wc.attr(argReason).Expr.Range(), "Invalid waiver reason", "reason is empty. A waiver is an explicit exception: say why it is acceptable.")
		}
		w.Reason = reason
	}
	if expires, st := b.str(wc.attr(argExpires)); st == set {
		if _, err := time.Parse(time.DateOnly, expires); err != nil || !dateRe.MatchString(expires) {
			b.errorf(wc.attr(argExpires).Expr.Range(), "Invalid expiry date",
				"%q is not a date of the form YYYY-MM-DD, such as \"2026-12-31\".", expires)
		}
		w.Expires = expires
	}
	if scope, st := b.str(wc.attr(argScope)); st == set {
		if !scopeRe.MatchString(scope) {
			b.errorf(wc.attr(argScope).Expr.Range(), "Invalid waiver scope",
				"%q is not an object address. Write it as the findings show it, such as \"tenant.team-a\" or \"tenant.team-a.template.python\".", scope)
		}
		w.Scope = scope
	}
	return w
}

// firstOr is list[0], or fallback for an empty list (for examples in messages).
func firstOr(list []string, fallback string) string {
	if len(list) > 0 {
		return list[0]
	}
	return fallback
}

// trustAdmission builds the trust_admission blocks: each names one mutating
// admission object by its exact kind and name, with the reason, and one
// object is trusted once.
func (b *builder) trustAdmission(nodes []*node) {
	seen := map[string]hcl.Range{}
	for _, n := range nodes {
		t := model.TrustedAdmission{Name: n.Label, Src: n.src()}
		ok := true
		if problem := dnsSubdomainProblem(n.Label); problem != "" {
			b.errorf(n.LabelRange, "Invalid trusted admission object name",
				"%q %s Write the object's name exactly as `kubectl get mutatingwebhookconfigurations` (or mutatingadmissionpolicies) lists it.", n.Label, problem)
			ok = false
		}
		kind, st := b.enum(n.attr(argKind), model.AdmissionKinds, "admission kind")
		if b.required(st, n.attr(argKind), n.blockMeta, argKind, "the kind of the object it trusts", `kind = "MutatingWebhookConfiguration" (or "MutatingAdmissionPolicy")`) != set {
			ok = false
		}
		t.Kind = kind
		reason, st := b.str(n.attr(argReason))
		if b.required(st, n.attr(argReason), n.blockMeta, argReason, "a reason", `reason = "why this object may rewrite sandboxes and their templates"`) == set {
			if strings.TrimSpace(reason) == "" {
				b.errorf(n.attr(argReason).Expr.Range(), "Invalid trust reason",
					"reason is empty. Trusting a mutating admission object lets it rewrite what the platform guards: say why that is acceptable.")
			}
			t.Reason = reason
		}
		if !ok || kind == "" {
			continue
		}
		key := t.Ref()
		if first, dup := seen[key]; dup {
			b.errorf(n.LabelRange, "Duplicate trust_admission",
				"%s %q is already trusted at %s. Trust each object once: remove one of the blocks.", kind, n.Label, pos(first))
			continue
		}
		seen[key] = n.DefRange
		b.p.TrustedAdmission = append(b.p.TrustedAdmission, t)
	}
}
