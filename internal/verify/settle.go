package verify

import (
	"context"
	"time"
)

// DefaultAdmissionSettle bounds how long an admission probe that went the
// wrong way is asked again. The API server does not enforce an admission
// policy, binding or namespace label the moment it is written: its policy
// source rebuilds from informers about once a second, later under load. A
// verify run straight after `up` put a guardrail back must not report the
// old answer as a failure; a guardrail that is really off is still reported,
// after this long.
const DefaultAdmissionSettle = 15 * time.Second

// admissionSettlePoll is the pause between two askings.
const admissionSettlePoll = 500 * time.Millisecond

// untilAdmissionSettles runs probe until it reports held, or the verifier's
// settle window has passed since the first asking (the last asking is at its
// end), or ctx ends; it returns the last answer. With no window (the unit tests' verifiers), probe runs
// once.
func untilAdmissionSettles[T any](ctx context.Context, v *Verifier, probe func() (answer T, held bool)) T {
	deadline := time.Now().Add(v.admissionSettle)
	for {
		answer, held := probe()
		left := time.Until(deadline)
		if held || left <= 0 {
			return answer
		}
		select {
		case <-ctx.Done():
			return answer
		case <-time.After(min(left, admissionSettlePoll)):
		}
	}
}
