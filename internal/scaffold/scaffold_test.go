package scaffold

import (
	"bytes"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"sigs.k8s.io/yaml"

	"github.com/paddock-platform/paddock/components/project"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
	"github.com/paddock-platform/paddock/internal/specload"
)

const testVersion = "v0.0.0-20260102030405-0123456789ab"

// writeRepo renders o and writes it into a fresh directory.
func writeRepo(t *testing.T, o Options) (string, []File) {
	t.Helper()
	files, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "repo")
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

func read(t *testing.T, dir, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stackConfig reads a stack file as Pulumi hands it to the program, and
// parses its paddock:* keys as Paddock does.
func stackConfig(t *testing.T, dir, stack string) *project.Config {
	t.Helper()
	proj, err := project.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	file, err := project.StackFile(dir, stack)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := workspace.LoadProjectStack(nil, proj, file)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]project.Value{}
	for k, v := range ps.Config {
		s, err := v.Value(nil)
		if err != nil {
			t.Fatal(err)
		}
		values[k.String()] = project.Value{Value: s, Secret: v.Secure()}
	}
	c, err := project.Parse(values)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRenderedRepository(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir, files := writeRepo(t, Options{Name: "acme-agents", PaddockVersion: testVersion})

	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
		if bytes.Contains(f.Data, []byte("<%")) || bytes.Contains(f.Data, []byte("%>")) {
			t.Errorf("%s keeps a template delimiter:\n%s", f.Path, f.Data)
		}
	}
	want := []string{"Pulumi.yaml", "main.go", "go.mod", "stacks/Pulumi.dev.yaml", "spec/platform.hcl", ".github/workflows/paddock-drift.yml", "README.md"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("files %v, want %v", paths, want)
	}
	var onDisk []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		wantMode := fs.FileMode(0o644)
		if d.IsDir() {
			wantMode = fs.ModeDir | 0o755
		} else {
			onDisk = append(onDisk, filepath.ToSlash(rel))
		}
		if info.Mode() != wantMode {
			t.Errorf("%s: mode %v, want %v", rel, info.Mode(), wantMode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(onDisk)
	sort.Strings(want)
	if !reflect.DeepEqual(onDisk, want) {
		t.Errorf("on disk %v, want exactly %v", onDisk, want)
	}

	t.Run("a Pulumi project of runtime go whose program is at its root", func(t *testing.T) {
		proj, err := project.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if proj.Name != "acme-agents" || proj.Runtime.Name() != "go" || proj.StackConfigDir != "stacks" || proj.Main != "" {
			t.Errorf("Pulumi.yaml: name %q runtime %q stackConfigDir %q main %q", proj.Name, proj.Runtime.Name(), proj.StackConfigDir, proj.Main)
		}
		stacks, err := project.Stacks(dir)
		if err != nil || !reflect.DeepEqual(stacks, []string{"dev"}) {
			t.Errorf("stacks %v, %v; want [dev]", stacks, err)
		}
	})

	t.Run("main.go runs Paddock's program", func(t *testing.T) {
		f, err := parser.ParseFile(token.NewFileSet(), "main.go", read(t, dir, "main.go"), 0)
		if err != nil {
			t.Fatal(err)
		}
		var imports []string
		for _, i := range f.Imports {
			p, _ := strconv.Unquote(i.Path.Value)
			imports = append(imports, p)
		}
		sort.Strings(imports)
		if f.Name.Name != "main" || !reflect.DeepEqual(imports, []string{PaddockModule + "/components/project", pulumiSDKModule + "/go/pulumi", "os"}) {
			t.Errorf("main.go: package %s, imports %v", f.Name.Name, imports)
		}
		if !bytes.Contains(read(t, dir, "main.go"), []byte("pulumi.Run(project.Program(os.Stderr))")) {
			t.Error("main.go does not run project.Program")
		}
	})

	t.Run("go.mod requires Paddock at the version given, in Paddock's Go", func(t *testing.T) {
		f, err := modfile.Parse("go.mod", read(t, dir, "go.mod"), nil)
		if err != nil {
			t.Fatal(err)
		}
		req := map[string]string{}
		for _, r := range f.Require {
			req[r.Mod.Path] = r.Mod.Version
		}
		want := map[string]string{PaddockModule: testVersion, pulumiSDKModule: pins.Pulumi}
		if f.Module.Mod.Path != "example.com/acme-agents/platform" || f.Go.Version != GoVersion || !reflect.DeepEqual(req, want) || len(f.Replace) != 0 {
			t.Errorf("go.mod: module %s, go %s, requires %v, %d replaces", f.Module.Mod.Path, f.Go.Version, req, len(f.Replace))
		}
	})

	t.Run("the stack provisions the local example under the platform's name", func(t *testing.T) {
		c := stackConfig(t, dir, "dev")
		if c.Spec != SpecDir || !reflect.DeepEqual(c.Vars, map[string]string{"platform_name": "acme-agents"}) || c.Target != nil {
			t.Fatalf("stack dev: spec %q vars %v target %v", c.Spec, c.Vars, c.Target)
		}
		var report bytes.Buffer
		got, err := specload.Load(c.SpecDir(dir), c.SpecOptions(dir), &report)
		if err != nil {
			t.Fatalf("%v\n%s", err, report.String())
		}
		if got.Name != "acme-agents" || len(got.Tenants) != 1 || got.Tenants[0].Namespace != "agents-acme-agents" {
			t.Fatalf("platform %q, tenants %+v", got.Name, got.Tenants)
		}
		if got.AgentSandbox.Version != pins.AgentSandbox {
			t.Errorf("agent_sandbox %s, Paddock pins %s", got.AgentSandbox.Version, pins.AgentSandbox)
		}
		local, err := specload.Load(filepath.Join("..", "..", "examples", "local"), specload.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Apart from the names (and where things are written), the same platform.
		for _, p := range []*model.Platform{got, local} {
			p.Name = "x"
			p.Tenants[0].Name, p.Tenants[0].Namespace = "x", "x"
			for i := range p.Waivers {
				p.Waivers[i].Reason = ""
			}
			zeroSources(reflect.ValueOf(p).Elem())
		}
		if !reflect.DeepEqual(got, local) {
			t.Errorf("the starter spec is not the local example:\nstarter %+v\nlocal   %+v", *got, *local)
		}
	})

	t.Run("the workflow checks every stack on a schedule", func(t *testing.T) {
		raw := read(t, dir, ".github/workflows/paddock-drift.yml")
		var wf struct {
			Jobs map[string]struct {
				Steps []struct {
					Run string `json:"run"`
				} `json:"steps"`
			} `json:"jobs"`
		}
		if err := yaml.Unmarshal(raw, &wf); err != nil {
			t.Fatal(err)
		}
		var runs []string
		for _, s := range wf.Jobs["drift"].Steps {
			runs = append(runs, s.Run)
		}
		all := strings.Join(runs, "\n")
		for _, want := range []string{`paddock drift --all --format markdown >> "$GITHUB_STEP_SUMMARY"`, "make -C .paddock-src tools build", `select(.Path == "` + PaddockModule + `")`} {
			if !strings.Contains(all, want) {
				t.Errorf("no step runs %q", want)
			}
		}
		if !regexp.MustCompile(`(?m)^  schedule:\n    - cron: "[0-9*/ ,-]+"`).Match(raw) {
			t.Error("the workflow has no schedule")
		}
	})

	t.Run("the README starts the stack", func(t *testing.T) {
		b := string(read(t, dir, "README.md"))
		for _, want := range []string{"# acme-agents", "go mod tidy", "paddock local up", "paddock up --stack dev", "paddock drift --stack dev"} {
			if !strings.Contains(b, want) {
				t.Errorf("README.md lacks %q", want)
			}
		}
		if strings.Contains(b, "dropreplace") {
			t.Error("README.md talks of a replace directive go.mod does not have")
		}
	})
}

// zeroSources clears every source range in v, which differs between two
// files declaring the same thing.
func zeroSources(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			zeroSources(v.Elem())
		}
	case reflect.Map:
		if v.Type() == reflect.TypeOf(model.Attrs{}) && v.CanSet() {
			v.Set(reflect.Zero(v.Type()))
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			zeroSources(v.Index(i))
		}
	case reflect.Struct:
		switch v.Type() {
		case reflect.TypeOf(model.Range{}), reflect.TypeOf(model.Attrs{}):
			if v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				zeroSources(v.Field(i))
			}
		}
	}
}

func TestOptions(t *testing.T) {
	dir, _ := writeRepo(t, Options{Name: "lab", Stack: "staging", Module: "github.com/acme/lab-platform", PaddockVersion: "v0.3.0"})
	if _, err := os.Stat(filepath.Join(dir, "stacks", "Pulumi.staging.yaml")); err != nil {
		t.Fatal(err)
	}
	if c := stackConfig(t, dir, "staging"); c.Vars["platform_name"] != "lab" {
		t.Errorf("stack staging sets platform_name %q", c.Vars["platform_name"])
	}
	f, err := modfile.Parse("go.mod", read(t, dir, "go.mod"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Module.Mod.Path != "github.com/acme/lab-platform" || f.Require[0].Mod.Version != "v0.3.0" {
		t.Errorf("go.mod: module %s, requires %v", f.Module.Mod.Path, f.Require[0].Mod)
	}
	for _, rel := range []string{"README.md", "Pulumi.yaml", ".github/workflows/paddock-drift.yml"} {
		if b := read(t, dir, rel); bytes.Contains(b, []byte("--stack dev")) {
			t.Errorf("%s names stack dev, not staging", rel)
		}
	}
}

func TestReplace(t *testing.T) {
	for _, version := range []string{"", testVersion} {
		dir, _ := writeRepo(t, Options{Name: "acme-agents", PaddockVersion: version, Replace: "/src/paddock checkout"})
		f, err := modfile.Parse("go.mod", read(t, dir, "go.mod"), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := version
		if want == "" {
			want = replacedVersion
		}
		if f.Require[0].Mod.Path != PaddockModule || f.Require[0].Mod.Version != want {
			t.Errorf("version %q: requires %v, want %s", version, f.Require[0].Mod, want)
		}
		if len(f.Replace) != 1 || f.Replace[0].Old.Path != PaddockModule || f.Replace[0].New.Path != "/src/paddock checkout" || f.Replace[0].New.Version != "" {
			t.Errorf("version %q: replaces %+v", version, f.Replace)
		}
		if !bytes.Contains(read(t, dir, "README.md"), []byte("go mod edit -dropreplace "+PaddockModule)) {
			t.Errorf("version %q: the README does not say how to drop the replace directive", version)
		}
	}
}

func TestRenderRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Name: "Acme", PaddockVersion: testVersion}, "not a DNS-1123 label"},
		{Options{Name: "acme", Stack: "dev/x", PaddockVersion: testVersion}, `stack name "dev/x"`},
		{Options{Name: "acme", Module: "not a path", PaddockVersion: testVersion}, `module path "not a path"`},
		{Options{Name: "acme", PaddockVersion: "v2.0.0"}, `paddock version "v2.0.0"`},
		{Options{Name: "acme", PaddockVersion: "v1.0"}, `paddock version "v1.0"`},
		{Options{Name: "acme"}, "no Paddock version"},
		{Options{Name: "acme", Replace: "relative/path"}, "not absolute"},
	} {
		if _, err := Render(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.o, err, tc.want)
		}
	}
}

// Paddock's program needs the Go Paddock's go.mod asks for.
func TestGoVersionIsPaddocks(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Go.Version != GoVersion || f.Module.Mod.Path != PaddockModule {
		t.Errorf("Paddock's go.mod: module %s, go %s; the scaffold writes go %s for %s", f.Module.Mod.Path, f.Go.Version, GoVersion, PaddockModule)
	}
}

// snapshot is every path under dir with its mode and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var content []byte
		if info.Mode().IsRegular() {
			if content, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		out[p] = info.Mode().String() + " " + string(content)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteRefusesToOverwrite(t *testing.T) {
	files, err := Render(Options{Name: "acme-agents", PaddockVersion: testVersion})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		existing map[string]string // path -> content; "" content with a trailing / is a directory
		want     []string
	}{
		{"two files of the repository", map[string]string{"README.md": "ours\n", "go.mod": "module ours\n", "notes.txt": "kept\n", "stacks/": ""}, []string{"go.mod", "README.md"}},
		{"a file where a directory goes", map[string]string{"stacks": "a file\n"}, []string{"stacks"}},
		{"a file deep inside", map[string]string{".github/workflows/paddock-drift.yml": "on: push\n"}, []string{".github/workflows/paddock-drift.yml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, content := range tc.existing {
				full := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(p, "/")))
				if strings.HasSuffix(p, "/") {
					if err := os.MkdirAll(full, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)
			err := Write(dir, files)
			var exists *ExistsError
			if !errors.As(err, &exists) || !reflect.DeepEqual(exists.Paths, tc.want) {
				t.Fatalf("Write: %v, want the existing %v named", err, tc.want)
			}
			for _, p := range tc.want {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("the error does not name %s: %v", p, err)
				}
			}
			if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
				t.Errorf("the directory changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// A write that fails midway leaves nothing of itself behind.
func TestWriteUndoesAFailedWrite(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "new", "repo")
	// The second file needs "a" to be a directory: the first made it a file.
	err := Write(dir, []File{{Path: "a", Data: []byte("x")}, {Path: "a/b", Data: []byte("y")}})
	if err == nil {
		t.Fatal("Write succeeded")
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 0 {
		t.Errorf("left behind after a failed write: %v", entries)
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "acme", "acme-agents", "team-1", "0lab", strings.Repeat("a", maxNameLength)} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Acme", "acme_agents", "-acme", "acme-", "acme.agents", "ac me", "ä", strings.Repeat("a", maxNameLength+1)} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPaddockVersion(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// The same instant seen from elsewhere: the version is in UTC.
	east := when.In(time.FixedZone("UTC+9", 9*3600))
	pseudo := regexp.MustCompile(`^v0\.0\.0-[0-9]{14}-[0-9a-f]{12}$`)
	for _, tc := range []struct {
		commit string
		when   time.Time
		want   string
	}{
		{"0123456789ab", when, "v0.0.0-20260102030405-0123456789ab"},
		{"0123456789ab", east, "v0.0.0-20260102030405-0123456789ab"},
		{"0123456789abcdef0123456789abcdef01234567", when, "v0.0.0-20260102030405-0123456789ab"},
		{"v0.3.0-5-g0123456789ab", when, "v0.0.0-20260102030405-0123456789ab"},
		{"v0.3.0", time.Time{}, "v0.3.0"},
	} {
		got, err := PaddockVersion(tc.commit, tc.when)
		if err != nil || got != tc.want {
			t.Errorf("PaddockVersion(%q, %v) = %q, %v; want %q", tc.commit, tc.when, got, err, tc.want)
			continue
		}
		if strings.HasPrefix(got, "v0.0.0-") && (!pseudo.MatchString(got) || !module.IsPseudoVersion(got)) {
			t.Errorf("%q is not a pseudo-version", got)
		}
	}
	for _, tc := range []struct {
		commit  string
		when    time.Time
		want    string
		unknown bool
	}{
		{"", when, "does not know the commit", true},
		{"0123456789ab", time.Time{}, "knows commit 0123456789ab, not its time", true},
		{"0123456789ab-dirty", when, "uncommitted changes", false},
		{"v0.3.0-dirty", when, "uncommitted changes", false},
		{"v2.0.0", when, "not a version of", false},
		{"release-1", when, "names no revision", false},
		{"0123456", when, "names no revision", false},
	} {
		_, err := PaddockVersion(tc.commit, tc.when)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrUnknownBuild) != tc.unknown {
			t.Errorf("PaddockVersion(%q): %v; want an error containing %q (unknown build: %v)", tc.commit, err, tc.want, tc.unknown)
		}
	}
	if _, err := PseudoVersion(when, "0123456789AB"); err == nil {
		t.Error("PseudoVersion accepted upper-case hex")
	}
}
