package schemas

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
)

const examplePath = "../examples/local/platform.hcl"

// mustLoad fails the test on any diagnostic, printing them rendered.
func mustLoad(t *testing.T, load func(l *Loader) (*model.Platform, hcl.Diagnostics)) *model.Platform {
	t.Helper()
	l := NewLoader()
	p, diags := load(l)
	if len(diags) > 0 {
		var b strings.Builder
		l.WriteDiagnostics(&b, diags)
		t.Fatalf("unexpected diagnostics:\n%s", b.String())
	}
	if p == nil {
		t.Fatal("no diagnostics but a nil platform")
	}
	return p
}

// srcOf is the model.Range of the first line of file that starts (after
// indentation) with header, so tests follow edits of the example's comments.
func srcOf(t *testing.T, file, header string) model.Range {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(trimmed, header) {
			return model.Range{Filename: file, Line: i + 1, Column: len(line) - len(trimmed) + 1}
		}
	}
	t.Fatalf("%s has no line starting with %q", file, header)
	return model.Range{}
}

func TestLoadExample(t *testing.T) {
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadDir("../examples/local", LoadOptions{})
	})

	// Field by field first, so a failure names the field.
	tpl := func() model.Template { return p.Tenants[0].Templates[0] }
	tests := []struct {
		name string
		got  func() any
		want any
	}{
		{"platform name", func() any { return p.Name }, "local-demo"},
		{"target kind", func() any { return p.Target.Kind }, model.TargetLocal},
		{"target kubeconfig left for the engine", func() any { return p.Target.Kubeconfig }, ""},
		{"target src", func() any { return p.Target.Src }, srcOf(t, examplePath, `target "local"`)},
		{"agent sandbox version", func() any { return p.AgentSandbox.Version }, "v0.5.6"},
		{"agent sandbox image defaults to the pinned image", func() any { return p.AgentSandbox.Image }, pins.AgentSandboxImage + ":v0.5.6"},
		{"agent sandbox src", func() any { return p.AgentSandbox.Src }, srcOf(t, examplePath, "agent_sandbox {")},
		{"runtime classes", func() any { return len(p.RuntimeClasses) }, 1},
		{"runtime class name", func() any { return p.RuntimeClasses[0].Name }, "gvisor"},
		{"runtime class handler", func() any { return p.RuntimeClasses[0].Handler }, "runsc"},
		{"runtime class node selector", func() any { return p.RuntimeClasses[0].NodeSelector }, map[string]string{"sandbox.gke.io/runtime": "gvisor"}},
		{"runtime class tolerations", func() any { return p.RuntimeClasses[0].Tolerations }, []model.Toleration{
			{Key: "sandbox.gke.io/runtime", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"},
		}},
		{"runtime class src", func() any { return p.RuntimeClasses[0].Src }, srcOf(t, examplePath, `runtime_class "gvisor"`)},
		{"tenants", func() any { return len(p.Tenants) }, 1},
		{"tenant name", func() any { return p.Tenants[0].Name }, "team-a"},
		{"tenant namespace default", func() any { return p.Tenants[0].Namespace }, "agents-team-a"},
		{"tenant src", func() any { return p.Tenants[0].Src }, srcOf(t, examplePath, `tenant "team-a"`)},
		{"templates", func() any { return len(p.Tenants[0].Templates) }, 1},
		{"template name", func() any { return tpl().Name }, "agent"},
		{"template image", func() any { return tpl().Image }, "localhost/paddock/busybox:v1"},
		{"template command", func() any { return tpl().Command }, []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"}},
		{"template args unset", func() any { return tpl().Args }, []string(nil)},
		{"template runtime class", func() any { return tpl().RuntimeClass }, "gvisor"},
		{"template run_as_user default", func() any { return tpl().RunAsUser }, model.DefaultRunAsUser},
		{"template tmp_size default", func() any { return tpl().TmpSize }, model.DefaultTmpSize},
		{"template resources default", func() any { return tpl().Resources }, model.Resources{
			RequestsCPU: model.DefaultRequestsCPU, RequestsMemory: model.DefaultRequestsMemory,
			RequestsEphemeralStorage: model.DefaultRequestsEphemeralStorage,
			LimitsCPU:                model.DefaultLimitsCPU, LimitsMemory: model.DefaultLimitsMemory,
			LimitsEphemeralStorage: model.DefaultLimitsEphemeralStorage,
		}},
		{"template src", func() any { return tpl().Src }, srcOf(t, examplePath, `template "agent"`)},
		{"warm pools", func() any { return p.Tenants[0].WarmPools }, []model.WarmPool{
			{Name: "agent", Template: "agent", Replicas: 2, UpdateStrategy: model.UpdateRecreate, Src: srcOf(t, examplePath, `warm_pool "agent"`),
				Attrs: model.Attrs{"template": srcOf(t, examplePath, `template = "agent"`), "replicas": srcOf(t, examplePath, `replicas = 2`)}},
		}},
		{"waivers", func() any { return len(p.Waivers) }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}

	// Then the whole model, so nothing unexpected sneaks in. Source ranges of
	// arguments are checked in TestAttrRanges.
	tenant := model.DefaultTenant("team-a")
	tenant.Src = srcOf(t, examplePath, `tenant "team-a"`)
	agent := model.DefaultTemplate("agent")
	agent.Image, agent.Command, agent.RuntimeClass = "localhost/paddock/busybox:v1", []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"}, "gvisor"
	agent.Src = srcOf(t, examplePath, `template "agent"`)
	tenant.Templates = []model.Template{agent}
	tenant.WarmPools = []model.WarmPool{{Name: "agent", Template: "agent", Replicas: 2, UpdateStrategy: model.UpdateRecreate, Src: srcOf(t, examplePath, `warm_pool "agent"`)}}
	want := &model.Platform{
		Name:   "local-demo",
		Src:    srcOf(t, examplePath, "platform {"),
		Target: model.Target{Kind: model.TargetLocal, FQDNPolicy: model.FQDNPolicyCilium, Src: srcOf(t, examplePath, `target "local"`)},
		AgentSandbox: model.AgentSandboxRelease{
			Version: "v0.5.6",
			Image:   pins.AgentSandboxImage + ":v0.5.6",
			Src:     srcOf(t, examplePath, "agent_sandbox {"),
		},
		RuntimeClasses: []model.RuntimeClass{{
			Name:         "gvisor",
			Handler:      "runsc",
			NodeSelector: map[string]string{"sandbox.gke.io/runtime": "gvisor"},
			Tolerations:  []model.Toleration{{Key: "sandbox.gke.io/runtime", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"}},
			Src:          srcOf(t, examplePath, `runtime_class "gvisor"`),
		}},
		Tenants: []model.Tenant{tenant},
		Waivers: []model.Waiver{{Rule: "PDK-603", Reason: "The local demo cluster is throwaway and holds no real data or credentials; real targets ship audit records to an audit_sink.",
			Src: srcOf(t, examplePath, "waiver {")}},
	}
	stripAttrs(p)
	if !reflect.DeepEqual(p, want) {
		t.Errorf("model mismatch\n got: %+v\nwant: %+v", p, want)
	}
}

// A directory, the file in it, LoadFiles of either and LoadSource all give
// the same model.
func TestLoadEntryPointsAgree(t *testing.T) {
	dir := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadDir("../examples/local", LoadOptions{})
	})
	src, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func(l *Loader) (*model.Platform, hcl.Diagnostics){
		"LoadDir(file)": func(l *Loader) (*model.Platform, hcl.Diagnostics) { return l.LoadDir(examplePath, LoadOptions{}) },
		"LoadFiles(file)": func(l *Loader) (*model.Platform, hcl.Diagnostics) {
			return l.LoadFiles([]string{examplePath}, LoadOptions{})
		},
		"LoadFiles(dir)": func(l *Loader) (*model.Platform, hcl.Diagnostics) {
			return l.LoadFiles([]string{"../examples/local"}, LoadOptions{})
		},
		"LoadFiles(dup)": func(l *Loader) (*model.Platform, hcl.Diagnostics) {
			return l.LoadFiles([]string{examplePath, "../examples/local"}, LoadOptions{})
		},
		"LoadSource": func(l *Loader) (*model.Platform, hcl.Diagnostics) {
			return l.LoadSource(examplePath, src, LoadOptions{})
		},
		"package LoadDir": func(*Loader) (*model.Platform, hcl.Diagnostics) { return LoadDir("../examples/local", LoadOptions{}) },
		"package LoadFiles": func(*Loader) (*model.Platform, hcl.Diagnostics) {
			return LoadFiles([]string{examplePath}, LoadOptions{})
		},
		"package LoadSource": func(*Loader) (*model.Platform, hcl.Diagnostics) { return LoadSource(examplePath, src, LoadOptions{}) },
	} {
		t.Run(name, func(t *testing.T) {
			if got := mustLoad(t, load); !reflect.DeepEqual(got, dir) {
				t.Errorf("got %+v\nwant %+v", got, dir)
			}
		})
	}
}

func TestLoadMergesFiles(t *testing.T) {
	const dir = "testdata/merge"
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) { return l.LoadDir(dir, LoadOptions{}) })
	file := func(name string) string { return filepath.Join(dir, name) }

	if p.Name != "merged" {
		t.Errorf("name = %q", p.Name)
	}
	if want := (model.Target{Kind: model.TargetKubeconfig, FQDNPolicy: model.FQDNPolicyNone, Context: "staging", Src: srcOf(t, file("00-platform.hcl"), "target"),
		Attrs: model.Attrs{"context": srcOf(t, file("00-platform.hcl"), "context")}}); !reflect.DeepEqual(p.Target, want) {
		t.Errorf("target = %+v, want %+v", p.Target, want)
	}
	if p.AgentSandbox.Image != "mirror.example.com/agent-sandbox-controller:v0.5.6" {
		t.Errorf("an explicit image must be kept, got %q", p.AgentSandbox.Image)
	}

	// Blocks keep file order (files sorted by name), then source order.
	var rcs []string
	for _, rc := range p.RuntimeClasses {
		rcs = append(rcs, fmt.Sprintf("%s@%s:%d", rc.Name, filepath.Base(rc.Src.Filename), rc.Src.Line))
	}
	if got, want := strings.Join(rcs, " "), "gvisor@10-runtimes.hcl:1 kata@10-runtimes.hcl:5"; got != want {
		t.Errorf("runtime classes = %s, want %s", got, want)
	}
	if got := p.RuntimeClasses[1].NodeSelector; !reflect.DeepEqual(got, map[string]string{"katacontainers.io/kata-runtime": "true"}) {
		t.Errorf("kata node selector = %v", got)
	}
	var tenants []string
	for _, tn := range p.Tenants {
		tenants = append(tenants, fmt.Sprintf("%s/%s@%s:%d", tn.Name, tn.Namespace, filepath.Base(tn.Src.Filename), tn.Src.Line))
	}
	if got, want := strings.Join(tenants, " "), "team-a/agents-team-a@20-team-a.hcl:2 team-b/team-b-agents@21-team-b.hcl:1"; got != want {
		t.Errorf("tenants = %s, want %s", got, want)
	}

	// A reference across files resolves.
	if got := p.Tenants[0].Templates[0].RuntimeClass; got != "kata" {
		t.Errorf("team-a template runtime class = %q", got)
	}
	// A partial resources block keeps what it sets and defaults the rest.
	res := p.Tenants[1].Templates[0].Resources
	if res.LimitsMemory != "2Gi" || res.RequestsMemory != model.DefaultRequestsMemory || res.LimitsCPU != model.DefaultLimitsCPU {
		t.Errorf("team-b resources = %+v", res)
	}
	if got := p.Tenants[1].WarmPools[0].Replicas; got != model.DefaultWarmPoolReplicas {
		t.Errorf("default replicas = %d", got)
	}
	wantWaivers := []model.Waiver{{
		Rule: "PDK-603", Reason: "Staging ships audit through the cluster's own pipeline during the pilot.", Expires: "2026-12-31",
		Src: srcOf(t, file("21-team-b.hcl"), "waiver"),
	}}
	if !reflect.DeepEqual(p.Waivers, wantWaivers) {
		t.Errorf("waivers = %+v, want %+v", p.Waivers, wantWaivers)
	}
}

// The smallest valid spec: everything else is a default.
const minimalSpec = `
platform { name = "minimal" }
target "local" {}
agent_sandbox { version = "v0.5.5" }
tenant "t" {
  template "x" { image = "busybox:1.36" }
  warm_pool "x" { template = "x" }
}
`

func TestLoadAppliesDefaults(t *testing.T) {
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(minimalSpec), LoadOptions{})
	})
	tenant := model.DefaultTenant("t")
	tenant.Src = model.Range{Filename: "spec.hcl", Line: 5, Column: 1}
	tpl := model.DefaultTemplate("x")
	tpl.Image, tpl.Src = "busybox:1.36", model.Range{Filename: "spec.hcl", Line: 6, Column: 3}
	tenant.Templates = []model.Template{tpl}
	tenant.WarmPools = []model.WarmPool{{Name: "x", Template: "x", Replicas: model.DefaultWarmPoolReplicas, UpdateStrategy: model.DefaultWarmPoolUpdateStrategy, Src: model.Range{Filename: "spec.hcl", Line: 7, Column: 3}}}
	want := &model.Platform{
		Name:         "minimal",
		Src:          model.Range{Filename: "spec.hcl", Line: 2, Column: 1},
		Target:       model.Target{Kind: model.TargetLocal, FQDNPolicy: model.FQDNPolicyCilium, Src: model.Range{Filename: "spec.hcl", Line: 3, Column: 1}},
		AgentSandbox: model.AgentSandboxRelease{Version: "v0.5.5", Image: pins.AgentSandboxImage + ":v0.5.5", Src: model.Range{Filename: "spec.hcl", Line: 4, Column: 1}},
		Tenants:      []model.Tenant{tenant},
	}
	stripAttrs(p)
	// The hardened defaults, spelled out once more so a change of a default
	// is a deliberate change of this test.
	checks := []struct {
		name      string
		got, want any
	}{
		{"pod security", tenant.PodSecurity, "restricted"},
		{"quota", tenant.Quota, model.Quota{Pods: 20, LimitsCPU: "8", LimitsMemory: "16Gi", LimitsEphemeralStorage: "20Gi", PersistentVolumeClaims: 20, RequestsStorage: "100Gi"}},
		{"limit range", tenant.LimitRange.Defaults, model.Resources{RequestsCPU: "250m", RequestsMemory: "512Mi", RequestsEphemeralStorage: "1Gi", LimitsCPU: "1", LimitsMemory: "1Gi", LimitsEphemeralStorage: "2Gi"}},
		{"identity", tenant.Identity, model.Identity{Orchestrator: true}},
		{"egress", tenant.Egress, model.Egress{DNS: true}},
		{"claims", tenant.Claims, model.ClaimPolicy{TTL: 10 * time.Minute, MaxTTL: 4 * time.Hour, ShutdownPolicy: "Delete"}},
		{"seccomp", tpl.Seccomp, "RuntimeDefault"},
		{"run as user", tpl.RunAsUser, int64(10001)},
		{"warm pool update strategy", tenant.WarmPools[0].UpdateStrategy, "Recreate"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("default %s = %+v, want %+v", c.name, c.got, c.want)
		}
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
}

func TestLoadExplicitValues(t *testing.T) {
	const spec = `
platform { name = "explicit" }
target "kubeconfig" {
  path    = "/etc/paddock/kubeconfig"
  context = "prod"
}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" {
  handler = "runsc"
  toleration {
    operator = "Exists"
  }
}
tenant "t" {
  namespace = "sandboxes"
  template "x" {
    image         = "busybox:1.36"
    args          = []
    run_as_user   = 20000
    tmp_size      = "1Gi"
    runtime_class = null # same as leaving it out
    resources {
      requests = { cpu = 0.5, memory = "1Gi", ephemeral_storage = "1Gi" }
      limits   = { cpu = 2, memory = "1Gi", ephemeral_storage = "4Gi" }
    }
  }
  warm_pool "x" {
    template = "x"
    replicas = 0
  }
}
`
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(spec), LoadOptions{})
	})
	if p.Target.Kubeconfig != "/etc/paddock/kubeconfig" || p.Target.Context != "prod" {
		t.Errorf("target = %+v", p.Target)
	}
	if got, want := p.RuntimeClasses[0].Tolerations, []model.Toleration{{Operator: "Exists"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("tolerations = %+v", got)
	}
	if p.Tenants[0].Namespace != "sandboxes" {
		t.Errorf("namespace = %q", p.Tenants[0].Namespace)
	}
	tpl := p.Tenants[0].Templates[0]
	if tpl.Args != nil || tpl.RunAsUser != 20000 || tpl.TmpSize != "1Gi" || tpl.RuntimeClass != "" {
		t.Errorf("template = %+v", tpl)
	}
	wantRes := model.Resources{
		RequestsCPU: "0.5", RequestsMemory: "1Gi", RequestsEphemeralStorage: "1Gi",
		LimitsCPU: "2", LimitsMemory: "1Gi", LimitsEphemeralStorage: "4Gi",
	}
	if tpl.Resources != wantRes {
		t.Errorf("resources = %+v, want %+v", tpl.Resources, wantRes)
	}
	if p.Tenants[0].WarmPools[0].Replicas != 0 {
		t.Errorf("replicas = %d, want an explicit 0 kept", p.Tenants[0].WarmPools[0].Replicas)
	}
}

func TestLoadEvaluatesFunctions(t *testing.T) {
	const spec = `
platform { name = lower("Fn-Demo") }
target "local" {}
agent_sandbox { version = format("v%d.%d.%d", 0, 5, 6) }
runtime_class "gvisor" {
  handler       = "runsc"
  node_selector = merge({ "a" = "1" }, { "b" = upper("x") })
}
tenant "t" {
  template "x" {
    image   = join(":", ["python", "3.12-slim"])
    command = concat(["sleep"], split(",", "infinity"))
    args    = [for s in ["a", "b"] : "--${s}"]
  }
}
`
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(spec), LoadOptions{})
	})
	tpl := p.Tenants[0].Templates[0]
	checks := []struct{ got, want any }{
		{p.Name, "fn-demo"},
		{p.AgentSandbox.Version, "v0.5.6"},
		{p.RuntimeClasses[0].NodeSelector, map[string]string{"a": "1", "b": "X"}},
		{tpl.Image, "python:3.12-slim"},
		{tpl.Command, []string{"sleep", "infinity"}},
		{tpl.Args, []string{"--a", "--b"}},
	}
	for i, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("check %d: got %#v, want %#v", i, c.got, c.want)
		}
	}
}

// Every registered function can be called; a typo in the table would only
// show up when a spec used it.
func TestFunctionTable(t *testing.T) {
	for name, f := range functions() {
		if f.Params() == nil && f.VarParam() == nil {
			t.Errorf("function %q takes no parameters; is it registered right?", name)
		}
	}
}

func TestCheckFormatWidths(t *testing.T) {
	for s, ok := range map[string]bool{
		"%s": true, "%5d": true, "%-10s": true, "%.2f": true, "%%99999999s": true, "100%%": true, "%[1]s": true,
		"%99999999s": false, "%.99999999f": false, "%1001s": false, "%99999999999999999999999s": false,
	} {
		if err := checkFormatWidths(s); (err == nil) != ok {
			t.Errorf("checkFormatWidths(%q) = %v, want ok=%v", s, err, ok)
		}
	}
	_, diags := LoadSource("spec.hcl", []byte(`platform { name = format("%999999999s", "x") }`), LoadOptions{})
	for _, d := range diags {
		if strings.Contains(d.Detail, "format widths") {
			return
		}
	}
	t.Errorf("a huge format width must be an error, got %v", diags)
}

func TestLoadInputErrors(t *testing.T) {
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		load        func() (*model.Platform, hcl.Diagnostics)
		wantSummary string
		wantDetail  string
	}{
		{"missing dir", func() (*model.Platform, hcl.Diagnostics) { return LoadDir("testdata/no-such-dir", LoadOptions{}) },
			"Spec not found", `There is no file or directory "testdata/no-such-dir"`},
		{"missing file", func() (*model.Platform, hcl.Diagnostics) {
			return LoadFiles([]string{examplePath, "nope.hcl"}, LoadOptions{})
		}, "Spec not found", `"nope.hcl"`},
		{"no hcl files", func() (*model.Platform, hcl.Diagnostics) { return LoadDir(empty, LoadOptions{}) },
			"No spec files", "contains no *.hcl files"},
		{"no paths", func() (*model.Platform, hcl.Diagnostics) { return LoadFiles(nil, LoadOptions{}) },
			"No spec given", "Give the directory"},
		{"undeclared var", func() (*model.Platform, hcl.Diagnostics) {
			return LoadDir("../examples/local", LoadOptions{Vars: map[string]string{"region": "eu"}})
		}, "Value for undeclared variable", `variable "region" by -var region, but the spec declares no such variable. The spec declares no variables.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, diags := tt.load()
			if p != nil {
				t.Error("want a nil platform on error")
			}
			if len(diags) != 1 {
				t.Fatalf("want 1 diagnostic, got %v", diags)
			}
			d := diags[0]
			if d.Severity != hcl.DiagError || d.Summary != tt.wantSummary || !strings.Contains(d.Detail, tt.wantDetail) {
				t.Errorf("got %q: %q; want %q containing %q", d.Summary, d.Detail, tt.wantSummary, tt.wantDetail)
			}
		})
	}
}

// stripAttrs zeroes every model.Attrs in v (a pointer), recursively, so whole
// models compare without argument ranges.
func stripAttrs(v any) {
	var walk func(rv reflect.Value)
	attrsType := reflect.TypeOf(model.Attrs(nil))
	walk = func(rv reflect.Value) {
		switch rv.Kind() {
		case reflect.Pointer:
			if !rv.IsNil() {
				walk(rv.Elem())
			}
		case reflect.Struct:
			for i := 0; i < rv.NumField(); i++ {
				f := rv.Field(i)
				if !f.CanSet() {
					continue
				}
				if f.Type() == attrsType {
					f.Set(reflect.Zero(attrsType))
					continue
				}
				walk(f)
			}
		case reflect.Slice:
			for i := 0; i < rv.Len(); i++ {
				walk(rv.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(v))
}
