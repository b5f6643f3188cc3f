package localcluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// shimFixture writes the shim with a stand-in clang that records its
// arguments and writes "object" to its -o file (or stdout), and returns the
// shim's path and a function running it.
func shimFixture(t *testing.T, withCcache bool) (dir string, run func(args ...string) (stdout, stderr string, code int)) {
	t.Helper()
	dir = t.TempDir()
	clang := filepath.Join(dir, "real-clang")
	writeScript(t, clang, `#!/bin/bash
printf '%s\n' "$@" > "$(dirname "$0")/clang.args"
out=
prev=
for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
case " $* " in *" fail "*) echo "error: it failed" >&2; exit 3;; esac
if [ "$out" = - ] || [ -z "$out" ]; then printf object; else printf object > "$out"; fi
`)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// Only the commands the scripts use, so the machine's own ccache is not found.
	for _, c := range []string{"bash", "mkdir", "mktemp", "rm", "cat", "dirname"} {
		p, err := exec.LookPath(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, c)); err != nil {
			t.Fatal(err)
		}
	}
	if withCcache {
		// Records what it was given, then runs the compiler it was handed.
		writeScript(t, filepath.Join(bin, "ccache"), `#!/bin/bash
printf '%s\n' "CCACHE_DIR=$CCACHE_DIR" "$@" > "$(dirname "$0")/../ccache.args"
exec "$@"
`)
	}
	shim := filepath.Join(dir, "clang")
	writeScript(t, shim, clangShim(clang, filepath.Join(dir, "cache")))
	return dir, func(args ...string) (string, string, int) {
		cmd := exec.Command(shim, args...)
		cmd.Dir = dir // where an -o file lands
		cmd.Env = []string{"PATH=" + bin, "TMPDIR=" + dir}
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return so.String(), se.String(), code
	}
}

func writeScript(t *testing.T, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func readLines(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestClangShimCompilesToStdoutThroughCcache(t *testing.T) {
	dir, run := shimFixture(t, true)
	stdout, stderr, code := run("-O2", "--target=bpf", "-I/x y", "-c", "bpf_lxc.c", "-o", "-")
	if code != 0 || stdout != "object" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and the object on stdout", code, stdout, stderr)
	}
	got := readLines(t, filepath.Join(dir, "ccache.args"))
	if got[0] != "CCACHE_DIR="+filepath.Join(dir, "cache") {
		t.Errorf("ccache ran with %s, want the cache dir", got[0])
	}
	args := got[1:]
	if args[0] != filepath.Join(dir, "real-clang") {
		t.Errorf("ccache was handed %q, want the real clang", args[0])
	}
	out := args[len(args)-1]
	if args[len(args)-2] != "-o" || out == "-" || !strings.HasPrefix(out, dir) {
		t.Errorf("the object went to %q, want a file of the shim's", out)
	}
	if want := []string{"-O2", "--target=bpf", "-I/x y", "-c", "bpf_lxc.c", "-o"}; strings.Join(args[1:len(args)-1], "|") != strings.Join(want, "|") {
		t.Errorf("the other arguments became %q, want them as given: %q", args[1:len(args)-1], want)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the shim left its object file %s behind (%v)", out, err)
	}
}

func TestClangShimKeepsFailures(t *testing.T) {
	_, run := shimFixture(t, true)
	stdout, stderr, code := run("-c", "fail", "-o", "-")
	if code != 3 || stdout != "" || !strings.Contains(stderr, "error: it failed") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want clang's exit 3, its message and no object", code, stdout, stderr)
	}
}

func TestClangShimIsPlainClangOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ccache bool
		args   []string
	}{
		{"no ccache", false, []string{"-c", "a.c", "-o", "-"}},
		{"not to stdout", true, []string{"-c", "a.c", "-o", "a.o"}},
		{"version", true, []string{"--version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, run := shimFixture(t, tc.ccache)
			if _, stderr, code := run(tc.args...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got := readLines(t, filepath.Join(dir, "clang.args")); strings.Join(got, "|") != strings.Join(tc.args, "|") {
				t.Errorf("clang was given %q, want %q", got, tc.args)
			}
			if _, err := os.Stat(filepath.Join(dir, "ccache.args")); err == nil {
				t.Error("ccache ran")
			}
		})
	}
}

// With Debian's clang-19 and ccache (the node packages), a second compile of
// the same BPF source is a cache hit with the same object.
func TestClangShimCachesARealBPFCompile(t *testing.T) {
	ccache, err := exec.LookPath("ccache")
	if err != nil {
		t.Skip("ccache is not installed (make node-packages installs it)")
	}
	if _, err := os.Stat(ciliumClang); err != nil {
		t.Skip("clang-19 is not installed (make node-packages installs it)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(src, []byte("int counter;\nint prog(void) { return counter + 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	shim := filepath.Join(dir, "clang")
	writeScript(t, shim, clangShim(ciliumClang, cache))
	compile := func() []byte {
		cmd := exec.Command(shim, "-O2", "--target=bpf", "-g", "-c", src, "-o", "-")
		cmd.Env = []string{"PATH=" + filepath.Dir(ccache) + ":/usr/bin:/bin", "TMPDIR=" + dir}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		return out
	}
	first, second := compile(), compile()
	if !strings.HasPrefix(string(first), "\x7fELF") || string(first) != string(second) {
		t.Fatalf("objects: %d and %d bytes, want the same ELF object twice", len(first), len(second))
	}
	cmd := exec.Command(ccache, "--print-stats")
	cmd.Env = append(os.Environ(), "CCACHE_DIR="+cache)
	stats, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	hits := ""
	for _, l := range strings.Split(string(stats), "\n") {
		if strings.HasPrefix(l, "direct_cache_hit\t") || strings.HasPrefix(l, "preprocessed_cache_hit\t") {
			hits += l + " "
		}
	}
	if !strings.Contains(hits, "hit\t1") {
		t.Fatalf("the second compile was not a cache hit: %s", hits)
	}
}

func TestCiliumRouterIP(t *testing.T) {
	for cidr, want := range map[string]string{
		"10.214.7.0/24": "10.214.7.1",
		"10.214.7.9/24": "10.214.7.1", // a host address of the range is read as the range
		"":              "",
		"fd00::/64":     "",
		"nonsense":      "",
	} {
		if got := ciliumRouterIP(nodeNet{PodCIDR: cidr}); got != want {
			t.Errorf("ciliumRouterIP(%q) = %q, want %q", cidr, got, want)
		}
	}
}

func TestSeedCiliumNodeWaitsForTheCRD(t *testing.T) {
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{ciliumNodes: "CiliumNodeList"})
	served := 3
	dc.PrependReactor("create", "ciliumnodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if served > 0 {
			served--
			return true, nil, apierrors.NewNotFound(ciliumNodes.GroupResource(), "")
		}
		return false, nil, nil
	})
	if err := seedCiliumNode(context.Background(), dc, "node-0", "10.214.7.1", time.Minute); err != nil {
		t.Fatal(err)
	}
	u, err := dc.Resource(ciliumNodes).Get(context.Background(), "node-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addrs, _, _ := unstructured.NestedSlice(u.Object, "spec", "addresses")
	if len(addrs) != 1 || addrs[0].(map[string]any)["type"] != "CiliumInternalIP" || addrs[0].(map[string]any)["ip"] != "10.214.7.1" {
		t.Fatalf("spec.addresses = %v, want the router address as CiliumInternalIP", addrs)
	}
	// An existing one (a restarted agent's) is left as it is.
	if err := seedCiliumNode(context.Background(), dc, "node-0", "10.214.7.99", time.Minute); err != nil {
		t.Fatalf("seeding again: %v", err)
	}
	u, _ = dc.Resource(ciliumNodes).Get(context.Background(), "node-0", metav1.GetOptions{})
	if addrs, _, _ := unstructured.NestedSlice(u.Object, "spec", "addresses"); addrs[0].(map[string]any)["ip"] != "10.214.7.1" {
		t.Fatalf("an existing CiliumNode was changed: %v", addrs)
	}
}

func TestSeedCiliumNodeGivesUpNamingTheCause(t *testing.T) {
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{ciliumNodes: "CiliumNodeList"})
	dc.PrependReactor("create", "ciliumnodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(ciliumNodes.GroupResource(), "node-0", errors.New("no"))
	})
	err := seedCiliumNode(context.Background(), dc, "node-0", "10.214.7.1", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "router address 10.214.7.1") || !apierrors.IsForbidden(errors.Unwrap(err)) {
		t.Fatalf("err = %v, want the forbidden create named at once", err)
	}
}

func TestRemoveStaleAgentPidfile(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		content  string
		agentBin string
		wantErr  bool
	}{
		{"dead pid", strconv.Itoa(dead.Process.Pid), self, false},
		{"another program's pid", strconv.Itoa(os.Getpid()), "/usr/bin/cilium-agent-elsewhere", false},
		{"garbage", "not a pid", self, false},
		{"the agent runs", strconv.Itoa(os.Getpid()), self, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "cilium.pid")
			if err := os.WriteFile(p, []byte(tc.content+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := removeStaleAgentPidfile(p, tc.agentBin)
			_, statErr := os.Stat(p)
			if tc.wantErr {
				if err == nil || statErr != nil {
					t.Fatalf("err %v, file kept: %v; want an error and the file kept", err, statErr == nil)
				}
				return
			}
			if err != nil || !errors.Is(statErr, os.ErrNotExist) {
				t.Fatalf("err %v, stat %v; want the stale pidfile removed", err, statErr)
			}
		})
	}
	if err := removeStaleAgentPidfile(filepath.Join(t.TempDir(), "none"), self); err != nil {
		t.Fatalf("no pidfile: %v", err)
	}
}
