package schemas

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
)

// varSpec declares variables and uses them; tests append to it.
const varSpec = `
variable "name" {
  type    = string
  default = "from-default"
}
variable "replicas" {
  type    = number
  default = 1
}
variable "labels" {
  type    = map(string)
  default = {}
}
platform { name = var.name }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" {
  handler       = "runsc"
  node_selector = var.labels
}
tenant "t" {
  template "x" { image = "busybox:1.36" }
  warm_pool "x" {
    template = "x"
    replicas = var.replicas
  }
}
`

// writeDir writes files into a temporary directory and returns it.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestVariablePrecedence(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"spec.hcl":            varSpec,
		"a.auto.pvars.hcl":    "name = \"from-auto\"\nreplicas = 3\n",
		"prod.pvars.hcl":      "replicas = 4\nlabels = { pool = \"sandbox\" }\n", // only with --var-file
		"staging.pvars.hcl~":  "name = \"editor-leftover\"\n",
		"other.auto.pvars.hc": "ignored",
	})
	tests := []struct {
		name         string
		opts         LoadOptions
		wantName     string
		wantReplicas int32
		wantLabels   map[string]string
	}{
		{"auto vars file over default", LoadOptions{Environ: []string{}}, "from-auto", 3, nil},
		{"env under auto file", LoadOptions{Environ: []string{"PADDOCK_VAR_name=from-env", "PADDOCK_VAR_replicas=2", "UNRELATED=1"}}, "from-auto", 3, nil},
		{"var file over auto file", LoadOptions{VarFiles: []string{filepath.Join(dir, "prod.pvars.hcl")}, Environ: []string{}}, "from-auto", 4, map[string]string{"pool": "sandbox"}},
		{"-var over everything", LoadOptions{VarFiles: []string{filepath.Join(dir, "prod.pvars.hcl")}, Vars: map[string]string{"replicas": "5", "name": "from-flag", "labels": `{ a = "b" }`}, Environ: []string{}}, "from-flag", 5, map[string]string{"a": "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) { return l.LoadDir(dir, tt.opts) })
			if p.Name != tt.wantName || p.Tenants[0].WarmPools[0].Replicas != tt.wantReplicas || !reflect.DeepEqual(p.RuntimeClasses[0].NodeSelector, tt.wantLabels) {
				t.Errorf("name %q replicas %d labels %v", p.Name, p.Tenants[0].WarmPools[0].Replicas, p.RuntimeClasses[0].NodeSelector)
			}
		})
	}

	// The environment alone, without the auto file.
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(varSpec), LoadOptions{Environ: []string{"PADDOCK_VAR_name=from-env", "PADDOCK_VAR_unknown=ignored"}})
	})
	if p.Name != "from-env" {
		t.Errorf("env: name = %q", p.Name)
	}
}

// A vars file is never a spec file, even though it ends in .hcl.
func TestVarsFilesAreNotSpecFiles(t *testing.T) {
	for name, want := range map[string]bool{"a.hcl": true, "a.pvars.hcl": false, "a.auto.pvars.hcl": false, ".a.hcl": false} {
		if isSpecFile(name) != want {
			t.Errorf("isSpecFile(%q) = %v", name, !want)
		}
	}
}

func TestVariableErrors(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"bad.pvars.hcl":    "replicas = \"many\"\nnmae = \"typo\"\n",
		"broken.pvars.hcl": "replicas = \n",
		"fn.pvars.hcl":     "name = upper(\"x\")\n",
	})
	tests := []struct {
		name     string
		src      string
		opts     LoadOptions
		summary  string
		detail   string
		severity hcl.DiagnosticSeverity
		subject  string // file:line:col prefix, "" for none
	}{
		{"required variable", "variable \"req\" { type = string }\n" + varSpec, LoadOptions{}, "No value for required variable", `Variable "req" has no default`, hcl.DiagError, "spec.hcl:1:1"},
		{"-var of wrong type", varSpec, LoadOptions{Vars: map[string]string{"replicas": "lots"}}, "Variables not allowed", `In the value of variable "replicas" given by -var replicas. Its type is number`, hcl.DiagError, "spec.hcl:6:1"},
		{"-var that does not convert", varSpec, LoadOptions{Vars: map[string]string{"replicas": `"x"`}}, "Invalid value for variable", `given by -var replicas does not fit its type number`, hcl.DiagError, "spec.hcl:6:1"},
		{"undeclared -var", varSpec, LoadOptions{Vars: map[string]string{"nmae": "x"}}, "Value for undeclared variable", `Did you mean "name"? Declared variables: "labels", "name" and "replicas".`, hcl.DiagError, ""},
		{"vars file of wrong type", varSpec, LoadOptions{VarFiles: []string{filepath.Join(dir, "bad.pvars.hcl")}}, "Invalid value for variable", `bad.pvars.hcl:1 does not fit its type number`, hcl.DiagError, filepath.Join(dir, "bad.pvars.hcl") + ":1:12"},
		{"undeclared in vars file", varSpec, LoadOptions{VarFiles: []string{filepath.Join(dir, "bad.pvars.hcl")}}, "Value for undeclared variable", `sets variable "nmae", which the spec does not declare; the value is ignored. Did you mean "name"?`, hcl.DiagWarning, filepath.Join(dir, "bad.pvars.hcl") + ":2:8"},
		{"vars file syntax", varSpec, LoadOptions{VarFiles: []string{filepath.Join(dir, "broken.pvars.hcl")}}, "Invalid expression", "Expected the start of an expression", hcl.DiagError, filepath.Join(dir, "broken.pvars.hcl") + ":1:"},
		{"vars file calls a function", varSpec, LoadOptions{VarFiles: []string{filepath.Join(dir, "fn.pvars.hcl")}}, "Function calls not allowed", "", hcl.DiagError, filepath.Join(dir, "fn.pvars.hcl") + ":1:8"},
		{"missing vars file", varSpec, LoadOptions{VarFiles: []string{filepath.Join(dir, "nope.pvars.hcl")}}, "Cannot read vars file", "no such file", hcl.DiagError, ""},
		{"bad type", "variable \"x\" { type = strin }\n" + varSpec, LoadOptions{}, "Invalid type specification", "", hcl.DiagError, "spec.hcl:1:23"},
		{"default of wrong type", "variable \"x\" {\n  type    = number\n  default = \"x\"\n}\n" + varSpec, LoadOptions{}, "Invalid default value for variable", `The default of variable "x" does not fit its type`, hcl.DiagError, "spec.hcl:3:13"},
		{"default with a reference", "variable \"x\" { default = var.name }\n" + varSpec, LoadOptions{}, "Variables not allowed", "", hcl.DiagError, "spec.hcl:1:26"},
		{"validation fails", `variable "region" {
  type    = string
  default = "mars-1"
  validation {
    condition     = startswith(var.region, "europe-")
    error_message = "Sandboxes stay in Europe."
  }
}` + varSpec, LoadOptions{}, "Call to unknown function", `There is no function named "startswith".`, hcl.DiagError, "spec.hcl:5:21"},
		{"validation message", `variable "region" {
  type    = string
  default = "mars-1"
  validation {
    condition     = can(regex("^europe-", var.region))
    error_message = "Sandboxes stay in Europe."
  }
}` + varSpec, LoadOptions{Vars: map[string]string{"region": "us-east1"}}, "Invalid value for variable", "Sandboxes stay in Europe.\n\nThe value of variable \"region\" given by -var region fails the validation rule at spec.hcl:5:21.", hcl.DiagError, "spec.hcl:5:21"},
		{"validation of another variable", `variable "a" {
  default = "x"
  validation {
    condition     = var.name != ""
    error_message = "no"
  }
}` + varSpec, LoadOptions{}, "Invalid reference in variable validation", `may only refer to var.a`, hcl.DiagError, "spec.hcl:4:21"},
		{"validation without message", `variable "a" {
  default = "x"
  validation { condition = true }
}` + varSpec, LoadOptions{}, "Missing required argument", "needs an error message", hcl.DiagError, "spec.hcl:3:3"},
		{"reserved name", "variable \"each\" {}\n" + varSpec, LoadOptions{}, "Invalid variable name", "reserved", hcl.DiagError, "spec.hcl:1:10"},
		{"duplicate variable", "variable \"name\" {}\n" + varSpec, LoadOptions{}, `Duplicate variable "name"`, "already declared at spec.hcl:1:1", hcl.DiagError, "spec.hcl:3:10"},
		{"undeclared local", strings.Replace(varSpec, `image = "busybox:1.36"`, `image = local.imgae`, 1) + "locals { image = \"busybox\" }\n", LoadOptions{}, "Reference to undeclared local value", `No local value "imgae" is declared. Did you mean "image"?`, hcl.DiagError, "spec.hcl:22:31"},
		{"local cycle", varSpec + "locals {\n  a = local.b\n  b = local.a\n}\n", LoadOptions{}, "Cycle in local values", "local.a → local.b → local.a", hcl.DiagError, "spec.hcl:"},
		{"duplicate local", varSpec + "locals { a = 1 }\nlocals { a = 2 }\n", LoadOptions{}, "Duplicate local value", "already declared", hcl.DiagError, "spec.hcl:29:10"},
		{"each outside for_each", strings.Replace(varSpec, `image = "busybox:1.36"`, `image = each.key`, 1), LoadOptions{}, "Unknown variable", "only exist inside a tenant block that has for_each", hcl.DiagError, "spec.hcl:22:26"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Environ = []string{}
			l := NewLoader()
			p, diags := l.LoadSource("spec.hcl", []byte(tt.src), tt.opts)
			var b strings.Builder
			l.WriteDiagnostics(&b, diags)
			for _, d := range diags {
				if d.Summary != tt.summary {
					continue
				}
				if d.Severity != tt.severity || !strings.Contains(d.Detail, tt.detail) {
					t.Errorf("got %v %q", d.Severity, d.Detail)
				}
				switch {
				case tt.subject == "" && d.Subject != nil:
					t.Errorf("subject %s, want none", pos(*d.Subject))
				case tt.subject != "" && (d.Subject == nil || !strings.HasPrefix(pos(*d.Subject), tt.subject)):
					t.Errorf("subject %v, want %s", d.Subject, tt.subject)
				}
				if tt.severity == hcl.DiagError && p != nil {
					t.Errorf("platform %v with errors %v", p != nil, diags.HasErrors())
				}
				return
			}
			t.Errorf("no %q diagnostic; got:\n%s", tt.summary, b.String())
		})
	}
}

// An error in a variable is reported once: the expressions using it do not
// add errors of their own.
func TestBrokenVariableReportedOnce(t *testing.T) {
	_, diags := LoadSource("spec.hcl", []byte(varSpec), LoadOptions{Vars: map[string]string{"replicas": `"x"`, "labels": "[1]"}, Environ: []string{}})
	if len(diags) != 2 {
		t.Errorf("want 2 diagnostics (one per variable), got %d: %v", len(diags), diags)
	}
}

func TestLocals(t *testing.T) {
	const spec = `
locals {
  # Out of order on purpose: evaluation follows references.
  image = "${local.registry}/agent:${local.tag}"
  tag   = "1.2.3"
}
locals {
  registry = lower("Registry.Example.COM")
  pools    = { small = 1, big = 3 }
}
platform { name = "l" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
tenant "t" {
  template "x" { image = local.image }
  warm_pool "x" {
    template = "x"
    replicas = local.pools.big
  }
}
`
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(spec), LoadOptions{Environ: []string{}})
	})
	if got := p.Tenants[0].Templates[0].Image; got != "registry.example.com/agent:1.2.3" {
		t.Errorf("image = %q", got)
	}
	if got := p.Tenants[0].WarmPools[0].Replicas; got != 3 {
		t.Errorf("replicas = %d", got)
	}
}

const forEachHead = `
platform { name = "fe" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
`

func TestForEach(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // name/namespace/replicas of each tenant
	}{
		{"map", `
tenant "team" {
  for_each  = { alpha = 1, beta = 2 }
  namespace = "agents-${each.key}"
  template "x" { image = "busybox:1.36" }
  warm_pool "x" {
    template = "x"
    replicas = each.value
  }
}`, []string{"alpha/agents-alpha/1", "beta/agents-beta/2"}},
		{"set of strings", `
tenant "team" {
  for_each = toset(["b", "a"])
  template "x" { image = "busybox:${each.value}" }
  warm_pool "x" { template = "x" }
}`, []string{"a/agents-a/1", "b/agents-b/1"}},
		{"list of strings, from a variable, beside a plain tenant", `
variable "squads" { default = ["s1", "s2"] }
tenant "plain" {}
tenant "squad" {
  for_each = var.squads
}`, []string{"plain/agents-plain/", "s1/agents-s1/", "s2/agents-s2/"}},
		{"object values", `
locals {
  teams = {
    research = { ns = "r", replicas = 2 }
  }
}
tenant "team" {
  for_each  = local.teams
  namespace = each.value.ns
  template "x" { image = "busybox:1.36" }
  warm_pool "x" {
    template = "x"
    replicas = each.value.replicas
  }
}`, []string{"research/r/2"}},
		{"empty", `
tenant "team" {
  for_each = {}
}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
				return l.LoadSource("spec.hcl", []byte(forEachHead+tt.src), LoadOptions{Environ: []string{}})
			})
			var got []string
			for _, tn := range p.Tenants {
				s := tn.Name + "/" + tn.Namespace + "/"
				if len(tn.WarmPools) > 0 {
					s += strconv.Itoa(int(tn.WarmPools[0].Replicas))
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("tenants %v, want %v", got, tt.want)
			}
		})
	}
}

func TestForEachErrors(t *testing.T) {
	tests := []struct {
		name, src, summary, detail string
	}{
		{"invalid name", `tenant "team" { for_each = toset(["Team_A"]) }`, "Invalid tenant name", `The for_each key "Team_A" names a tenant`},
		{"duplicate of a plain tenant", "tenant \"a\" {}\ntenant \"team\" { for_each = toset([\"a\"]) }", `Duplicate tenant "a"`, "already declared at spec.hcl:5:8"},
		{"duplicate element", `tenant "team" { for_each = ["a", "a"] }`, "Duplicate for_each element", `"a" appears twice`},
		{"not a collection", `tenant "team" { for_each = "a" }`, "Invalid for_each", "for_each is string."},
		{"list of objects", `tenant "team" { for_each = [{ a = 1 }] }`, "Invalid for_each", "Every element of for_each must be a string."},
		{"null", `tenant "team" { for_each = null }`, "Invalid for_each", "for_each is null."},
		{"sensitive", "variable \"teams\" {\n  default   = [\"a\"]\n  sensitive = true\n}\n" + `tenant "team" { for_each = var.teams }`, "Sensitive for_each", "its keys name tenants"},
		{"error in the body, reported once", `tenant "team" {
  for_each = toset(["a", "b", "c"])
  template "x" { image = ["x"] }
}`, "Incorrect value type", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, diags := LoadSource("spec.hcl", []byte(forEachHead+tt.src), LoadOptions{Environ: []string{}})
			if p != nil {
				t.Fatal("want errors")
			}
			n := 0
			for _, d := range diags {
				if d.Summary == tt.summary {
					n++
					if !strings.Contains(d.Detail, tt.detail) {
						t.Errorf("detail %q lacks %q", d.Detail, tt.detail)
					}
				}
			}
			if n != 1 {
				t.Errorf("%d %q diagnostics, want 1: %v", n, tt.summary, diags)
			}
		})
	}
}

// A sensitive value never reaches a diagnostic, whatever goes wrong with it,
// and the model marks it.
func TestSensitiveValuesNeverInDiagnostics(t *testing.T) {
	const secret = "Hunter2 Secret Value"
	dir := writeDir(t, map[string]string{
		"secrets.pvars.hcl": "token = 12345\nimage = \"" + secret + "\"\n",
	})
	spec := `
variable "image" {
  type      = string
  sensitive = true
  validation {
    condition     = strlen(var.image) < 5
    error_message = "image ${var.image} is too long"
  }
}
variable "token" {
  type      = list(string)
  sensitive = true
}
variable "plain_image" {
  type      = string
  sensitive = true
  default   = "busybox:1.36"
}
platform { name = "s" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
tenant "t" {
  template "x" { image = var.image }
  template "y" {
    image = var.plain_image
    env   = { A = "${var.plain_image} and more" }
  }
}
`
	for name, opts := range map[string]LoadOptions{
		"vars file": {VarFiles: []string{filepath.Join(dir, "secrets.pvars.hcl")}},
		"-var":      {Vars: map[string]string{"image": secret, "token": "12345"}},
		"env":       {Environ: []string{"PADDOCK_VAR_image=" + secret, "PADDOCK_VAR_token=12345"}},
	} {
		t.Run(name, func(t *testing.T) {
			if opts.Environ == nil {
				opts.Environ = []string{}
			}
			l := NewLoader()
			_, diags := l.LoadSource("spec.hcl", []byte(spec), opts)
			var b strings.Builder
			l.WriteDiagnostics(&b, diags)
			out := b.String()
			for _, d := range diags {
				out += d.Summary + d.Detail
			}
			if strings.Contains(out, secret) || strings.Contains(out, "Hunter2") || strings.Contains(out, "12345") {
				t.Errorf("a sensitive value leaked:\n%s", out)
			}
			// Something was reported about each variable, just not its value.
			if !strings.Contains(out, "Invalid image") && !strings.Contains(out, "Invalid value for variable") {
				t.Errorf("expected diagnostics about image:\n%s", out)
			}
			if !strings.Contains(out, `variable "token"`) {
				t.Errorf("expected a diagnostic about token:\n%s", out)
			}
			for _, d := range diags {
				if d.Subject != nil && strings.HasSuffix(d.Subject.Filename, ".pvars.hcl") {
					t.Errorf("a diagnostic about a sensitive value points into the vars file: %s", pos(*d.Subject))
				}
			}
		})
	}

	// Loaded cleanly, the model marks every sensitive string, and the parts
	// of strings derived from one.
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(spec), LoadOptions{Vars: map[string]string{"image": "ok:1", "token": `["t0k3n-value"]`}, Environ: []string{}})
	})
	for _, v := range []string{"ok:1", "busybox:1.36", "busybox:1.36 and more", "t0k3n-value"} {
		if !p.IsSensitive(v) {
			t.Errorf("%q is not marked sensitive", v)
		}
	}
	if got := p.Redact(`image "busybox:1.36" failed`); got != "image (sensitive value) failed" {
		t.Errorf("Redact = %q", got)
	}
}

// A label key built from a sensitive value is marked, whether the map is
// written out in the argument or built in a local; the keys of a map whose
// values alone are sensitive stay public, and so do env names, even of a
// map that a sensitive condition chose (they label nothing).
func TestSensitiveMapKeysMarked(t *testing.T) {
	spec := `variable "org" {
  type      = string
  sensitive = true
}
variable "cfg" {
  type      = object({ region = string })
  sensitive = true
}
locals {
  proxy_labels = { "${lower(var.org)}.example.com/role" = "proxy" }
}
platform { name = "p" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "kata" {
  handler       = "kata"
  node_selector = { "${lower(var.org)}.example.com/pool" = "kata" }
}
tenant "a" {
  egress {
    proxy {
      url        = "http://squid.egress.svc.cluster.local:3128"
      namespace  = "egress"
      pod_labels = local.proxy_labels
    }
  }
  template "t" {
    image = "r.example.com/a:1"
    env   = var.cfg.region == "" ? {} : { LOG_TAG = var.cfg.region }
  }
}
`
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(spec), LoadOptions{Vars: map[string]string{"org": "Initech", "cfg": `{ region = "eu-9" }`}, Environ: []string{}})
	})
	for _, v := range []string{"initech.example.com/pool", "initech.example.com/role", "eu-9"} {
		if !p.IsSensitive(v) {
			t.Errorf("%q is not marked sensitive", v)
		}
	}
	for _, v := range []string{"LOG_TAG", "region", "kata"} {
		if p.IsSensitive(v) {
			t.Errorf("%q is marked sensitive", v)
		}
	}
}

// A vars file may hold secrets before any variable says so: a diagnostic
// about it names the position, never prints the line.
func TestVarsFileSnippetsNeverShown(t *testing.T) {
	dir := writeDir(t, map[string]string{"s.pvars.hcl": "image = \"Hunter2 Secret Value\nname = 1\n"})
	l := NewLoader()
	_, diags := l.LoadSource("spec.hcl", []byte(varSpec), LoadOptions{VarFiles: []string{filepath.Join(dir, "s.pvars.hcl")}, Environ: []string{}})
	var b strings.Builder
	l.WriteDiagnostics(&b, diags)
	if !diags.HasErrors() || strings.Contains(b.String(), "Hunter2") || !strings.Contains(b.String(), "s.pvars.hcl:1:") {
		t.Errorf("diagnostics:\n%s", b.String())
	}
}
