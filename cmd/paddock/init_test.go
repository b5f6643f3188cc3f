package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/paddock-platform/paddock/internal/scaffold"
)

// withBuild sets what the binary knows of its own build for one test.
func withBuild(t *testing.T, c, ct string) {
	t.Helper()
	oldC, oldT, oldInfo := commit, commitTime, readBuildInfo
	t.Cleanup(func() { commit, commitTime, readBuildInfo = oldC, oldT, oldInfo })
	commit, commitTime = c, ct
	readBuildInfo = func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{}, true }
}

func requires(t *testing.T, dir string) (map[string]string, []*modfile.Replace) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	return out, f.Replace
}

func TestInitRequiresItsOwnVersion(t *testing.T) {
	// 1767323045 is 2026-01-02 03:04:05 UTC.
	withBuild(t, "0123456789ab", "1767323045")
	dir := filepath.Join(t.TempDir(), "acme-agents")
	out, code := runCommand(t, newInitCmd(), "", dir)
	if code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	req, repl := requires(t, dir)
	if req[scaffold.PaddockModule] != "v0.0.0-20260102030405-0123456789ab" || len(repl) != 0 {
		t.Errorf("go.mod requires %v, replaces %v", req, repl)
	}
	// The name comes from the directory.
	if b, _ := os.ReadFile(filepath.Join(dir, "Pulumi.yaml")); !strings.Contains(string(b), "\nname: acme-agents\n") {
		t.Errorf("Pulumi.yaml:\n%s", b)
	}
	for _, want := range []string{"Pulumi.yaml\n", "  stacks/Pulumi.dev.yaml\n", "  .github/workflows/paddock-drift.yml\n", "  cd " + dir + "\n", "  go mod tidy\n", "  paddock up --stack dev\n", "  paddock drift --stack dev\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("init's output lacks %q:\n%s", want, out)
		}
	}

	// Again: everything is there, so it names every file and writes nothing.
	before, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	out, code = runCommand(t, newInitCmd(), "", dir, "--name", "other")
	if code == 0 || !strings.Contains(out, "nothing was written") {
		t.Fatalf("init over an existing repository: exit %d\n%s", code, out)
	}
	for _, f := range []string{"Pulumi.yaml", "main.go", "go.mod", "stacks/Pulumi.dev.yaml", "spec/platform.hcl", ".github/workflows/paddock-drift.yml", "README.md"} {
		if !strings.Contains(out, f) {
			t.Errorf("the refusal does not name %s:\n%s", f, out)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(after) != string(before) {
		t.Error("README.md changed")
	}
}

func TestInitWithoutAKnownVersion(t *testing.T) {
	for _, build := range [][2]string{{"", ""}, {"0123456789ab", ""}, {"0123456789ab-dirty", "1767323045"}} {
		withBuild(t, build[0], build[1])
		dir := filepath.Join(t.TempDir(), "acme")
		out, code := runCommand(t, newInitCmd(), "", dir)
		if code == 0 || !strings.Contains(out, "--paddock-version") || !strings.Contains(out, "--replace PATH") {
			t.Errorf("build %q: exit %d\n%s", build, code, out)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("build %q: the refused init made %s", build, dir)
		}
	}

	withBuild(t, "", "")
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// A version given by hand.
	dir := filepath.Join(t.TempDir(), "given")
	if out, code := runCommand(t, newInitCmd(), "", dir, "--paddock-version", "v0.4.0", "--stack", "prod", "--module", "github.com/acme/given"); code != 0 {
		t.Fatalf("init --paddock-version: exit %d\n%s", code, out)
	}
	if req, _ := requires(t, dir); req[scaffold.PaddockModule] != "v0.4.0" {
		t.Errorf("go.mod requires %v", req)
	}
	if _, err := os.Stat(filepath.Join(dir, "stacks", "Pulumi.prod.yaml")); err != nil {
		t.Error(err)
	}
	// A local checkout (relative paths become absolute).
	dir = filepath.Join(t.TempDir(), "replaced")
	if out, code := runCommand(t, newInitCmd(), "", dir, "--replace", filepath.Join("..", "..")); code != 0 {
		t.Fatalf("init --replace: exit %d\n%s", code, out)
	}
	if _, repl := requires(t, dir); len(repl) != 1 || repl[0].New.Path != repo {
		t.Errorf("go.mod replaces %+v, want %s", repl, repo)
	}
	// Not a checkout of Paddock.
	out, code := runCommand(t, newInitCmd(), "", filepath.Join(t.TempDir(), "x"), "--replace", filepath.Join(repo, "tools", "pulumi"))
	if code == 0 || !strings.Contains(out, "not github.com/paddock-platform/paddock") {
		t.Errorf("init --replace tools/pulumi: exit %d\n%s", code, out)
	}
}

func TestInitName(t *testing.T) {
	withBuild(t, "", "")
	parent := t.TempDir()
	out, code := runCommand(t, newInitCmd(), "", filepath.Join(parent, "My_Platform"), "--paddock-version", "v0.4.0")
	if code == 0 || !strings.Contains(out, `"My_Platform"`) || !strings.Contains(out, "--name") {
		t.Errorf("a directory name that is no DNS label: exit %d\n%s", code, out)
	}
	out, code = runCommand(t, newInitCmd(), "", filepath.Join(parent, "x"), "--paddock-version", "v0.4.0", "--name", "Bad.Name")
	if code == 0 || !strings.Contains(out, "DNS-1123") {
		t.Errorf("--name Bad.Name: exit %d\n%s", code, out)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("refused inits left %v", entries)
	}
	dir := filepath.Join(parent, "My_Platform")
	if out, code := runCommand(t, newInitCmd(), "", dir, "--paddock-version", "v0.4.0", "--name", "my-platform"); code != 0 {
		t.Fatalf("--name my-platform: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "stacks", "Pulumi.dev.yaml")); !strings.Contains(string(b), "platform_name: my-platform") {
		t.Errorf("the stack file:\n%s", b)
	}
}
