package main

import (
	"strings"

	"github.com/paddock-platform/paddock/internal/policy"
)

// policyReport is how a command shows the spec's policy report. The commands
// where a decision is made from it (validate, preview, up) show it whole,
// every finding and waiver. The others (status, drift, verify, render,
// destroy, ...) show one line with the counts and the command that shows the
// rest, so a session does not repeat the same report before every command's
// own output. Errors block every command, and are always shown whole.
func (f *specFlags) policyReport(specDir string, fromStackFile bool) policy.TextOptions {
	if f.fullPolicyReport {
		return policy.TextOptions{}
	}
	return policy.TextOptions{Brief: true, Details: f.policyDetailsCommand(specDir, fromStackFile)}
}

// policyDetailsCommand is the command that shows the whole report for the same
// spec and variables: validate, or, when the variables come from a stack file
// (which validate does not read), preview on that stack. Variable values are
// not repeated: they may be secrets.
func (f *specFlags) policyDetailsCommand(specDir string, fromStackFile bool) string {
	if fromStackFile {
		cmd := "paddock preview --stack " + shellWord(f.stack)
		if f.projectDir != "" {
			cmd += " --project-dir " + shellWord(f.projectDir)
		}
		if f.backend != "" {
			cmd += " --backend " + shellWord(f.backend)
		}
		return cmd
	}
	cmd := "paddock validate"
	if specDir != "." {
		cmd += " " + shellWord(specDir)
	}
	for _, vf := range f.varFiles {
		cmd += " --var-file " + shellWord(vf)
	}
	for _, kv := range f.vars {
		name, _, _ := strings.Cut(kv, "=")
		cmd += " --var " + shellWord(name) + "=..."
	}
	return cmd
}

// shellWord quotes s for a POSIX shell when it holds anything but the
// characters of plain paths, names and URLs.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@+,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
