package converge

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
)

// KeepTrusted takes out of res, before any repair, the fields that only
// admission objects the spec trusts (trust_admission) could have added: a
// write would only see them added again, so `up` neither rewrites nor counts
// them, and says on out each one it keeps.
func KeepTrusted(out io.Writer, op string, p *model.Platform, res *Comparison) {
	if len(p.TrustedAdmission) == 0 {
		return
	}
	var trust []drift.TrustedAdmission
	res.Report.Resources, trust = drift.KeepTrusted(p, res.Report.Resources, drift.TrustNotes(p))
	for _, t := range trust {
		for _, k := range t.Kept {
			fmt.Fprintf(out, "paddock %s: %s: added by %s, trusted in the spec (%s); kept\n", op, k, t.Ref(), t.Reason)
		}
	}
	for _, o := range res.Objects {
		if len(o.Diffs) == 0 {
			continue
		}
		kept, _ := drift.KeepTrusted(p, []drift.Resource{{Kind: o.Desired.GetKind(), Name: ObjectKey(o.Desired), Fields: o.Diffs}}, drift.TrustNotes(p))
		if len(kept) == 0 {
			o.Diffs, o.Immutable = nil, ""
		} else {
			o.Diffs = kept[0].Fields
		}
	}
}

// refuseAdmissionReadd judges, right after a repair, the objects that differ
// again (after, re-read from the cluster): a field that mutating admission
// could have added (drift.Field.AddedBy) and that is back re-appears on
// every write while the admission object stands, so `up` never calls the
// object repaired. What only objects the spec trusts (trust_admission)
// could have added is kept and said; anything else that came back fails,
// naming the admission objects and the fix. Resources of after whose only
// differences were kept are taken out of it.
func refuseAdmissionReadd(out io.Writer, p *model.Platform, after *drift.Report) error {
	remaining, trust := drift.KeepTrusted(p, after.Resources, drift.TrustNotes(p))
	after.Resources = remaining
	for _, t := range trust {
		for _, k := range t.Kept {
			fmt.Fprintf(out, "paddock up: %s is back after the write: %s, trusted in the spec (%s), adds it; kept\n", k, t.Ref(), t.Reason)
		}
	}
	var back []string
	admission := map[string]bool{}
	for _, r := range remaining {
		for _, f := range r.Fields {
			if len(f.AddedBy) == 0 {
				continue
			}
			back = append(back, fmt.Sprintf("%s %s: %s %s", r.Kind, r.Name, f.Path, f.AdmissionText()))
			for _, ref := range f.AddedBy {
				admission[ref] = true
			}
		}
	}
	if len(back) == 0 {
		return nil
	}
	refs := make([]string, 0, len(admission))
	for ref := range admission {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	var remove, trustIt []string
	for _, ref := range refs {
		kind, name, _ := strings.Cut(ref, "/")
		remove = append(remove, "kubectl delete "+kind+" "+name)
		k := model.AdmissionWebhook
		if kind == strings.ToLower(model.AdmissionPolicy) {
			k = model.AdmissionPolicy
		}
		trustIt = append(trustIt, fmt.Sprintf("trust_admission %q { kind = %q, reason = \"...\" }", name, k))
	}
	return fmt.Errorf("not repaired: mutating admission adds it back on every write: %s. "+
		"Remove the admission object (%s) or narrow its rules or namespaceSelector so that it no longer selects the object, then run `paddock up` again; "+
		"or, if it may rewrite what the platform guards, trust it in the spec (%s)",
		strings.Join(back, "; "), strings.Join(remove, "; "), strings.Join(trustIt, "; "))
}
