package main

import (
	"strings"
	"testing"
)

// A --backend URL with a credential in any spelling is refused before
// anything runs, naming the environment variable to use, and the secret is
// not echoed; a URL without one goes on to the command (which then fails
// for other reasons here: no such spec).
func TestBackendFlagWithPasswordRefused(t *testing.T) {
	for _, cmd := range []string{"up", "drift", "preview", "destroy", "status", "verify"} {
		for _, backend := range []string{
			"postgres://paddock:s3cr3t@127.0.0.1:5432/state",
			"postgres://127.0.0.1/state?password=s3cr3t",
			"postgres://127.0.0.1/state?p%61ssword=s3cr3t",
			"s3://bucket?secret_access_key=s3cr3t",
		} {
			_, stderr, code := runSplit(t, cmd, "testdata/does-not-exist", "--backend", backend)
			if code != 2 || !strings.Contains(stderr, "PULUMI_BACKEND_URL") || !strings.Contains(stderr, "/proc/<pid>/cmdline") {
				t.Errorf("%s --backend %s: exit %d, stderr %q; want exit 2 naming PULUMI_BACKEND_URL", cmd, backend, code, stderr)
			}
			if strings.Contains(stderr, "s3cr3t") {
				t.Errorf("%s --backend %s: the secret is echoed: %q", cmd, backend, stderr)
			}
		}
	}
	_, stderr, _ := runSplit(t, "drift", "testdata/does-not-exist", "--backend", "postgres://paddock@127.0.0.1:5432/state?sslmode=disable")
	if strings.Contains(stderr, "PULUMI_BACKEND_URL") {
		t.Errorf("a --backend without a credential was refused: %q", stderr)
	}
}
