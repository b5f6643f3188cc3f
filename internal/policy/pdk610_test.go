package policy_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/schemas"
)

// sensitiveHead declares the sensitive variables the PDK-610 specs use, and
// the parts of a platform they do not change.
const sensitiveHead = `variable "customer" {
  type      = string
  sensitive = true
}
variable "api_key" {
  type      = string
  sensitive = true
}
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" { handler = "runsc" }
`

// sensitiveVars are the values of the variables of sensitiveHead: the
// customer is what a name would leak, the key what an env value holds.
var sensitiveVars = map[string]string{"customer": "Globex-Merger", "api_key": "k-7f3a9c21"}

// checkSensitive loads src with vars, marks secrets as a stack's config
// secrets are marked (values the spec need not declare sensitive), and
// returns the report and every output format of it, which must never hold
// a sensitive value.
func checkSensitive(t *testing.T, src string, vars map[string]string, secrets ...string) (*policy.Report, []policy.Finding) {
	t.Helper()
	l := schemas.NewLoader()
	p, diags := l.LoadSource("spec.hcl", []byte(src), schemas.LoadOptions{Vars: vars, Environ: []string{}})
	if diags.HasErrors() {
		var b strings.Builder
		l.WriteDiagnostics(&b, diags)
		t.Fatalf("spec does not load:\n%s", b.String())
	}
	for _, s := range secrets {
		p.MarkSensitive(s)
	}
	r := policy.Check(p, testNow)
	var out bytes.Buffer
	if err := r.WriteText(&out, policy.TextOptions{Verbose: true, Source: func(string) ([]byte, bool) { return []byte(src), true }}); err != nil {
		t.Fatal(err)
	}
	if err := policy.WriteJSON(&out, r, nil); err != nil {
		t.Fatal(err)
	}
	if err := policy.WriteSARIF(&out, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	// Every spec here leaks a customer named Globex: no spelling of it may
	// reach the report, nor any other value marked sensitive. (A value the
	// spec itself spells out shows in the source lines the text quotes; the
	// CLI redacts those, not the report.)
	for _, v := range append(p.SensitiveValues(), secrets...) {
		if len(v) >= 4 && strings.Contains(out.String(), v) && !strings.Contains(src, v) {
			t.Errorf("the report holds the sensitive value %q:\n%s", v, out.String())
		}
	}
	if strings.Contains(strings.ToLower(out.String()), "globex") && !strings.Contains(strings.ToLower(src), "globex") {
		t.Errorf("the report holds the customer's name:\n%s", out.String())
	}
	var found []policy.Finding
	for _, f := range r.Findings {
		if f.RuleID == "PDK-610" {
			found = append(found, f)
		}
	}
	return r, found
}

// Each way a sensitive value reaches a name or a label is one error at the
// spec argument it came from, whatever expression put it there.
func TestSensitiveValueInNameOrLabel(t *testing.T) {
	tests := []struct {
		name string
		spec string
		// at is the text of the argument the finding points at.
		at string
		// object is the finding's address; places are fields the message names.
		object string
		places []string
	}{
		{
			name: "tenant namespace by interpolation",
			spec: sensitiveHead + `platform { name = "p" }
tenant "a" {
  namespace = "agents-${lower(var.customer)}"
}
`,
			at:     `namespace = "agents-`,
			object: "tenant.a",
			places: []string{"Namespace (sensitive value) metadata.name", "ResourceQuota (sensitive value)/tenant-quota metadata.namespace", "15 name, namespace, label or selector fields"},
		},
		{
			name: "platform label through a local, lower() and format()",
			spec: sensitiveHead + `locals { org = lower(var.customer) }
platform { name = format("acme-%s", local.org) }
tenant "a" {}
`,
			at:     `name = format(`,
			object: "platform",
			places: []string{`metadata.labels["paddock.dev/platform"]`},
		},
		{
			name: "selector label value through lower()",
			spec: sensitiveHead + `platform { name = "p" }
tenant "a" {
  egress {
    proxy {
      url        = "http://squid.egress.svc.cluster.local:3128"
      namespace  = "egress"
      pod_labels = { "app.kubernetes.io/instance" = lower(var.customer) }
    }
  }
}
`,
			at:     "pod_labels = ",
			object: "tenant.a",
			places: []string{`NetworkPolicy agents-a/allow-egress-proxy spec.egress[0].to[0].podSelector.matchLabels["app.kubernetes.io/instance"]`},
		},
		{
			name: "node selector label key",
			spec: sensitiveHead + `platform { name = "p" }
runtime_class "kata" {
  handler       = "kata"
  node_selector = { "${lower(var.customer)}.example.com/pool" = "kata" }
}
tenant "a" {}
`,
			at:     "node_selector = ",
			object: "runtime_class.kata",
			places: []string{"RuntimeClass kata scheduling.nodeSelector[(sensitive value)] (key)"},
		},
		{
			// The map is built in a local, not written out in the argument:
			// its key is a string no variable holds.
			name: "selector label key from a local map",
			spec: sensitiveHead + `locals {
  proxy_selector = { "${lower(var.customer)}.example.com/role" = "fwd-7" }
}
platform { name = "p" }
tenant "a" {
  egress {
    proxy {
      url        = "http://squid.egress.svc.cluster.local:3128"
      namespace  = "egress"
      pod_labels = local.proxy_selector
    }
  }
}
`,
			at:     "pod_labels = ",
			object: "tenant.a",
			places: []string{"NetworkPolicy agents-a/allow-egress-proxy spec.egress[0].to[0].podSelector.matchLabels[(sensitive value)] (key)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, found := checkSensitive(t, tt.spec, sensitiveVars)
			if len(found) != 1 {
				t.Fatalf("%d PDK-610 findings, want 1: %+v", len(found), found)
			}
			f := found[0]
			if got, want := f.Src.String(), srcAt(t, tt.spec, tt.at); got != want {
				t.Errorf("finding at %s, want %s (%s)", got, want, tt.at)
			}
			if f.Object != tt.object || f.Severity != policy.Error || !strings.Contains(f.Fix, "secret_env") {
				t.Errorf("finding %+v", f)
			}
			for _, p := range tt.places {
				if !strings.Contains(f.Message, p) {
					t.Errorf("message lacks %q:\n%s", p, f.Message)
				}
			}
			if !r.Blocking() {
				t.Error("the report does not block up")
			}
		})
	}
}

// A for_each over a sensitive value: the decoder refuses a value the spec
// declares sensitive; a config secret the spec does not declare (a stack's
// secret variable, marked after the load) is found in the objects by
// PDK-610, one finding per tenant it names, at the for_each.
func TestSensitiveForEachKey(t *testing.T) {
	declared := sensitiveHead + `platform { name = "p" }
tenant "t" {
  for_each = toset([lower(var.customer)])
}
`
	_, diags := schemas.LoadSource("spec.hcl", []byte(declared), schemas.LoadOptions{Vars: sensitiveVars, Environ: []string{}})
	if !diags.HasErrors() || diags[0].Summary != "Sensitive for_each" ||
		fmt.Sprintf("%s:%d:%d", diags[0].Subject.Filename, diags[0].Subject.Start.Line, diags[0].Subject.Start.Column) != srcAt(t, declared, "toset(") ||
		strings.Contains(strings.ToLower(diags.Error()), "globex") {
		t.Errorf("declared sensitive: %v", diags)
	}

	undeclared := `variable "teams" { type = list(string) }
platform { name = "p" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
tenant "t" {
  for_each = toset([for t in var.teams : "team-${t}"])
}
`
	_, found := checkSensitive(t, undeclared, map[string]string{"teams": `["globex", "initech"]`}, "globex")
	if len(found) != 1 {
		t.Fatalf("%d PDK-610 findings, want 1: %+v", len(found), found)
	}
	f := found[0]
	if got, want := f.Src.String(), srcAt(t, undeclared, "for_each = "); got != want {
		t.Errorf("finding at %s, want %s", got, want)
	}
	if f.Object != "tenant.team-(sensitive value)" || !strings.Contains(f.Message, `The name of tenant "team-(sensitive value)"`) ||
		!strings.Contains(f.Message, "Namespace agents-team-(sensitive value) metadata.name") {
		t.Errorf("finding %+v", f)
	}
}

// A tenant block whose label is a config secret's value: the finding
// points at the block, the one place that names the tenant.
func TestSensitiveTenantLabel(t *testing.T) {
	spec := `platform { name = "p" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
tenant "globex-pilot" {}
`
	_, found := checkSensitive(t, spec, nil, "globex-pilot")
	if len(found) != 1 || found[0].Src.String() != srcAt(t, spec, `tenant "globex-pilot"`) || found[0].Object != "tenant.(sensitive value)" ||
		strings.Contains(found[0].Message, "globex") || !strings.Contains(found[0].Message, "Namespace agents-(sensitive value) metadata.name") {
		t.Fatalf("findings %+v", found)
	}
}

// A value no argument of the spec holds (a secret that happens to be part
// of a name Paddock fixes) is still an error, at the block that owns the
// objects.
func TestSensitiveValueFromNoArgument(t *testing.T) {
	spec := `platform { name = "p" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
tenant "a" {}
`
	_, found := checkSensitive(t, spec, nil, "tenant-quota")
	if len(found) != 1 || found[0].Src.String() != srcAt(t, spec, `tenant "a"`) || found[0].Object != "tenant.a" ||
		!strings.Contains(found[0].Message, "from no argument Paddock can point at") || !strings.Contains(found[0].Message, "ResourceQuota agents-a/(sensitive value) metadata.name") {
		t.Fatalf("findings %+v", found)
	}
}

// A sensitive value in an object's spec (a plain env value) and a secret
// read with secret_env are no names or labels: PDK-610 stays silent (render
// still refuses to write the env value in plain text).
func TestSensitiveValueOutsideNamesNotFlagged(t *testing.T) {
	spec := sensitiveHead + `platform { name = "p" }
tenant "a" {
  template "t" {
    image         = "r.example.com/agent:1"
    runtime_class = "gvisor"
    env           = { LOG_TAG = var.api_key, TEAM = var.customer }
    secret_env "LLM_API_KEY" {
      secret = "llm-credentials"
      key    = "api-key"
    }
  }
}
`
	r, found := checkSensitive(t, spec, sensitiveVars)
	if len(found) != 0 {
		t.Errorf("PDK-610 fired: %+v", found)
	}
	if r.Blocking() {
		t.Errorf("report blocks: %+v", r.Findings)
	}
}

// PDK-610 cannot be waived: a waiver naming it is invalid and the finding
// still blocks.
func TestSensitiveNameNotWaivable(t *testing.T) {
	spec := sensitiveHead + `platform { name = "p-${var.customer}" }
tenant "a" {}
waiver {
  rule   = "PDK-610"
  reason = "The customer name is public anyway."
}
`
	r, found := checkSensitive(t, spec, map[string]string{"customer": "globex", "api_key": "k-7f3a9c21"})
	if len(found) != 1 || len(r.Waived) != 0 || !r.Blocking() {
		t.Fatalf("findings %+v, waived %+v", found, r.Waived)
	}
	if r.Waivers[0].State != policy.WaiverInvalid || countRule(r.Findings, "PDK-002") != 1 {
		t.Errorf("waiver %+v, findings %+v", r.Waivers[0], r.Findings)
	}
	if rule, _ := policy.Lookup("PDK-610"); rule.Waivable() {
		t.Error("PDK-610 is waivable")
	}
	if !strings.Contains(r.Summary(), "PDK-610 errors cannot be waived") {
		t.Errorf("summary: %s", r.Summary())
	}
}

// A model whose objects cannot be built is still judged, on its own values.
func TestSensitiveNameWithoutObjects(t *testing.T) {
	p := &model.Platform{Name: "acme-globex", Src: model.Range{Filename: "x.hcl", Line: 1, Column: 1}}
	p.MarkSensitive("globex")
	p.AgentSandbox.Version = "v0.0.0-no-such-release"
	r := policy.Check(p, testNow)
	found := 0
	for _, f := range r.Findings {
		if f.RuleID == "PDK-610" {
			found++
			if f.Src != p.Src || strings.Contains(f.Message, "globex") || !strings.Contains(f.Message, "cannot be built") {
				t.Errorf("finding %+v", f)
			}
		}
	}
	if found != 1 {
		t.Errorf("%d PDK-610 findings, want 1", found)
	}
}
