package schemas

import (
	"fmt"
	"strings"
	"testing"
)

// head is a valid platform prefix that error cases append to.
const head = `platform { name = "demo" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" { handler = "runsc" }
`

// tpl wraps template arguments into a tenant "t" with a template "x".
func tpl(body string) string {
	if !strings.Contains(body, "image") {
		body = "image = \"a\"\n    " + body
	}
	return "tenant \"t\" {\n  template \"x\" {\n    " + body + "\n  }\n}\n"
}

// pool wraps warm pool arguments into a tenant "t" with a template and pool "x".
func pool(body string) string {
	return "tenant \"t\" {\n  template \"x\" { image = \"a\" }\n  warm_pool \"x\" {\n    template = \"x\"\n    " + body + "\n  }\n}\n"
}

// rc wraps runtime class arguments into a runtime_class "kata".
func rc(body string) string {
	return "runtime_class \"kata\" {\n  handler = \"kata\"\n  " + body + "\n}\n"
}

// marker, a comment, sits in a case's source right before where the
// diagnostic's subject must start.
const marker = "/*@*/"

// markerPos is the file:line:col just after the marker in src.
func markerPos(t *testing.T, filename, src string) string {
	t.Helper()
	i := strings.Index(src, marker)
	if i < 0 {
		t.Fatal("case has no marker and no wantPos")
	}
	i += len(marker)
	line := strings.Count(src[:i], "\n") + 1
	col := i - (strings.LastIndex(src[:i], "\n") + 1) + 1
	return fmt.Sprintf("%s:%d:%d", filename, line, col)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string // a whole spec; cases that start with head append to it
		summary string
		detail  string // a substring of the detail
		wantPos string // where the subject starts; default: just after the marker
	}{
		// Structure: blocks, arguments, labels (HCL's own "Did you mean").
		{"syntax error", head + `tenant "t" {
  namespace = /*@*/
}`, "Invalid expression", "Expected the start of an expression", ""},
		{"unsupported argument", head + `tenant "t" { /*@*/namespce = "x" }`, "Unsupported argument", `Did you mean "namespace"?`, ""},
		{"unsupported block", head + `tenant "t" {
  /*@*/templat "x" {}
}`, "Unsupported block type", `Did you mean "template"?`, ""},
		{"unsupported top-level block", head + `/*@*/tenants "t" {}`, "Unsupported block type", `Did you mean "tenant"?`, ""},
		{"top-level argument", head + `/*@*/name = "x"`, "Unsupported argument", `An argument named "name" is not expected here.`, ""},
		{"argument instead of block", head + `tenant "t" {
  template "x" {
    image = "a"
    /*@*/resources = {}
  }
}`, "Unsupported argument", `Did you mean to define a block of type "resources"?`, ""},
		{"missing label", head + `tenant /*@*/{}`, "Missing name for tenant", "All tenant blocks must have 1 labels", ""},
		{"extraneous label", head + `waiver /*@*/"x" {
  rule   = "r"
  reason = "r"
}`, "Extraneous label for waiver", "No labels are expected", ""},
		{"local target takes no arguments", strings.Replace(head, `target "local" {}`, `target "local" { /*@*/path = "x" }`, 1), "Unsupported argument", `"path" is not expected here`, ""},

		// Required blocks and arguments.
		{"missing platform block", strings.Replace(head, `platform { name = "demo" }`, "", 1), "Missing platform block", `platform { name = "my-platform" }`, "spec.hcl:1:1"},
		{"missing target block", strings.Replace(head, `target "local" {}`, "", 1), "Missing target block", `target "local" {}`, "spec.hcl:1:1"},
		{"missing agent_sandbox block", strings.Replace(head, `agent_sandbox { version = "v0.5.6" }`, "", 1), "Missing agent_sandbox block", `version = "v0.5.6"`, "spec.hcl:1:1"},
		{"missing required argument", head + `tenant "t" {
  /*@*/template "x" {}
}`, "Missing required argument", `The template "x" block needs a container image. Add it, for example: image = "python:3.12-slim"`, ""},
		{"required argument null", head + `tenant "t" {
  template "x" { image = /*@*/null }
}`, "Missing required argument", `needs a container image`, ""},
		{"missing platform name", strings.Replace(head, `platform { name = "demo" }`, `/*@*/platform {}`, 1), "Missing required argument", `The platform block needs a name`, ""},
		{"missing handler", head + `/*@*/runtime_class "kata" {}`, "Missing required argument", `The runtime_class "kata" block needs the handler`, ""},
		{"missing version", strings.Replace(head, `agent_sandbox { version = "v0.5.6" }`, `/*@*/agent_sandbox {}`, 1), "Missing required argument", `a pinned release version`, ""},
		{"missing warm pool template", head + `tenant "t" {
  /*@*/warm_pool "p" {}
}`, "Missing required argument", `the template it keeps warm`, ""},
		{"missing waiver reason", head + `/*@*/waiver { rule = "PDK-001" }`, "Missing required argument", `The waiver block needs a reason`, ""},
		{"missing toleration key", head + `runtime_class "kata" {
  handler = "kata"
  /*@*/toleration { value = "x" }
}`, "Missing required argument", `the key of the taint`, ""},

		// Duplicates point at both declarations.
		{"duplicate singleton", head + `/*@*/target "local" {}`, "Duplicate target block", "already declared at spec.hcl:2:1", ""},
		{"duplicate runtime class", head + `runtime_class /*@*/"gvisor" { handler = "runsc" }`, `Duplicate runtime_class "gvisor"`, "already declared at spec.hcl:4:1", ""},
		{"duplicate tenant", head + "tenant \"t\" {}\ntenant /*@*/\"t\" {}", `Duplicate tenant "t"`, "already declared at spec.hcl:5:1", ""},
		{"duplicate template", head + `tenant "t" {
  template "x" { image = "a" }
  template /*@*/"x" { image = "b" }
}`, `Duplicate template "x"`, `already declared at spec.hcl:6:3. Names must be unique within tenant "t"`, ""},
		{"duplicate warm pool", head + `tenant "t" {
  template "x" { image = "a" }
  warm_pool "x" { template = "x" }
  warm_pool /*@*/"x" { template = "x" }
}`, `Duplicate warm_pool "x"`, "already declared at spec.hcl:7:3", ""},
		{"duplicate resources", head + `tenant "t" {
  template "x" {
    image = "a"
    resources {}
    /*@*/resources {}
  }
}`, "Duplicate resources block", "Merge both", ""},
		{"duplicate map key", head + `runtime_class "kata" {
  handler       = "kata"
  node_selector = { a = "1", /*@*/a = "2" }
}`, "Duplicate key", `The key "a" of node_selector was already set`, ""},

		// Names.
		{"invalid tenant name", head + `tenant /*@*/"Team_A" {}`, "Invalid tenant name", `Did you mean "team-a"?`, ""},
		{"invalid runtime class name", head + `runtime_class /*@*/"gVisor.v2" { handler = "runsc" }`, "Invalid runtime class name", `Did you mean "gvisor-v2"?`, ""},
		{"invalid template name", head + `tenant "t" {
  template /*@*/"-x" { image = "a" }
}`, "Invalid template name", `must start and end with a letter or digit`, ""},
		{"invalid platform name", strings.Replace(head, `name = "demo"`, `name = /*@*/"my demo"`, 1), "Invalid platform name", `Did you mean "my-demo"?`, ""},
		{"invalid namespace", head + `tenant "t" { namespace = /*@*/"Agents" }`, "Invalid namespace", `Did you mean "agents"?`, ""},
		{"default namespace too long", head + `tenant /*@*/"` + strings.Repeat("a", 60) + `" {}`, "Invalid namespace", "Set namespace explicitly, or shorten the tenant name.", ""},
		{"namespace shared", head + `tenant "a" {}
tenant "b" { namespace = /*@*/"agents-a" }`, "Namespace shared by two tenants", `already used by the tenant declared at spec.hcl:5:1`, ""},

		// References.
		{"unknown target kind", strings.Replace(head, `target "local"`, `target /*@*/"kubeconfg"`, 1), "Unsupported target kind", `Did you mean "kubeconfig"?`, ""},
		{"unknown runtime class", head + tpl(`runtime_class = /*@*/"gvsor"`), "Unknown runtime class",
			`No runtime_class "gvsor" is declared. Did you mean "gvisor"? Declared runtime classes: "gvisor".`, ""},
		{"no runtime classes declared", strings.Replace(head, `runtime_class "gvisor" { handler = "runsc" }`, "", 1) + tpl(`runtime_class = /*@*/"gvisor"`),
			"Unknown runtime class", "The spec declares no runtime classes.", ""},
		{"unknown template", head + `tenant "t" {
  template "python" { image = "a" }
  warm_pool "p" { template = /*@*/"pyton" }
}`, "Unknown template", `Tenant "t" declares no template "pyton". Did you mean "python"?`, ""},
		{"template of another tenant", head + `tenant "a" {
  template "x" { image = "a" }
}
tenant "b" {
  warm_pool "x" { template = /*@*/"x" }
}`, "Template of another tenant", `Template "x" belongs to tenant "a", not to tenant "b". Warm pools never cross trust boundaries`, ""},

		// Values.
		{"wrong type", head + tpl(`image = /*@*/["a"]`), "Incorrect value type", "Inappropriate value for image: string required, but have tuple. Expected a string.", ""},
		{"wrong list type", head + tpl(`command = /*@*/"sleep"`), "Incorrect value type", `Expected a list of strings`, ""},
		{"null list element", head + tpl(`command = /*@*/["a", null]`), "Invalid value", "Element 1 of command is null", ""},
		{"null map value", head + rc(`node_selector = { a = /*@*/null }`), "Invalid value", `The value of node_selector["a"] is null`, ""},
		{"invalid node selector key", head + rc(`node_selector = { /*@*/"bad key!" = "x" }`), "Invalid node selector key", `"bad key!" is not a valid key`, ""},
		{"invalid node selector value", head + rc(`node_selector = { a = /*@*/"no spaces" }`), "Invalid node selector value", "not a valid label value", ""},
		{"invalid handler", head + `runtime_class "kata" { handler = /*@*/"Kata_Runtime" }`, "Invalid runtime handler", "DNS-1123 label", ""},
		{"invalid version", strings.Replace(head, `version = "v0.5.6"`, `version = /*@*/"latest"`, 1), "Invalid agent_sandbox version", `vMAJOR.MINOR.PATCH`, ""},
		{"version not vendored", strings.Replace(head, `version = "v0.5.6"`, `version = /*@*/"v0.4.0"`, 1), "Unsupported agent_sandbox version", `Agent Sandbox v0.4.0 is not a release this Paddock vendors: it installs only releases whose manifests it carries, pinned byte for byte ("v0.5.6" (pinned), "v0.5.5" (previous))`, ""},
		{"invalid controller image", strings.Replace(head, `agent_sandbox { version = "v0.5.6" }`, `agent_sandbox {
  version = "v0.5.6"
  image   = /*@*/"a b"
}`, 1), "Invalid image", "white space", ""},
		{"invalid image", head + `tenant "t" {
  template "x" { image = /*@*/"python:" }
}`, "Invalid image", "is not an image reference", ""},
		{"invalid quantity", head + tpl(`resources { limits = { memory = /*@*/"1 Gi" } }`), "Invalid quantity", `The limits.memory "1 Gi" is not a Kubernetes quantity`, ""},
		{"negative quantity", head + tpl(`tmp_size = /*@*/"-1Gi"`), "Invalid quantity", "is negative", ""},
		{"zero tmp_size", head + tpl(`tmp_size = /*@*/"0"`), "Invalid tmp_size", "tmp_size is zero", ""},
		{"unsupported resource", head + tpl(`resources { requests = { /*@*/memroy = "1Gi" } }`), "Unsupported resource", `"memroy" is not a resource Paddock sets. Did you mean "memory"?`, ""},
		{"request above default limit", head + tpl(`resources { requests = { memory = /*@*/"2Gi" } }`), "Request above limit", "The memory request (2Gi) is above its default limit (1Gi)", ""},
		{"limit below default request", head + tpl(`resources { limits = { cpu = /*@*/"100m" } }`), "Request above limit", "The cpu request (250m) is above its limit (100m)", ""},
		{"request above limit", head + tpl(`resources {
      requests = { ephemeral_storage = /*@*/"8Gi" }
      limits   = { ephemeral_storage = "4Gi" }
    }`), "Request above limit", "Raise limits.ephemeral_storage to at least 8Gi", ""},
		{"replicas out of range", head + pool(`replicas = /*@*/101`), "Value out of range", "replicas must be between 0 and 100, not 101.", ""},
		{"replicas huge", head + pool(`replicas = /*@*/1e30`), "Value out of range", "replicas must be between 0 and 100, not 1e+30.", ""},
		{"replicas not whole", head + pool(`replicas = /*@*/1.5`), "Invalid value", "must be a whole number", ""},
		{"run_as_user root", head + tpl(`run_as_user = /*@*/0`), "Value out of range", "run_as_user must be between 1 and 2147483647, not 0.", ""},
		{"toleration operator", head + rc(`toleration {
    key      = "k"
    operator = /*@*/"equal"
  }`), "Invalid toleration operator", `Did you mean "Equal"?`, ""},
		{"toleration effect", head + rc(`toleration {
    key    = "k"
    effect = /*@*/"NoSchedul"
  }`), "Invalid toleration effect", `Did you mean "NoSchedule"?`, ""},
		{"toleration exists with value", head + rc(`toleration {
    key      = "k"
    operator = "Exists"
    value    = /*@*/"v"
  }`), "Invalid toleration value", `operator "Exists" matches any value`, ""},
		{"toleration key", head + rc(`toleration { key = /*@*/"/k" }`), "Invalid toleration key", "invalid prefix", ""},
		{"empty kubeconfig path", strings.Replace(head, `target "local" {}`, `target "kubeconfig" { path = /*@*/"" }`, 1), "Invalid kubeconfig path", "Remove the argument to use $KUBECONFIG", ""},
		{"waiver expiry", head + `waiver {
  rule    = "PDK-001"
  reason  = "r"
  expires = /*@*/"2026-02-30"
}`, "Invalid expiry date", "YYYY-MM-DD", ""},
		{"waiver empty rule", head + `waiver {
  rule   = /*@*/" "
  reason = "r"
}`, "Invalid waiver rule", "rule is empty", ""},

		// Expressions.
		{"undeclared variable", strings.Replace(head, `name = "demo"`, `name = var/*@*/.name`, 1), "Reference to undeclared variable", `No variable "name" is declared. Declare it with a variable "name" { type = string } block.`, ""},
		{"unknown root", strings.Replace(head, `name = "demo"`, `name = /*@*/vars.name`, 1), "Unknown variable", `There is no variable named "vars". Did you mean "var"?`, ""},
		{"unknown function without suggestion", strings.Replace(head, `name = "demo"`, `name = /*@*/nothingclose("X")`, 1), "Call to unknown function", `The spec language has: abs, can, ceil,`, ""},
		{"unknown function", strings.Replace(head, `name = "demo"`, `name = /*@*/lowr("X")`, 1), "Call to unknown function", `Did you mean "lower"?`, ""},
		{"function error", strings.Replace(head, `name = "demo"`, `name = join(",", "x")`, 1), "Invalid function argument", `Invalid value for "lists" parameter`, "spec.hcl:1:30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.wantPos
			if want == "" {
				want = markerPos(t, "spec.hcl", tt.src)
			}
			l := NewLoader()
			p, diags := l.LoadSource("spec.hcl", []byte(tt.src), LoadOptions{})
			render := func() string {
				var b strings.Builder
				l.WriteDiagnostics(&b, diags)
				return b.String()
			}
			if p != nil || !diags.HasErrors() {
				t.Fatalf("want errors and no platform, got %v and %+v", diags, p)
			}
			for _, d := range diags {
				if d.Subject == nil {
					t.Errorf("diagnostic %q has no subject", d.Summary)
				}
			}
			for _, d := range diags {
				if d.Summary != tt.summary {
					continue
				}
				if got := pos(*d.Subject); got != want {
					t.Errorf("%q at %s, want %s\n%s", d.Summary, got, want, render())
				}
				if !strings.Contains(d.Detail, tt.detail) {
					t.Errorf("detail %q does not contain %q", d.Detail, tt.detail)
				}
				return
			}
			t.Errorf("no %q diagnostic; got:\n%s", tt.summary, render())
		})
	}
}

// A broken spec reports every problem in one run, each exactly once, in
// file order.
func TestLoadCollectsAllErrors(t *testing.T) {
	tests := []struct {
		dir  string
		want []string // file:line:col summary
	}{
		{"../examples/invalid/typos", []string{
			"platform.hcl:3:3 Unsupported argument",
			"platform.hcl:6:8 Unsupported target kind",
			"platform.hcl:14:3 Unsupported block type",
			"platform.hcl:21:1 Unsupported block type",
			"platform.hcl:29:34 Unsupported resource",
		}},
		{"../examples/invalid/references", []string{
			"platform.hcl:4:10 Invalid platform name",
			"platform.hcl:10:13 Invalid agent_sandbox version",
			"platform.hcl:18:16 Invalid toleration value",
			"platform.hcl:19:16 Invalid toleration effect",
			"platform.hcl:26:21 Unknown runtime class",
			"platform.hcl:27:21 Value out of range",
			"platform.hcl:29:40 Invalid quantity",
			"platform.hcl:35:16 Unknown template",
			"platform.hcl:36:16 Value out of range",
			"platform.hcl:40:16 Template of another tenant",
			"platform.hcl:45:15 Namespace shared by two tenants",
			"platform.hcl:52:1 Missing required argument",
			"platform.hcl:54:13 Invalid expiry date",
		}},
		{"../examples/invalid/variables", []string{
			"platform.hcl:4:10 Invalid type specification",
			"platform.hcl:9:13 Invalid default value for variable",
			"platform.hcl:17:21 Invalid value for variable",
			"platform.hcl:27:3 Cycle in local values",
			"platform.hcl:33:13 Reference to undeclared variable",
			"platform.hcl:39:13 Call to unknown function",
			"platform.hcl:43:14 Invalid tenant name",
			"platform.hcl:46:18 Reference to undeclared local value",
			"platform.hcl:51:25 Unknown variable",
		}},
		{"../examples/invalid/blocks", []string{
			"platform.hcl:7:1 Missing required argument",
			"platform.hcl:8:13 Invalid project ID",
			"platform.hcl:12:21 Invalid release channel",
			"platform.hcl:17:18 Invalid machine type",
			"platform.hcl:22:13 Invalid digest",
			"platform.hcl:27:15 Runtime class and node pool disagree",
			"platform.hcl:32:15 Unknown node pool",
			"platform.hcl:37:13 Invalid host name",
			"platform.hcl:39:5 Missing required argument",
			"platform.hcl:43:5 Missing required argument",
			"platform.hcl:49:11 Invalid duration",
			"platform.hcl:54:15 Basic role refused",
			"platform.hcl:57:23 Invalid workload identity label",
			"platform.hcl:65:23 Invalid seccomp profile",
			"platform.hcl:67:5 Missing required argument",
			"platform.hcl:71:16 Invalid environment variable name",
			"platform.hcl:79:23 Invalid update strategy",
			"platform.hcl:85:17 Invalid audit destination",
			"platform.hcl:91:12 Invalid waiver scope",
		}},
		{"../examples/invalid/duplicates", []string{
			"b.hcl:2:1 Duplicate platform block",
			"b.hcl:6:15 Duplicate runtime_class \"gvisor\"",
			"b.hcl:10:8 Duplicate tenant \"team-a\"",
			"b.hcl:14:12 Duplicate template \"python\"",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			p, diags := LoadDir(tt.dir, LoadOptions{})
			if p != nil {
				t.Error("want a nil platform")
			}
			var got []string
			for _, d := range diags {
				if d.Subject == nil {
					t.Fatalf("diagnostic %q has no subject", d.Summary)
				}
				rel := strings.TrimPrefix(d.Subject.Filename, tt.dir+"/")
				got = append(got, fmt.Sprintf("%s:%d:%d %s", rel, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// The duplicate errors name the first declaration in the other file.
func TestDuplicateAcrossFilesPointsAtBoth(t *testing.T) {
	_, diags := LoadDir("../examples/invalid/duplicates", LoadOptions{})
	for _, d := range diags {
		if d.Summary == `Duplicate tenant "team-a"` {
			if want := "already declared at ../examples/invalid/duplicates/a.hcl:17:1"; !strings.Contains(d.Detail, want) {
				t.Errorf("detail %q does not contain %q", d.Detail, want)
			}
			if d.Subject.Filename != "../examples/invalid/duplicates/b.hcl" {
				t.Errorf("subject in %s, want b.hcl", d.Subject.Filename)
			}
			return
		}
	}
	t.Fatalf("no duplicate tenant diagnostic in %v", diags)
}

func TestDidYouMean(t *testing.T) {
	candidates := []string{"gvisor", "kata", "runc"}
	for given, want := range map[string]string{
		"gvsor": "gvisor", "GVISOR": "gvisor", "kat": "kata", "rnuc": "runc", "firecracker": "", "": "", "gvisor": "",
	} {
		if got := didYouMean(given, candidates); got != want {
			t.Errorf("didYouMean(%q) = %q, want %q", given, got, want)
		}
	}
}

func TestValidators(t *testing.T) {
	for s, ok := range map[string]bool{"a": true, "team-a": true, "0a": true, strings.Repeat("a", 63): true,
		"": false, "A": false, "a_b": false, "-a": false, "a-": false, strings.Repeat("a", 64): false} {
		if got := dnsLabelProblem(s) == ""; got != ok {
			t.Errorf("dnsLabelProblem(%q) ok=%v, want %v", s, got, ok)
		}
	}
	for s, ok := range map[string]bool{"k": true, "sandbox.gke.io/runtime": true, "a.b/C_d.e": true,
		"": false, "/k": false, "a/": false, "Upper.io/k": false, "a/b/c": false, "k!": false} {
		if got := labelKeyProblem(s) == ""; got != ok {
			t.Errorf("labelKeyProblem(%q) ok=%v, want %v", s, got, ok)
		}
	}
	for s, ok := range map[string]bool{"250m": true, "1": true, "0.5": true, "512Mi": true, "2Gi": true, "1e3": true,
		"1 Gi": false, "abc": false, "-1": false, "1GB": false, "": false} {
		if _, problem := quantityProblem(s); (problem == "") != ok {
			t.Errorf("quantityProblem(%q) = %q, want ok=%v", s, problem, ok)
		}
	}
	for s, want := range map[string]string{"Team_A": "team-a", "my demo": "my-demo", "ok": "", "___": "", "A.B": "a-b"} {
		if got := suggestLabel(s); got != want {
			t.Errorf("suggestLabel(%q) = %q, want %q", s, got, want)
		}
	}
}
