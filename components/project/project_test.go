package project

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/program"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/internal/targets"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func TestParse(t *testing.T) {
	c, err := Parse(map[string]Value{
		KeySpec:        {Value: "examples/team-platform"},
		KeyVars:        {Value: `{"platform_name":"team-a","tenants":{"research":{"replicas":2}},"flag":true}`},
		KeySecretVars:  {Value: `{"telemetry_url":"https://x.example.com/ingest/abc123"}`, Secret: true},
		KeyVarFiles:    {Value: `["prod.pvars.hcl"]`},
		KeyTarget:      {Value: `{"kubeconfig":"kube/prod.yaml","context":"prod"}`},
		"kubernetes:x": {Value: "ignored"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"platform_name": "team-a",
		"tenants":       `{"research":{"replicas":2}}`,
		"flag":          "true",
		"telemetry_url": "https://x.example.com/ingest/abc123",
	}
	if got := c.AllVars(); !reflect.DeepEqual(got, want) {
		t.Errorf("vars = %v, want %v", got, want)
	}
	if got := c.SensitiveValues(); !reflect.DeepEqual(got, []string{"https://x.example.com/ingest/abc123"}) {
		t.Errorf("sensitive = %v", got)
	}
	o := c.SpecOptions("/repo")
	if o.VarFiles[0] != "/repo/prod.pvars.hcl" || o.Target.Kubeconfig != "/repo/kube/prod.yaml" || o.Target.Context != "prod" {
		t.Errorf("spec options = %+v %+v", o, o.Target)
	}
	if c.SpecDir("/repo") != "/repo/examples/team-platform" {
		t.Errorf("spec dir = %s", c.SpecDir("/repo"))
	}
}

func TestParseErrors(t *testing.T) {
	spec := Value{Value: "spec"}
	for name, tc := range map[string]struct {
		in   map[string]Value
		want string
	}{
		"no spec":            {map[string]Value{}, "paddock:spec is not set"},
		"unknown key":        {map[string]Value{KeySpec: spec, "paddock:varz": {Value: "{}"}}, "unknown config key(s) paddock:varz"},
		"secret in vars":     {map[string]Value{KeySpec: spec, KeyVars: {Value: `{"a":"b"}`, Secret: true}}, "put sensitive variables under paddock:secretVars"},
		"plain secret vars":  {map[string]Value{KeySpec: spec, KeySecretVars: {Value: `{"a":"b"}`}}, "stored in plain text"},
		"both":               {map[string]Value{KeySpec: spec, KeyVars: {Value: `{"a":"b"}`}, KeySecretVars: {Value: `{"a":"c"}`, Secret: true}}, `"a" is set in both`},
		"vars not an object": {map[string]Value{KeySpec: spec, KeyVars: {Value: `"x"`}}, "must be an object"},
		"bad target":         {map[string]Value{KeySpec: spec, KeyTarget: {Value: `{"cluster":"x"}`}}, "unknown field"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestStackFiles(t *testing.T) {
	root := repoRoot(t)
	dir, file, err := StackFileFor(filepath.Join(root, "examples", "team-platform"), "team-a")
	if err != nil {
		t.Fatal(err)
	}
	if dir != root || file != filepath.Join(root, "stacks", "Pulumi.team-a.yaml") {
		t.Fatalf("project %s, stack file %s", dir, file)
	}
	if _, _, err := StackFileFor(root, "no-such-team"); err == nil || !strings.Contains(err.Error(), ErrNoStackFile.Error()) {
		t.Fatalf("missing stack file: %v", err)
	}
	proj, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if proj.Name != "paddock" || proj.StackConfigDir != "stacks" || proj.Runtime.Name() != "go" {
		t.Fatalf("Pulumi.yaml: name %s, stackConfigDir %s, runtime %s", proj.Name, proj.StackConfigDir, proj.Runtime.Name())
	}
	if _, err := os.Stat(filepath.Join(root, proj.Main, "main.go")); err != nil {
		t.Fatalf("Pulumi.yaml main %s: %v", proj.Main, err)
	}
}

// stackValues reads a committed stack file's plain config as Pulumi would
// hand it to the program.
func stackValues(t *testing.T, root, stack string) map[string]Value {
	t.Helper()
	proj, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	file, _ := StackFile(root, stack)
	ps, err := workspace.LoadProjectStack(nil, proj, file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Value{}
	for k, v := range ps.Config {
		s, err := v.Value(nil)
		if err != nil {
			t.Fatalf("%s %s: %v", file, k, err)
		}
		out[k.String()] = Value{Value: s, Secret: v.Secure()}
	}
	return out
}

// TestCommittedStacksLoad: every stack file in stacks/ names a spec that
// loads and passes policy with its variables.
func TestCommittedStacksLoad(t *testing.T) {
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "stacks", "Pulumi.*.yaml"))
	if len(files) < 2 {
		t.Fatalf("want stack files for at least two teams, have %v", files)
	}
	for _, f := range files {
		stack := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "Pulumi."), ".yaml")
		t.Run(stack, func(t *testing.T) {
			c, err := Parse(stackValues(t, root, stack))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			p, err := specload.Load(c.SpecDir(root), c.SpecOptions(root), &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if p.Name != stack {
				t.Errorf("stack %s provisions platform %q: name them alike", stack, p.Name)
			}
		})
	}
}

// graph is every resource a program registers: type, name, parent and
// inputs, secrets kept as secrets.
type graph struct {
	mu  sync.Mutex
	all map[string]resource.PropertyMap
}

func (g *graph) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.all == nil {
		g.all = map[string]resource.PropertyMap{}
	}
	g.all[args.TypeToken+"::"+args.Name] = args.Inputs
	return args.Name + "_id", args.Inputs, nil
}

func (g *graph) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return args.Args, nil
}

func (g *graph) keys() []string {
	var out []string
	for k := range g.all {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestBothPathsSameGraph: the Pulumi program entry (Program, reading the
// stack's config from Pulumi) and the CLI's spec path (SPEC with --var)
// register the same resources with the same inputs, and a value that came
// from a config secret is a secret in both.
func TestBothPathsSameGraph(t *testing.T) {
	root := repoRoot(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := "https://otel.example.com/ingest/0b3c8f9c2a777d1e"
	values := stackValues(t, root, "team-a")
	values[KeySecretVars] = Value{Value: `{"telemetry_url":"` + secret + `"}`, Secret: true}
	values[KeyTarget] = Value{Value: `{"kubeconfig":"` + kubeconfig + `"}`}

	// The Pulumi path: config as the engine hands it to the program.
	cfg := map[string]string{}
	var secretKeys []string
	for k, v := range values {
		cfg[k] = v.Value
		if v.Secret {
			secretKeys = append(secretKeys, k)
		}
	}
	cfgJSON, _ := json.Marshal(cfg)
	keysJSON, _ := json.Marshal(secretKeys)
	t.Setenv(pulumi.EnvConfig, string(cfgJSON))
	t.Setenv(pulumi.EnvConfigSecretKeys, string(keysJSON))
	t.Setenv(pulumi.EnvPulumiRootDirectory, root)
	viaPulumi := &graph{}
	if err := pulumi.RunErr(Program(&bytes.Buffer{}), pulumi.WithMocks("paddock", "team-a", viaPulumi)); err != nil {
		t.Fatal(err)
	}

	// The CLI's spec path: the same spec and variables given as SPEC --var ...
	c, err := Parse(values)
	if err != nil {
		t.Fatal(err)
	}
	vars := c.AllVars()
	p, err := specload.Load(filepath.Join(root, "examples", "team-platform"), specload.Options{Vars: vars, Target: c.Target, Sensitive: c.SensitiveValues()}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := targets.Resolve(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	t.Setenv(pulumi.EnvConfig, "")
	t.Setenv(pulumi.EnvConfigSecretKeys, "")
	viaCLI := &graph{}
	if err := pulumi.RunErr(program.New(p), pulumi.WithMocks("paddock", "team-a", viaCLI)); err != nil {
		t.Fatal(err)
	}

	if a, b := viaPulumi.keys(), viaCLI.keys(); !reflect.DeepEqual(a, b) {
		t.Fatalf("different resources:\n pulumi: %v\n cli:    %v", a, b)
	}
	if n := len(viaPulumi.all); n < 60 {
		t.Fatalf("only %d resources registered", n)
	}
	secrets := 0
	for k, in := range viaPulumi.all {
		if !in.DeepEquals(viaCLI.all[k]) {
			t.Errorf("%s: inputs differ:\n pulumi: %v\n cli:    %v", k, in, viaCLI.all[k])
		}
		if in.ContainsSecrets() {
			secrets++
			if !strings.Contains(k, "SandboxTemplate") {
				t.Errorf("%s holds a secret, but the secret only goes into templates", k)
			}
		}
		if strings.Contains(k, "SandboxTemplate") && !in.ContainsSecrets() {
			t.Errorf("%s: the telemetry URL from a config secret is not a secret input", k)
		}
	}
	if secrets != 2 {
		t.Errorf("%d resources hold the secret, want the 2 templates", secrets)
	}
}

func TestStacksListsTheStackConfigDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Pulumi.yaml", "name: p\nruntime: go\nstackConfigDir: stacks\n")
	write("stacks/Pulumi.team-b.yaml", "config: {}\n")
	write("stacks/Pulumi.team-a.yaml", "config: {}\n")
	write("stacks/README.md", "not a stack\n")
	write("Pulumi.stray.yaml", "config: {}\n") // outside stackConfigDir: not this project's
	got, err := Stacks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "team-a,team-b" {
		t.Fatalf("Stacks = %v", got)
	}
}

// A language host older than the engine reports no project root and runs
// the program in its `main` directory: the root is then the nearest
// Pulumi.yaml above (cmd/paddock-pulumi of this repository's project).
func TestProjectRootAbove(t *testing.T) {
	root := t.TempDir()
	main := filepath.Join(root, "cmd", "paddock-pulumi")
	if err := os.MkdirAll(main, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := ProjectRootAbove(main); got != main {
		t.Errorf("no Pulumi.yaml anywhere: ProjectRootAbove = %s, want the directory itself", got)
	}
	if err := os.WriteFile(filepath.Join(root, "Pulumi.yaml"), []byte("name: x\nruntime: go\nmain: ./cmd/paddock-pulumi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{main, filepath.Join(root, "cmd"), root} {
		if got := ProjectRootAbove(from); got != root {
			t.Errorf("ProjectRootAbove(%s) = %s, want %s", from, got, root)
		}
	}
	// A nearer project wins, as Pulumi finds it.
	if err := os.WriteFile(filepath.Join(main, "Pulumi.yml"), []byte("name: y\nruntime: go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ProjectRootAbove(main); got != main {
		t.Errorf("with cmd/paddock-pulumi/Pulumi.yml: ProjectRootAbove = %s, want %s", got, main)
	}
}
