// Package tools holds one module per pinned upstream (tools/NAME/go.mod) and the
// script that builds them; this test holds the script to its promises.
package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixture writes a tool module named name with the given recipe body under a fresh
// tools directory and returns that directory.
func fixture(t *testing.T, name, gomod, gosum, recipe string) string {
	t.Helper()
	dir := t.TempDir()
	tool := filepath.Join(dir, name)
	if err := os.MkdirAll(tool, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, body := range map[string]string{"go.mod": gomod, "go.sum": gosum, "build.sh": "# pin: ETCD_VERSION\n" + recipe} {
		if err := os.WriteFile(filepath.Join(tool, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type buildResult struct {
	err    error
	output string
	home   string
}

func runBuild(t *testing.T, src, name string) buildResult {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("bash", "build-tool.sh", name, "1/1")
	cmd.Env = append(os.Environ(), "PADDOCK_HOME="+home, "PADDOCK_TOOLS_SRC="+src, "PADDOCK_TOOLS_HEARTBEAT=1")
	out, err := cmd.CombinedOutput()
	log, _ := os.ReadFile(filepath.Join(home, "logs", "build-"+name+".log"))
	return buildResult{err: err, output: string(out) + "\n--- log ---\n" + string(log), home: home}
}

// leftovers lists what a build left in the tools cache besides finished builds.
func leftovers(t *testing.T, home string) []string {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(home, "tools"))
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

const writeBinary = `printf '#!/bin/sh\n' > "$OUT/tool"; chmod +x "$OUT/tool"` + "\n"

// A failed step in the middle of a recipe fails the build, even when the last step
// succeeds: the recipe runs with errexit on, never as the condition of an `if`.
func TestFailedStepFailsTheBuild(t *testing.T) {
	src := fixture(t, "masked", "module example.com/masked\n\ngo 1.22\n", "", "echo 'step: one'\nfalse\necho 'step: two'\n"+writeBinary)
	r := runBuild(t, src, "masked")
	if r.err == nil {
		t.Fatalf("build passed although a step failed:\n%s", r.output)
	}
	if !strings.Contains(r.output, "building masked") || !strings.Contains(r.output, "FAILED") || strings.Contains(r.output, "step: two") {
		t.Errorf("want a FAILED line naming the tool, and nothing run after the failed step:\n%s", r.output)
	}
	if l := leftovers(t, r.home); len(l) != 0 {
		t.Errorf("a failed build left %v in the tools cache", l)
	}
}

// A recipe that exits 0 without producing a binary is a failure too.
func TestRecipeWithoutBinaryFails(t *testing.T) {
	src := fixture(t, "empty", "module example.com/empty\n\ngo 1.22\n", "", "true\n")
	if r := runBuild(t, src, "empty"); r.err == nil || !strings.Contains(r.output, "left no executable") {
		t.Fatalf("want a failure naming the missing binary, got err=%v:\n%s", r.err, r.output)
	}
}

// The guard against recipes that only work with a warm module cache: every build
// has a private, empty module cache, so reading a module's directory before
// downloading it fails on every machine, and downloading it first works.
func TestRecipesSeeAnEmptyModuleCache(t *testing.T) {
	gomod := "module example.com/reader\n\ngo 1.22\n\nrequire golang.org/x/mod v0.43.0\n"
	gosum := "golang.org/x/mod v0.43.0 h1:MFuq5J6s35W9D3IjkwyWc9vHh0nENOrt5K8Iof4ofmg=\n" +
		"golang.org/x/mod v0.43.0/go.mod h1:4ec1JnuyBz5+FIVhg86UsA39YG8BpnrZdJYSNHmGzHY=\n"
	read := `dir=$(go list -m -f '{{.Dir}}' golang.org/x/mod)` + "\n" + `install -m 0755 "$dir/LICENSE" "$OUT/tool"` + "\n"

	cold := runBuild(t, fixture(t, "reader", gomod, gosum, read), "reader")
	t.Logf("cold build, as expected to fail:\n%s", cold.output)
	if cold.err == nil {
		t.Fatalf("a recipe that reads an undownloaded module passed; the module cache is not private:\n%s", cold.output)
	}
	warm := runBuild(t, fixture(t, "reader", gomod, gosum, "go mod download golang.org/x/mod\n"+read), "reader")
	if warm.err != nil {
		t.Fatalf("the same recipe with its download step failed:\n%s", warm.output)
	}
	for _, name := range leftovers(t, warm.home) {
		if strings.HasPrefix(name, ".gomodcache") || strings.HasSuffix(name, ".partial") {
			t.Errorf("the build left %s behind", name)
		}
	}
}

// Every tool module has a recipe that names a pin versions.env sets.
func TestEveryToolHasARecipe(t *testing.T) {
	env, err := os.ReadFile("../internal/pins/versions.env")
	if err != nil {
		t.Fatal(err)
	}
	mods, _ := filepath.Glob("*/go.mod")
	for _, m := range mods {
		dir := filepath.Dir(m)
		recipe, err := os.ReadFile(filepath.Join(dir, "build.sh"))
		if err != nil {
			t.Errorf("tools/%s has no build.sh", dir)
			continue
		}
		first := strings.SplitN(string(recipe), "\n", 2)[0]
		key, ok := strings.CutPrefix(first, "# pin: ")
		if !ok || !strings.Contains(string(env), "\n"+key+"=") {
			t.Errorf("tools/%s/build.sh starts %q; want '# pin: KEY' with KEY set in internal/pins/versions.env", dir, first)
		}
	}
}

// runBuildAll runs build-tools.sh over tools under src with jobs builds at a time.
func runBuildAll(t *testing.T, src, jobs string, names ...string) buildResult {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("bash", append([]string{"build-tools.sh"}, names...)...)
	cmd.Env = append(os.Environ(), "PADDOCK_HOME="+home, "PADDOCK_TOOLS_SRC="+src, "PADDOCK_TOOLS_JOBS="+jobs, "PADDOCK_TOOLS_MIRROR=", "PADDOCK_TOOLS_HEARTBEAT=1")
	out, err := cmd.CombinedOutput()
	return buildResult{err: err, output: string(out), home: home}
}

// build-tools.sh runs two builds at once: each of two tools waits until the other has
// started, which only finishes when both run together.
func TestBuildToolsRunsTwoAtOnce(t *testing.T) {
	src := t.TempDir()
	rendezvous := t.TempDir()
	for _, n := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[n]
		recipe := "touch " + filepath.Join(rendezvous, n) + "\n" +
			"for i in $(seq 100); do [ -e " + filepath.Join(rendezvous, other) + " ] && break; sleep 0.1; done\n" +
			"[ -e " + filepath.Join(rendezvous, other) + " ]\n" + writeBinary
		one := fixture(t, n, "module example.com/"+n+"\n\ngo 1.26\n", "", recipe)
		if err := os.Rename(filepath.Join(one, n), filepath.Join(src, n)); err != nil {
			t.Fatal(err)
		}
	}
	r := runBuildAll(t, src, "2", "a", "b")
	if r.err != nil {
		t.Fatalf("two tools that need each other running: %v\n%s", r.err, r.output)
	}
	for _, n := range []string{"a", "b"} {
		if !strings.Contains(r.output, "built "+n+" ") {
			t.Errorf("no 'built %s' line:\n%s", n, r.output)
		}
	}
}

// A failed build makes the whole run fail, and no tool after it starts.
func TestBuildToolsStopsAfterAFailure(t *testing.T) {
	src := t.TempDir()
	for n, recipe := range map[string]string{"bad": "exit 7\n", "later": writeBinary} {
		one := fixture(t, n, "module example.com/"+n+"\n\ngo 1.26\n", "", recipe)
		if err := os.Rename(filepath.Join(one, n), filepath.Join(src, n)); err != nil {
			t.Fatal(err)
		}
	}
	r := runBuildAll(t, src, "1", "bad", "later")
	if r.err == nil {
		t.Fatalf("a failed build passed:\n%s", r.output)
	}
	if strings.Contains(r.output, "building later") {
		t.Errorf("a build started after one failed:\n%s", r.output)
	}
	if !strings.Contains(r.output, "building bad") || !strings.Contains(r.output, "FAILED") {
		t.Errorf("the failure is not named:\n%s", r.output)
	}
}
