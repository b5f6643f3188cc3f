package drift

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/model"
)

// Trusted mutating admission. A trust_admission block of the spec trusts one
// admission object by its exact kind and name, with a reason, the way a
// waiver loosens one rule: S09 does not report it, and what it adds to an
// object Paddock applies is kept rather than reported as drift. Like a
// waiver it is shown in every report, here with what the object can
// rewrite now, and one that is not in the cluster is said.
//
// Trust is by name, not by content: a trusted webhook whose rules or
// namespace selector widen stays trusted, as a waiver holds for its rule
// and scope whatever the waived object then holds. What the trust is worth
// is the trusted object's current reach, which every drift report prints,
// so a widening shows where the trust is shown.

// TrustedAdmission is one trust_admission of the spec, as the cluster has it.
type TrustedAdmission struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
	// Source is the trust_admission block, file:line:col.
	Source string `json:"source"`
	// Live: the object exists. Read: the cluster was read (false when it
	// could not be: Live and Reach say nothing then).
	Live bool `json:"live"`
	Read bool `json:"read"`
	// Reach is what it can rewrite among what the platform guards, as S09
	// would say it ("" when nothing).
	Reach string `json:"reach,omitempty"`
	// Kept are the fields of Paddock's objects that it (alone) could have
	// added and that are kept because it is trusted: "SandboxTemplate
	// agents-a/python spec.podTemplate...envFrom".
	Kept []string `json:"kept,omitempty"`
}

// Ref is "mutatingwebhookconfiguration/name".
func (t TrustedAdmission) Ref() string { return model.AdmissionRef(t.Kind, t.Name) }

// Text is the trust in one paragraph, for reports.
func (t TrustedAdmission) Text() string {
	s := fmt.Sprintf("%s trusted by the spec (%s): %s", t.Ref(), t.Source, t.Reason)
	switch {
	case !t.Read:
		s += ". The cluster was not read, so what it rewrites is not known"
	case !t.Live:
		s += fmt.Sprintf(". It is not in the cluster: the trust is unused; remove the trust_admission %q block, or it trusts whatever is created under that name next", t.Name)
	case t.Reach == "":
		s += ". It rewrites nothing the platform guards now"
	default:
		s += ". Now: " + t.Reach
	}
	if len(t.Kept) > 0 {
		s += fmt.Sprintf("; kept what it added: %s", strings.Join(t.Kept, "; "))
	}
	return s
}

// AdmissionTrust is each trust_admission of p as the cluster has it:
// whether the object exists and what it can rewrite (S09's judgement, as if
// it were not trusted).
func AdmissionTrust(ctx context.Context, p *model.Platform, kube kubernetes.Interface) ([]TrustedAdmission, error) {
	out := TrustNotes(p)
	if len(out) == 0 || kube == nil {
		return out, nil
	}
	configs, err := mutatingWebhooks(ctx, kube)
	if err != nil {
		return out, err
	}
	policies, _, err := mutatingPolicies(ctx, kube)
	if err != nil {
		return out, err
	}
	live := map[string]bool{}
	for _, c := range configs {
		live[model.AdmissionRef(model.AdmissionWebhook, c.Name)] = true
	}
	for _, pol := range policies {
		live[model.AdmissionRef(model.AdmissionPolicy, pol.Name)] = true
	}
	built, nsLabels, err := sweepInputs(ctx, p, kube)
	if err != nil {
		return out, err
	}
	found, err := sweepMutatingAdmission(ctx, built, nsLabels, kube, nil)
	if err != nil {
		return out, err
	}
	reach := map[string][]string{}
	for _, f := range found {
		ref := model.AdmissionRef(f.Kind, f.Name)
		what, _, _ := strings.Cut(f.Reason, " before it is stored")
		reach[ref] = append(reach[ref], what)
	}
	for i := range out {
		out[i].Read = true
		out[i].Live = live[out[i].Ref()]
		out[i].Reach = strings.Join(reach[out[i].Ref()], "; ")
	}
	return out, nil
}

// TrustNotes are p's trust_admission blocks, the cluster not read.
func TrustNotes(p *model.Platform) []TrustedAdmission {
	var out []TrustedAdmission
	for _, t := range p.TrustedAdmission {
		out = append(out, TrustedAdmission{Kind: t.Kind, Name: t.Name, Reason: t.Reason, Source: t.Src.String()})
	}
	return out
}

// KeepTrusted takes out of resources every field that only trusted
// admission objects could have added (Field.AddedBy all trusted in p), and
// adds it to the Kept of the first of them in trust. A resource left with
// no field is dropped. Other fields, and fields an untrusted object could
// have added too, stay.
func KeepTrusted(p *model.Platform, resources []Resource, trust []TrustedAdmission) ([]Resource, []TrustedAdmission) {
	if len(p.TrustedAdmission) == 0 {
		return resources, trust
	}
	index := map[string]int{}
	for i, t := range trust {
		index[t.Ref()] = i
	}
	var out []Resource
	for _, r := range resources {
		var fields []Field
		for _, f := range r.Fields {
			if i, ok := trustedOnly(p, f, index); ok {
				trust[i].Kept = append(trust[i].Kept, r.Title()+" "+f.Path)
				continue
			}
			fields = append(fields, f)
		}
		if len(r.Fields) > 0 && len(fields) == 0 {
			continue
		}
		r.Fields = fields
		out = append(out, r)
	}
	return out, trust
}

// trustedOnly reports whether every object that could have added f is
// trusted, and the first one's index in trust.
func trustedOnly(p *model.Platform, f Field, index map[string]int) (int, bool) {
	if len(f.AddedBy) == 0 {
		return 0, false
	}
	first := -1
	for _, ref := range f.AddedBy {
		kind, name, _ := strings.Cut(ref, "/")
		var t *model.TrustedAdmission
		for _, k := range model.AdmissionKinds {
			if strings.ToLower(k) == kind {
				t = p.TrustOf(k, name)
			}
		}
		i, ok := index[ref]
		if t == nil || !ok {
			return 0, false
		}
		if first < 0 {
			first = i
		}
	}
	return first, true
}
