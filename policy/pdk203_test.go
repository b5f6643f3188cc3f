package policy_test

import (
	"fmt"
	"testing"

	"github.com/paddock-platform/paddock/policy"
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
