package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

func TestSummaryNamesWhatWasMadeAndHowToLook(t *testing.T) {
	p := &model.Platform{
		Name:         "demo",
		Target:       model.Target{Kind: model.TargetKubeconfig, Kubeconfig: "/k/config"},
		AgentSandbox: model.AgentSandboxRelease{Version: "v0.5.6"},
		Tenants: []model.Tenant{{
			Name: "team-a", Namespace: "agents-team-a",
			Templates: []model.Template{{Name: "python", Image: "python:3.12-slim", RuntimeClass: "gvisor"}},
			WarmPools: []model.WarmPool{{Name: "python", Template: "python", Replicas: 2}},
		}},
	}
	var out bytes.Buffer
	printSummary(&out, p, "examples/kubeconfig", &sandboxPod{Namespace: "agents-team-a", Name: "python-x7k2p", Container: "agent"})
	got := out.String()
	for _, want := range []string{
		`platform "demo" on target kubeconfig: Agent Sandbox v0.5.6, 1 tenant(s)`,
		"namespace agents-team-a (Pod Security restricted",
		"image python:3.12-slim, runtime class gvisor",
		"2 x python",
		"export KUBECONFIG=/k/config",
		"kubectl get sandboxtemplates,sandboxwarmpools,sandboxes,pods -n agents-team-a",
		"paddock verify examples/kubeconfig",
		"kubectl exec -it -n agents-team-a python-x7k2p -c agent -- sh",
		"paddock destroy examples/kubeconfig",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "local down") {
		t.Errorf("a kubeconfig target's summary must not suggest stopping the local cluster:\n%s", got)
	}
}
