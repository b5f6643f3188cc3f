package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/specload"
)

// keptKataCluster is the state `up` of examples/gke-kata leaves for its
// cluster (the inputs of internal/program/testdata/gke-kata.golden), except that FQDN
// network policy was on.
const keptKataCluster = `{"resources": [{
  "urn": "urn:pulumi:agents-kata::paddock::paddock:gcp:Platform$paddock:gcp:Cluster$gcp:container/cluster:Cluster::agents-kata",
  "custom": true, "type": "gcp:container/cluster:Cluster",
  "inputs": {
    "name": "agents-kata", "project": "paddock-example-kata", "location": "europe-west4-a",
    "description": "Agent sandbox platform agents-kata, managed by Paddock",
    "networkingMode": "VPC_NATIVE", "datapathProvider": "ADVANCED_DATAPATH", "ipAllocationPolicy": {},
    "privateClusterConfig": {"enablePrivateNodes": true, "enablePrivateEndpoint": false, "masterIpv4CidrBlock": "172.16.0.0/28"},
    "masterAuth": {"clientCertificateConfig": {"issueClientCertificate": false}},
    "enableFqdnNetworkPolicy": true,
    "__defaults": []
  }
}]}`

func TestGuardReplacementsBeforeTheEngineRuns(t *testing.T) {
	var report bytes.Buffer
	p, err := specload.Load("../../examples/gke-kata", specload.Options{Now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}, &report)
	if err != nil {
		t.Fatalf("%v\n%s", err, report.String())
	}
	state := apitype.UntypedDeployment{Version: 3, Deployment: []byte(keptKataCluster)}
	export := func(context.Context) (apitype.UntypedDeployment, error) { return state, nil }

	var out bytes.Buffer
	err = guardReplacements(t.Context(), "up", p, export, &out)
	if err == nil {
		t.Fatal("a change that turns FQDN network policy off (and so replaces the cluster) was not refused")
	}
	for _, want := range []string{"up refused, nothing was changed", "cluster agents-kata: enableFqdnNetworkPolicy true -> false", "allow_replacement = true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	p.Cluster.AllowReplacement = true
	out.Reset()
	if err := guardReplacements(t.Context(), "preview", p, export, &out); err != nil {
		t.Fatalf("allowed replacement refused: %v", err)
	}
	if !strings.Contains(out.String(), "paddock: note: allowed by cluster.allow_replacement") {
		t.Errorf("an allowed replacement goes unsaid: %q", out.String())
	}

	// A state that cannot be read stops the update.
	broken := func(context.Context) (apitype.UntypedDeployment, error) {
		return apitype.UntypedDeployment{}, errors.New("no backend")
	}
	if err := guardReplacements(t.Context(), "up", p, broken, &out); err == nil || !strings.Contains(err.Error(), "no backend") {
		t.Errorf("err = %v", err)
	}

	// Other targets have no cloud resources: the state is not even read.
	local := &model.Platform{Name: "local", Target: model.Target{Kind: model.TargetLocal}}
	if err := guardReplacements(t.Context(), "up", local, broken, &out); err != nil {
		t.Errorf("local target: %v", err)
	}
}
