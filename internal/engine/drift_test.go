package engine

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"

	"github.com/paddock-platform/paddock/internal/drift"
)

const nsURN = "urn:pulumi:s::paddock::paddock:index:Platform$paddock:tenant:Tenant$kubernetes:core/v1:Namespace::agents-team-a"

func nsProps(enforce any) map[string]any {
	labels := map[string]any{"app.kubernetes.io/managed-by": "paddock"}
	if enforce != nil {
		labels["pod-security.kubernetes.io/enforce"] = enforce
	}
	return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "agents-team-a", "labels": labels}}
}

func pre(m apitype.StepEventMetadata) events.EngineEvent {
	return events.EngineEvent{EngineEvent: apitype.EngineEvent{ResourcePreEvent: &apitype.ResourcePreEvent{Metadata: m}}}
}

func TestDriftCollector(t *testing.T) {
	c := newDriftCollector()
	const path = `metadata.labels["pod-security.kubernetes.io/enforce"]`
	npURN := "urn:pulumi:s::paddock::paddock:network:Egress$kubernetes:networking.k8s.io/v1:NetworkPolicy::agents-team-a/allow-dns"
	newURN := "urn:pulumi:s::paddock::paddock:network:Egress$kubernetes:networking.k8s.io/v1:NetworkPolicy::agents-team-a/allow-new"
	sameURN := "urn:pulumi:s::paddock::kubernetes:node.k8s.io/v1:RuntimeClass::gvisor"
	for _, ev := range []events.EngineEvent{
		// The refresh reads each resource of the stack; its old inputs are the applied ones.
		pre(apitype.StepEventMetadata{Op: apitype.OpRefresh, URN: nsURN, Type: "kubernetes:core/v1:Namespace", Old: &apitype.StepEventStateMetadata{Inputs: nsProps("restricted")}}),
		pre(apitype.StepEventMetadata{Op: apitype.OpRefresh, URN: npURN, Type: "kubernetes:networking.k8s.io/v1:NetworkPolicy", Old: &apitype.StepEventStateMetadata{}}),
		pre(apitype.StepEventMetadata{Op: apitype.OpRefresh, URN: sameURN, Type: "kubernetes:node.k8s.io/v1:RuntimeClass", Old: &apitype.StepEventStateMetadata{}}),
		pre(apitype.StepEventMetadata{Op: apitype.OpSame, URN: "urn:pulumi:s::paddock::paddock:index:Platform::local-demo", Type: "paddock:index:Platform"}),
		pre(apitype.StepEventMetadata{Op: apitype.OpSame, URN: sameURN, Type: "kubernetes:node.k8s.io/v1:RuntimeClass"}),
		// Then the preview: the label was removed in the cluster.
		pre(apitype.StepEventMetadata{Op: apitype.OpUpdate, URN: nsURN, Type: "kubernetes:core/v1:Namespace",
			Old:          &apitype.StepEventStateMetadata{Inputs: nsProps(nil), Outputs: nsProps(nil)},
			New:          &apitype.StepEventStateMetadata{Inputs: nsProps("restricted")},
			DetailedDiff: map[string]apitype.PropertyDiff{path: {Kind: apitype.DiffAdd}}}),
		// A policy deleted in the cluster, and one the spec added since the last up.
		pre(apitype.StepEventMetadata{Op: apitype.OpCreate, URN: npURN, Type: "kubernetes:networking.k8s.io/v1:NetworkPolicy"}),
		pre(apitype.StepEventMetadata{Op: apitype.OpCreate, URN: newURN, Type: "kubernetes:networking.k8s.io/v1:NetworkPolicy"}),
	} {
		c.handle(ev)
	}
	res, checked := c.resources()
	if checked != 4 {
		t.Errorf("checked %d resources, want 4 (components not counted)", checked)
	}
	if len(res) != 3 {
		t.Fatalf("%d resources: %+v", len(res), res)
	}
	byURN := map[string]drift.Resource{}
	for _, r := range res {
		byURN[r.URN] = r
	}
	ns := byURN[nsURN]
	if ns.Change != drift.Modified || ns.Cause != drift.CauseCluster || ns.Kind != "Namespace" || ns.Name != "agents-team-a" {
		t.Errorf("namespace: %+v", ns)
	}
	if len(ns.Fields) != 1 || ns.Fields[0].Path != path || ns.Fields[0].Declared != "restricted" || ns.Fields[0].Live != nil || ns.Fields[0].Cause != drift.CauseCluster {
		t.Errorf("namespace fields: %+v", ns.Fields)
	}
	if r := byURN[npURN]; r.Change != drift.Missing || r.Cause != drift.CauseCluster || r.Name != "agents-team-a/allow-dns" || r.Kind != "NetworkPolicy" {
		t.Errorf("deleted policy: %+v", r)
	}
	if r := byURN[newURN]; r.Change != drift.NotApplied || r.Cause != drift.CauseSpec {
		t.Errorf("new policy: %+v", r)
	}
}

func TestDriftCauseSpec(t *testing.T) {
	// The spec changed replicas 2 -> 3 and nobody touched the cluster.
	pool := func(n float64) map[string]any {
		return map[string]any{"kind": "SandboxWarmPool", "metadata": map[string]any{"name": "python", "namespace": "agents-team-a"}, "spec": map[string]any{"replicas": n}}
	}
	r := toDrift(apitype.StepEventMetadata{Op: apitype.OpUpdate, URN: "u",
		Old:          &apitype.StepEventStateMetadata{Inputs: pool(2), Outputs: pool(2)},
		New:          &apitype.StepEventStateMetadata{Inputs: pool(3)},
		DetailedDiff: map[string]apitype.PropertyDiff{"spec.replicas": {Kind: apitype.DiffUpdate}}}, true, pool(2))
	if r.Cause != drift.CauseSpec || r.Fields[0].Declared != 3.0 || r.Fields[0].Live != 2.0 {
		t.Fatalf("%+v", r)
	}
}

func TestLookup(t *testing.T) {
	props := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a/b": "x"}},
		"spec": map[string]any{
			"containers":  []any{map[string]any{"image": "img"}},
			"secretStuff": map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "[secret]"},
		},
	}
	for path, want := range map[string]any{
		`metadata.labels["a/b"]`:     "x",
		"spec.containers[0].image":   "img",
		"spec.secretStuff[0].value":  "[secret]",
		"spec.secretStuff":           "[secret]",
		"spec.containers[3].image":   nil,
		`metadata.labels["missing"]`: nil,
	} {
		got, _ := lookup(props, path)
		if got != want {
			t.Errorf("lookup %s = %v, want %v", path, got, want)
		}
	}
}
