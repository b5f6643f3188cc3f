package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/policy"
)

// A $(VAR) reference does not make the literal around it safe: the kubelet
// expands the reference and keeps the rest, so the key still lands in the
// template. Only a value made of references alone holds no credential.
func TestPlainCredentialsDespiteReferences(t *testing.T) {
	for _, c := range []struct {
		name, value string
		fires       bool
	}{
		{"OPENAI_API_KEY", "$(X)sk-proj-Ab12Cd34Ef56Gh78Ij90Kl", true},
		{"LLM_KEY", "$(X)sk-proj-Ab12Cd34Ef56Gh78Ij90Kl", true},
		{"LLM_KEY", "sk-proj-$(X)Ab12Cd34Ef56Gh78Ij90Kl", true},
		{"GH", "ghp_$(X)abcdefghijklmnopqrstuvwxyz", true},
		{"DB_PASSWORD", "prefix-$(X)", true},
		{"OPENAI_API_KEY", "$(LLM_API_KEY)", false},
		{"OPENAI_API_KEY", "$(A)$(B)", false},
		{"OPENAI_API_KEY", "$$(not-a-reference)", true},
		{"LOG_LEVEL", "$(X)debug", false},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			src := localHead + fmt.Sprintf(`tenant "a" {
  template "t" {
    image         = "r.example.com/a:1"
    runtime_class = "gvisor"
    env           = { %s = %q }
  }
}
`, c.name, c.value)
			r := policy.Check(mustLoadSource(t, src), testNow)
			if got := len(fired(r, "PDK-203")) > 0; got != c.fires {
				t.Errorf("PDK-203 fires: %v, want %v", got, c.fires)
			}
		})
	}
}

// PDK-101 judges the Namespace Paddock applies: pod_security = "baseline"
// reaches it, the finding says so truthfully, and a waiver accepts it.
func TestPodSecurityLevelReachesTheNamespace(t *testing.T) {
	src := localHead + `tenant "a" {
  pod_security = "baseline"
}
`
	r := policy.Check(mustLoadSource(t, src), testNow)
	fs := fired(r, "PDK-101")
	if len(fs) != 1 || fs[0].Src.String() != srcAt(t, src, `pod_security = "baseline"`) ||
		!strings.Contains(fs[0].Message, `enforces Pod Security level "baseline" on namespace "agents-a"`) {
		t.Errorf("PDK-101: %v", fs)
	}
	waived := policy.Check(mustLoadSource(t, src+`waiver {
  rule   = "PDK-101"
  scope  = "tenant.a"
  reason = "The agent image needs baseline."
}
`), testNow)
	if len(fired(waived, "PDK-101")) != 0 || len(waived.Waived) != 1 {
		t.Errorf("waived: %v %v", fired(waived, "PDK-101"), waived.Waived)
	}
	if r := policy.Check(mustLoadSource(t, localHead+`tenant "a" {}`+"\n"), testNow); len(fired(r, "PDK-101")) != 0 {
		t.Error("PDK-101 fires on the default")
	}
}
