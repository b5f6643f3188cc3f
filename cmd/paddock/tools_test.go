package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/tools"
)

// `make tools` reads `tools fetch`'s exit code: 0 fetched, 3 build it, anything
// else stops. This holds the command to it, around a bundle written by
// `tools bundle` from a home with a fake etcd build.
func TestToolsBundleAndFetchExitCodes(t *testing.T) {
	t.Setenv("PADDOCK_TOOLS_MIRROR", "")
	t.Setenv("PADDOCK_TOOLS_SRC", "")
	src, err := tools.FindSource(".")
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := src.Tool("etcd")
	if err != nil {
		t.Fatal(err)
	}
	builder := t.TempDir()
	dir := filepath.Join(builder, "tools", etcd.Key())
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "etcd"), []byte("#!/bin/sh\necho fake etcd\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	mirror := t.TempDir()
	t.Setenv("PADDOCK_HOME", builder)
	out, code := runCommand(t, newToolsCmd(), "", "bundle", "--out", mirror)
	if code != 0 || !strings.Contains(out, "bundled etcd "+etcd.Version) || !strings.Contains(out, "kubernetes ") || !strings.Contains(out, "not built here") {
		t.Fatalf("bundle: exit %d\n%s\nwant etcd bundled and the unbuilt tools skipped", code, out)
	}
	if out, code := runCommand(t, newToolsCmd(), "", "bundle", "--out", mirror, "--tool", "kubernetes"); code != 1 || !strings.Contains(out, "not built here") {
		t.Errorf("bundle of a named unbuilt tool: exit %d\n%s", code, out)
	}
	if out, code := runCommand(t, newToolsCmd(), "", "bundle", "--out", mirror); code != 0 || !strings.Contains(out, "already bundled etcd") {
		t.Errorf("bundling again: exit %d\n%s", code, out)
	}

	home := t.TempDir()
	t.Setenv("PADDOCK_HOME", home)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fetch", "etcd", "2/10"}, exitBuildFromSource, ""}, // no mirror set
		{[]string{"fetch", "etcd", "2/10", "--mirror", t.TempDir()}, exitBuildFromSource, "tools: [2/10] etcd " + etcd.Version + ": no bundle for key"},
		{[]string{"fetch", "etcd", "--mirror", "s3://bucket"}, 1, "HTTPS endpoint"},
		{[]string{"fetch", "no-such-tool", "--mirror", mirror}, 1, "no recipe"},
		{[]string{"fetch", "etcd", "2/10", "--mirror", "file://" + mirror}, 0, "tools: [2/10] etcd " + etcd.Version + " fetched from mirror (1 file,"},
		{[]string{"fetch", "etcd", "2/10", "--mirror", mirror}, exitBuildFromSource, ""}, // now cached: build-tool.sh says so
	} {
		out, code := runCommand(t, newToolsCmd(), "", c.args...)
		if code != c.code || (c.want == "" && out != "") || !strings.Contains(out, c.want) {
			t.Errorf("tools %s: exit %d, %q; want exit %d and %q", strings.Join(c.args, " "), code, out, c.code, c.want)
		}
	}
	if target, err := os.Readlink(filepath.Join(home, "bin", "etcd")); err != nil || target != filepath.Join(home, "tools", etcd.Key(), "bin", "etcd") {
		t.Errorf("bin/etcd -> %q, %v", target, err)
	}
}
