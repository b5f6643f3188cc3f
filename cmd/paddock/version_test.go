package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// The commit make build links in is what `paddock version` reports; a
// binary without one says so and --commit fails rather than guess.
func TestVersionReportsTheBuildCommit(t *testing.T) {
	old, oldInfo := commit, readBuildInfo
	t.Cleanup(func() { commit, readBuildInfo = old, oldInfo })

	commit = "0123456789ab"
	out, code := runCommand(t, newVersionCmd(), "", "--commit")
	if code != 0 || out != "0123456789ab\n" {
		t.Errorf("version --commit: exit %d, %q", code, out)
	}
	out, code = runCommand(t, newVersionCmd(), "")
	if first := strings.SplitN(out, "\n", 2)[0]; code != 0 || strings.Join(strings.Fields(first), " ") != "paddock 0123456789ab" {
		t.Errorf("version: exit %d, first line %q", code, first)
	}
	if !strings.Contains(out, "AGENT_SANDBOX_VERSION") {
		t.Errorf("version no longer lists the pins:\n%s", out)
	}

	// A plain go build in a checkout: the revision Go stamped.
	commit = ""
	readBuildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba9876543210fedcba9876543210fedcba98"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	if out, code := runCommand(t, newVersionCmd(), "", "--commit"); code != 0 || out != "fedcba987654-dirty\n" {
		t.Errorf("version --commit from the VCS stamp: exit %d, %q", code, out)
	}

	// Neither: unknown, and --commit refuses to guess.
	readBuildInfo = func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{}, true }
	out, code = runCommand(t, newVersionCmd(), "", "--commit")
	if code == 0 || !strings.Contains(out, "make build") {
		t.Errorf("version --commit without a commit: exit %d, %q", code, out)
	}
	out, _ = runCommand(t, newVersionCmd(), "")
	if first := strings.SplitN(out, "\n", 2)[0]; strings.Join(strings.Fields(first), " ") != "paddock unknown" {
		t.Errorf("version without a commit: first line %q", first)
	}
}
