package verify

import (
	"context"
	"fmt"

	"github.com/paddock-platform/paddock/internal/drift"
)

// checkStackWhole is V15: every object of the platform's stack is, whole,
// what Paddock applies. It is drift's own comparison (Options.StackDrift,
// the engine's), not one of verify's, so a field drift reports (a
// guardrail's matchConditions, a template's envFrom, a Role's extra rule) is
// a failure here too; V09 still judges NetworkPolicies by what they open.
func checkStackWhole(ctx context.Context, v *Verifier) []Result {
	const subject = "stack"
	if v.opts.StackDrift == nil {
		return []Result{notVerifiable(subject, "no stack to compare with: `paddock verify` reads the platform's stack; this caller gave none")}
	}
	rep, err := v.opts.StackDrift(ctx)
	if err != nil {
		return []Result{notVerifiable(subject, "the stack could not be compared with the cluster: %s", shortErr(err))}
	}
	var out []Result
	for _, res := range rep.Resources {
		out = append(out, fail(res.Title(), "%s", describeDrift(res)))
	}
	if rep.Partial != "" {
		out = append(out, notVerifiable(subject, "only the fields the spec declares were compared (%s): fields outside it are unchecked", rep.Partial))
	}
	if len(out) == 0 {
		out = append(out, pass(subject, "%d objects of stack %q are, whole, what Paddock applies", rep.Checked, rep.Stack))
	}
	return out
}

// describeDrift is one resource's drift on one line: its change and up to
// three fields with their writers.
func describeDrift(res drift.Resource) string {
	if len(res.Fields) == 0 {
		return fmt.Sprintf("%s; `paddock up` repairs it", res.Change)
	}
	var fields []string
	for _, f := range res.Fields {
		s := fmt.Sprintf("%s is %s, Paddock applies %s", f.Path, drift.Value(f.Live), drift.Value(f.Declared))
		if by := f.By(); by != "" {
			s += " (written by " + by + ")"
		}
		fields = append(fields, s)
	}
	return joinMax(fields, 3) + "; `paddock up` repairs it"
}
