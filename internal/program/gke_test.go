package program_test

// Mock tests of the whole program of target "gke", per example spec: each
// spec is loaded and gated through the real loader and policy
// (specload.Load), then program.New runs under pulumi.WithMocks, which
// records every registration and returns the inputs as state (plus the few
// outputs GCP computes: the cluster's endpoint and CA, service account
// emails, sink writer identities). They prove what Paddock asks GCP and the
// new cluster for, end to end from HCL; not what GCP does with it (that is
// components/gcp/e2e_gke_test.go, build tag gke, against a real project).

import (
	"bytes"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/pulumitest"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/program"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/internal/targets"
)

var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// runExample loads dir through the real loader and policy gate, and runs the
// program under mocks.
func runExample(t *testing.T, dir string) (*model.Platform, *pulumitest.Mocks) {
	t.Helper()
	var report bytes.Buffer
	p, err := specload.Load(dir, specload.Options{Now: testNow}, &report)
	if err != nil {
		t.Fatalf("%s: %v\n%s", dir, err, report.String())
	}
	if err := targets.Resolve(t.Context(), p); err != nil {
		t.Fatalf("resolve target: %v", err)
	}
	m := &pulumitest.Mocks{Outputs: pulumitest.GCPOutputs}
	if err := pulumi.RunErr(program.New(p), pulumi.WithMocks("paddock", "test", m)); err != nil {
		t.Fatalf("program: %v", err)
	}
	return p, m
}
