package program_test

// The replacement guard, demonstrated on spec changes: the previous update's
// state is what `pulumi stack export` would hold after the first spec (the
// program run under mocks, its GCP resources' inputs written as a version 3
// deployment), and program.GuardReplacements compares it with what the
// program registers for the changed spec, against the pinned provider's
// replacement rules. A pure comparison of recorded and new inputs: nothing
// runs against GCP.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	gcplayer "github.com/paddock-platform/paddock/components/gcp"
	"github.com/paddock-platform/paddock/components/pulumitest"
	"github.com/paddock-platform/paddock/internal/gcpinputs/replacement"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/program"
	"github.com/paddock-platform/paddock/internal/specload"
)

// guardSpec is a GKE platform; the fields vary it.
type guardSpec struct {
	clusterName string // target.cluster_name
	cluster     string // extra arguments of the cluster block
	isolation   string // the sandbox pool's isolation
	fqdns       bool   // the tenant lists fqdns
}

func (g guardSpec) hcl() string {
	handler, machine := "gvisor", "e2-standard-8"
	if g.isolation == "kvm" {
		handler, machine = "kata-qemu", "n2-standard-8"
	}
	egress := ""
	if g.fqdns {
		egress = `egress {
    fqdns = ["api.example.com"]
  }`
	}
	name := ""
	if g.clusterName != "" {
		name = `cluster_name = "` + g.clusterName + `"`
	}
	return `platform {
  name = "agents"
}
target "gke" {
  project  = "paddock-guard"
  location = "europe-west4"
  ` + name + `
}
cluster {
  authorized_networks = ["203.0.113.0/24"]
  ` + g.cluster + `
}
node_pool "sandboxes" {
  isolation    = "` + orDefault(g.isolation, "gvisor") + `"
  machine_type = "` + machine + `"
}
agent_sandbox {
  version = "v0.5.6"
}
runtime_class "sandboxed" {
  handler   = "` + handler + `"
  node_pool = "sandboxes"
}
tenant "research" {
  ` + egress + `
  template "agent" {
    image         = "us-docker.pkg.dev/paddock-guard/agents/runtime:1.0.0"
    runtime_class = "sandboxed"
  }
}
audit_sink "trail" {
  kind        = "pubsub"
  destination = "projects/paddock-guard/topics/audit"
  filters     = ["sandbox_lifecycle", "rbac"]
}
` + g.waivers()
}

// waivers accept the hardening findings of a loosened cluster, so that the
// spec passes the policy gate and the guard is what is tested.
func (g guardSpec) waivers() string {
	var out string
	for setting, rule := range map[string]string{"private_nodes = false": "PDK-702", "dataplane_v2 = false": "PDK-704", "workload_identity = false": "PDK-705"} {
		if strings.Contains(g.cluster, setting) {
			out += "waiver {\n  rule   = \"" + rule + "\"\n  reason = \"A test of the replacement guard.\"\n}\n"
		}
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func loadGuardSpec(t *testing.T, g guardSpec) *model.Platform {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(g.hcl()), 0o600); err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	p, err := specload.Load(dir, specload.Options{Now: testNow}, &report)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, report.String(), g.hcl())
	}
	return p
}

// stateAfter is the stack state after an update of p: every resource the
// program registers, with its inputs as the state records them, in the
// format of `pulumi stack export`.
func stateAfter(t *testing.T, p *model.Platform) apitype.UntypedDeployment {
	t.Helper()
	m := &pulumitest.Mocks{Outputs: pulumitest.GCPOutputs}
	if err := pulumi.RunErr(program.New(p), pulumi.WithMocks("paddock", "guard", m)); err != nil {
		t.Fatal(err)
	}
	var d apitype.DeploymentV3
	for _, r := range m.All() {
		in, err := json.Marshal(jsonOf(resource.NewObjectProperty(r.Inputs)))
		if err != nil {
			t.Fatal(err)
		}
		var inputs map[string]any
		if err := json.Unmarshal(in, &inputs); err != nil {
			t.Fatal(err)
		}
		d.Resources = append(d.Resources, apitype.ResourceV3{
			URN:    resource.NewURN("guard", "paddock", "", tokens.Type(r.Type), r.Name),
			Type:   tokens.Type(r.Type),
			Custom: r.Custom,
			Inputs: inputs,
		})
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return apitype.UntypedDeployment{Version: 3, Deployment: raw}
}

func jsonOf(v resource.PropertyValue) any {
	switch {
	case v.IsObject():
		out := map[string]any{}
		for k, e := range v.ObjectValue() {
			out[string(k)] = jsonOf(e)
		}
		return out
	case v.IsArray():
		var out []any
		for _, e := range v.ArrayValue() {
			out = append(out, jsonOf(e))
		}
		return out
	case v.IsSecret():
		// As the state holds a secret: encrypted, never in plain text.
		return map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:..."}
	case v.IsOutput():
		return jsonOf(v.OutputValue().Element)
	}
	return v.V
}

func replacementsOf(t *testing.T, err error) []program.Replacement {
	t.Helper()
	var re *program.ReplacementError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a *ReplacementError", err)
	}
	return re.Replacements
}

var fqdnOn = guardSpec{cluster: "fqdn_network_policy = true", fqdns: true}

// The change issue 17 found: the last tenant's fqdns go and, with them, the
// cluster's FQDN network policy, which the provider only turns off by
// replacing the cluster. The guard refuses it by name and says how to opt in.
func TestGuardRefusesAClusterReplacement(t *testing.T) {
	state := stateAfter(t, loadGuardSpec(t, fqdnOn))

	// The same spec again: nothing to refuse, nothing to say.
	if notices, err := program.GuardReplacements(loadGuardSpec(t, fqdnOn), state); err != nil || len(notices) != 0 {
		t.Fatalf("unchanged spec: notices %v, err %v", notices, err)
	}

	off := guardSpec{cluster: "fqdn_network_policy = false"}
	_, err := program.GuardReplacements(loadGuardSpec(t, off), state)
	rs := replacementsOf(t, err)
	if len(rs) != 1 || rs[0].Type != "gcp:container/cluster:Cluster" || rs[0].Name != "agents" ||
		rs[0].Change.Path != "enableFqdnNetworkPolicy" || rs[0].SpecField != "cluster.fqdn_network_policy" {
		t.Fatalf("replacements %+v", rs)
	}
	for _, want := range []string{"cluster agents: enableFqdnNetworkPolicy true -> false (spec: cluster.fqdn_network_policy)", "cluster { allow_replacement = true }", "deletion protection"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}

	// Allowed by the spec: it goes ahead, and says what it allowed.
	off.cluster += "\n  allow_replacement = true"
	notices, err := program.GuardReplacements(loadGuardSpec(t, off), state)
	if err != nil || len(notices) != 1 || !strings.Contains(notices[0], "allowed by cluster.allow_replacement") || !strings.Contains(notices[0], "enableFqdnNetworkPolicy") {
		t.Fatalf("allowed: notices %v, err %v", notices, err)
	}
}

func TestGuardOtherReplacements(t *testing.T) {
	state := stateAfter(t, loadGuardSpec(t, guardSpec{}))
	for _, c := range []struct {
		name       string
		spec       guardSpec
		typ, field string
	}{
		{"public nodes", guardSpec{cluster: "private_nodes = false"}, "gcp:container/cluster:Cluster", "cluster.private_nodes"},
		{"no dataplane v2", guardSpec{cluster: "dataplane_v2 = false"}, "gcp:container/cluster:Cluster", "cluster.dataplane_v2"},
		{"renamed cluster", guardSpec{clusterName: "agents-2"}, "gcp:container/cluster:Cluster", "target.cluster_name"},
		{"gvisor pool becomes kvm", guardSpec{isolation: "kvm"}, "gcp:container/nodePool:NodePool", "node_pool.sandboxes.isolation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := program.GuardReplacements(loadGuardSpec(t, c.spec), state)
			rs := replacementsOf(t, err)
			for _, r := range rs {
				if r.Type == c.typ && r.SpecField == c.field {
					return
				}
			}
			t.Errorf("replacements %v lack %s at %s", rs, c.typ, c.field)
		})
	}
}

// Turning FQDN network policy on for an existing cluster is an in-place
// update that GKE only enforces after anetd restarts: the guard says so.
func TestGuardNoticesTheAnetdRestart(t *testing.T) {
	state := stateAfter(t, loadGuardSpec(t, guardSpec{}))
	notices, err := program.GuardReplacements(loadGuardSpec(t, fqdnOn), state)
	if err != nil || len(notices) != 1 || !strings.Contains(notices[0], "rollout restart daemonset anetd") {
		t.Fatalf("notices %v, err %v", notices, err)
	}
	// A new stack has nothing to restart.
	if notices, err := program.GuardReplacements(loadGuardSpec(t, fqdnOn), apitype.UntypedDeployment{}); err != nil || len(notices) != 0 {
		t.Fatalf("empty state: notices %v, err %v", notices, err)
	}
}

// Every input Paddock registers on the cluster and its node pools has been
// checked against the provider's schema: it is a replacement rule, an
// in-place input, or ignored after creation. A new input fails here until
// forcenew.json says what the provider does with it.
func TestEveryGKEInputIsClassified(t *testing.T) {
	schema, err := replacement.Load()
	if err != nil {
		t.Fatal(err)
	}
	ignored := map[string][]string{
		"gcp:container/cluster:Cluster":   gcplayer.ClusterIgnoreChanges,
		"gcp:container/nodePool:NodePool": gcplayer.NodePoolIgnoreChanges,
	}
	specs := []guardSpec{fqdnOn, {isolation: "kvm", cluster: "private_nodes = false\n  dataplane_v2 = false\n  workload_identity = false"}}
	for _, dir := range []string{"../../examples/gke-gvisor", "../../examples/gke-kata", "testdata/agent-identity"} {
		_, m := runExample(t, dir)
		checkClassified(t, schema, ignored, m)
	}
	for _, g := range specs {
		m := &pulumitest.Mocks{Outputs: pulumitest.GCPOutputs}
		if err := pulumi.RunErr(program.New(loadGuardSpec(t, g)), pulumi.WithMocks("paddock", "guard", m)); err != nil {
			t.Fatal(err)
		}
		checkClassified(t, schema, ignored, m)
	}
}

func checkClassified(t *testing.T, schema *replacement.Schema, ignored map[string][]string, m *pulumitest.Mocks) {
	t.Helper()
	for typ, skip := range ignored {
		for _, r := range m.OfType(typ) {
			for _, path := range leafPaths("", resource.NewObjectProperty(r.Inputs)) {
				top := path
				if i := strings.IndexAny(top, ".["); i > 0 {
					top = top[:i]
				}
				if contains(skip, top) {
					continue
				}
				if !schema.Classified(typ, path) {
					t.Errorf("%s %s: input %s is not in forcenew.json (does the provider replace on it?)", typ, r.Name, path)
				}
			}
		}
	}
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// leafPaths are the paths of v's leaves (an empty object or list is a leaf),
// written as the golden previews write them.
func leafPaths(path string, v resource.PropertyValue) []string {
	switch {
	case v.IsSecret():
		return leafPaths(path, v.SecretValue().Element)
	case v.IsOutput() && v.OutputValue().Known:
		return leafPaths(path, v.OutputValue().Element)
	case v.IsObject() && len(v.ObjectValue()) > 0:
		var out []string
		for k, e := range v.ObjectValue() {
			key := string(k)
			switch {
			case strings.ContainsAny(key, "./[]"):
				key = path + "[" + key + "]"
			case path != "":
				key = path + "." + key
			}
			out = append(out, leafPaths(key, e)...)
		}
		return out
	case v.IsArray() && len(v.ArrayValue()) > 0:
		var out []string
		for i, e := range v.ArrayValue() {
			out = append(out, leafPaths(fmt.Sprintf("%s[%d]", path, i), e)...)
		}
		return out
	}
	return []string{path}
}
