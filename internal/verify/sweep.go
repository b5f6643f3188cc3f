// The sweep check (V14): what drift's sweep finds outside the stack that
// weakens the platform fails verify too, so `verify --strict` in CI does not
// pass beside a guardrail neutered by matchConditions, a mutating webhook on
// the tenant's templates, a pod started under a swapped runtime class or a
// session past its end.

package verify

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/drift"
)

// sweepCovered are the sweep rules another check reports: S02 is V09's.
var sweepCovered = map[string]string{drift.RuleNetworkOpen: "V09"}

func checkSweep(ctx context.Context, v *Verifier) []Result {
	found, err := drift.Sweep(ctx, v.p, v.kube, v.dyn)
	if err != nil {
		return []Result{fail("cluster", "the sweep could not read the cluster: %s", shortErr(err))}
	}
	bySubject := map[string][]string{}
	for _, f := range found {
		if sweepCovered[f.Rule] != "" {
			continue
		}
		subject := "cluster"
		for _, t := range v.p.Tenants {
			if t.Name == f.Tenant {
				subject = t.Namespace
			}
		}
		bySubject[subject] = append(bySubject[subject], fmt.Sprintf("%s %s: %s (fix: %s)", f.Rule, f.Object(), f.Reason, f.Fix))
	}
	// The sweep judges what is live against the spec: with a tenant's
	// namespace missing there is nothing of it to judge, which is no pass.
	applied := 0
	for _, t := range v.p.Tenants {
		if _, err := v.kube.CoreV1().Namespaces().Get(ctx, t.Namespace, metav1.GetOptions{}); err != nil {
			bySubject[t.Namespace] = append(bySubject[t.Namespace], fmt.Sprintf("namespace %s: %s, so nothing of the tenant can be judged (run `paddock up`)", t.Namespace, shortErr(err)))
			continue
		}
		applied++
	}
	if applied == 0 {
		bySubject["cluster"] = append(bySubject["cluster"], "no tenant namespace exists: the platform is not applied (run `paddock up`)")
	}
	// The spec's trust_admission blocks are shown, like waivers, with what
	// each trusted object can rewrite now, or that it is gone.
	trust, err := drift.AdmissionTrust(ctx, v.p, v.kube)
	if err != nil {
		trust = drift.TrustNotes(v.p)
	}
	var trusted []string
	for _, tr := range trust {
		trusted = append(trusted, tr.Text())
	}
	var out []Result
	subjects := []string{"cluster"}
	for _, t := range v.p.Tenants {
		subjects = append(subjects, t.Namespace)
	}
	for _, s := range subjects {
		shown := ""
		if s == "cluster" && len(trusted) > 0 {
			shown = "; " + strings.Join(trusted, "; ")
		}
		if problems := bySubject[s]; len(problems) > 0 {
			sort.Strings(problems)
			out = append(out, fail(s, "%s%s", strings.Join(problems, "; "), shown))
			continue
		}
		out = append(out, pass(s, "nothing outside the stack weakens it (drift's sweep: bindings, runtime classes, guardrails, session lifetimes, mutating admission)%s", shown))
	}
	return out
}
