package gcp

// Mock tests: the GCP layer's programs run against pulumi.WithMocks, which
// records every resource registration and returns the inputs (plus the few
// outputs GCP would compute: endpoint, CA, emails, writer identities) as the
// resource's state. Nothing here talks to GCP or a cluster; these tests prove
// what Paddock *asks* GCP for, not what GCP does with it. The real-GKE path is
// e2e_gke_test.go (build tag gke).

import (
	"fmt"
	"github.com/paddock-platform/paddock/components/internal/proppath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/gcp/spec"
)

type registered struct {
	typ, name, parent, provider string
	custom                      bool
	inputs                      resource.PropertyMap
}

type mocks struct {
	mu  sync.Mutex
	all []registered
}

const (
	mockEndpoint        = "203.0.113.10"
	mockPrivateEndpoint = "172.16.0.2"
	mockCA              = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
)

func mockSinkWriter(name string) string {
	return "serviceAccount:service-" + name + "@gcp-sa-logging.iam.gserviceaccount.com"
}

func (m *mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r := registered{typ: args.TypeToken, name: args.Name, custom: args.Custom, inputs: args.Inputs}
	if rpc := args.RegisterRPC; rpc != nil && rpc.GetParent() != "" {
		u := resource.URN(rpc.GetParent())
		r.parent = string(u.Type()) + "::" + u.Name()
	}
	if args.Provider != "" {
		if i := strings.LastIndex(args.Provider, "::"); i > 0 {
			u := resource.URN(args.Provider[:i])
			r.provider = string(u.Type()) + "::" + u.Name()
		}
	}
	m.mu.Lock()
	m.all = append(m.all, r)
	m.mu.Unlock()

	state := args.Inputs.Copy()
	str := func(k string) string {
		if v, ok := args.Inputs[resource.PropertyKey(k)]; ok && v.IsString() {
			return v.StringValue()
		}
		return ""
	}
	switch args.TypeToken {
	case "gcp:container/cluster:Cluster":
		state["endpoint"] = resource.NewStringProperty(mockEndpoint)
		state["masterAuth"] = resource.NewObjectProperty(resource.PropertyMap{
			"clusterCaCertificate": resource.NewStringProperty(mockCA),
		})
		pcc := resource.PropertyMap{}
		if v, ok := args.Inputs["privateClusterConfig"]; ok && v.IsObject() {
			pcc = v.ObjectValue().Copy()
		}
		pcc["privateEndpoint"] = resource.NewStringProperty(mockPrivateEndpoint)
		state["privateClusterConfig"] = resource.NewObjectProperty(pcc)
	case "gcp:serviceaccount/account:Account":
		email := str("accountId") + "@" + str("project") + ".iam.gserviceaccount.com"
		state["email"] = resource.NewStringProperty(email)
		state["member"] = resource.NewStringProperty("serviceAccount:" + email)
		state["name"] = resource.NewStringProperty("projects/" + str("project") + "/serviceAccounts/" + email)
	case "gcp:logging/projectSink:ProjectSink":
		state["writerIdentity"] = resource.NewStringProperty(mockSinkWriter(str("name")))
	}
	return args.Name + "_id", state, nil
}

func (m *mocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return args.Args, nil
}

func (m *mocks) find(t *testing.T, typ, name string) registered {
	t.Helper()
	for _, r := range m.all {
		if r.typ == typ && r.name == name {
			return r
		}
	}
	t.Fatalf("no %s %q registered; have:\n%s", typ, name, m.list())
	return registered{}
}

func (m *mocks) ofType(typ string) []registered {
	var out []registered
	for _, r := range m.all {
		if r.typ == typ {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (m *mocks) list() string {
	var b strings.Builder
	for _, r := range m.sorted() {
		fmt.Fprintf(&b, "  %s %s\n", r.typ, r.name)
	}
	return b.String()
}

func (m *mocks) sorted() []registered {
	m.mu.Lock()
	out := append([]registered(nil), m.all...)
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].typ != out[j].typ {
			return out[i].typ < out[j].typ
		}
		return out[i].name < out[j].name
	})
	return out
}

// captured are the Platform's outputs, read once the mock run has finished.
type captured struct {
	mu         sync.Mutex
	platform   *Platform
	kubeconfig string
	identities map[string]string
	rcs        []string
	// ksaAnnotations by NAMESPACE/KSA.
	ksaAnnotations map[string]map[string]string
}

func runPlatform(t *testing.T, args PlatformArgs) (*mocks, *captured) {
	t.Helper()
	m, c, err := tryPlatform(args)
	if err != nil {
		t.Fatal(err)
	}
	return m, c
}

func tryPlatform(args PlatformArgs) (*mocks, *captured, error) {
	m := &mocks{}
	c := &captured{}
	rcsCh := make(chan []string, 1)
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		p, err := NewPlatform(ctx, args.Name, &args)
		if err != nil {
			return err
		}
		c.platform = p
		p.Kubeconfig.ApplyT(func(s string) string {
			c.mu.Lock()
			c.kubeconfig = s
			c.mu.Unlock()
			return s
		})
		p.Identities.ApplyT(func(ids map[string]string) map[string]string {
			c.mu.Lock()
			c.identities = ids
			c.mu.Unlock()
			return ids
		})
		c.ksaAnnotations = map[string]map[string]string{}
		for _, w := range p.WorkloadIdentities {
			key := w.Args.Namespace + "/" + w.Args.KSA
			w.KSAAnnotations.ApplyT(func(a map[string]string) map[string]string {
				c.mu.Lock()
				c.ksaAnnotations[key] = a
				c.mu.Unlock()
				return a
			})
		}
		// Outputs of plain values are not tied to the run: wait for them below.
		p.RuntimeClassNames.ApplyT(func(rcs []string) []string {
			rcsCh <- rcs
			return rcs
		})
		return nil
	}, pulumi.WithMocks("paddock", "test", m))
	if err == nil {
		select {
		case c.rcs = <-rcsCh:
		case <-time.After(10 * time.Second):
			return m, c, fmt.Errorf("runtimeClasses output never resolved")
		}
	}
	return m, c, err
}

func unwrap(v resource.PropertyValue) resource.PropertyValue {
	for {
		switch {
		case v.IsSecret():
			v = v.SecretValue().Element
		case v.IsOutput() && v.OutputValue().Known:
			v = v.OutputValue().Element
		default:
			return v
		}
	}
}

func lookup(pm resource.PropertyMap, path string) (resource.PropertyValue, bool) {
	v := resource.NewObjectProperty(pm)
	for _, part := range proppath.Split(path) {
		v = unwrap(v)
		switch {
		case v.IsObject():
			next, ok := v.ObjectValue()[resource.PropertyKey(part)]
			if !ok {
				return resource.PropertyValue{}, false
			}
			v = next
		case v.IsArray():
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(v.ArrayValue()) {
				return resource.PropertyValue{}, false
			}
			v = v.ArrayValue()[i]
		default:
			return resource.PropertyValue{}, false
		}
	}
	return v, true
}

func get(t *testing.T, r registered, path string) resource.PropertyValue {
	t.Helper()
	v, ok := lookup(r.inputs, path)
	if !ok {
		t.Fatalf("%s %s: no input %s", r.typ, r.name, path)
	}
	return unwrap(v)
}

func absent(t *testing.T, r registered, path string) {
	t.Helper()
	if v, ok := lookup(r.inputs, path); ok && !v.IsNull() {
		t.Errorf("%s %s: %s = %v, want unset", r.typ, r.name, path, v)
	}
}

func wantString(t *testing.T, r registered, path, want string) {
	t.Helper()
	if v := get(t, r, path); !v.IsString() || v.StringValue() != want {
		t.Errorf("%s %s: %s = %v, want %q", r.typ, r.name, path, v, want)
	}
}

func wantBool(t *testing.T, r registered, path string, want bool) {
	t.Helper()
	if v := get(t, r, path); !v.IsBool() || v.BoolValue() != want {
		t.Errorf("%s %s: %s = %v, want %v", r.typ, r.name, path, v, want)
	}
}

func wantNumber(t *testing.T, r registered, path string, want float64) {
	t.Helper()
	if v := get(t, r, path); !v.IsNumber() || v.NumberValue() != want {
		t.Errorf("%s %s: %s = %v, want %v", r.typ, r.name, path, v, want)
	}
}

func stringsAt(t *testing.T, r registered, path string) []string {
	t.Helper()
	v := get(t, r, path)
	if !v.IsArray() {
		t.Fatalf("%s %s: %s = %v, not an array", r.typ, r.name, path, v)
	}
	var out []string
	for _, e := range v.ArrayValue() {
		out = append(out, unwrap(e).StringValue())
	}
	return out
}

// gvisorPlatform is the example GKE Sandbox platform: one gVisor pool, a tenant
// identity with cloud access, a Cloud Storage audit sink and both alerts.
func gvisorPlatform() PlatformArgs {
	return PlatformArgs{
		Name: "demo",
		Cluster: ClusterArgs{
			Project: "paddock-demo", Location: "europe-west4",
			AuthorizedNetworks: []spec.AuthorizedNetwork{{CIDR: "203.0.113.0/24", DisplayName: "office"}},
		},
		NodePools: []NodePoolArgs{{
			Name: "gvisor", Isolation: spec.IsolationGVisor, MachineType: "e2-standard-4", MinNodes: 1, MaxNodes: 3,
			Labels: map[string]string{"paddock.dev/pool": "gvisor"},
		}},
		WorkloadIdentities: []WorkloadIdentityArgs{{
			Tenant: "team-a", Namespace: "agents-team-a", KSA: "tool-gateway",
			Roles: []string{"roles/storage.objectViewer", "roles/aiplatform.user"},
		}},
		AuditSinks: []AuditSinkArgs{{
			Name: "demo-audit", Kind: spec.AuditStorage, Destination: "paddock-demo-audit", Location: "EU",
			Filter: spec.AuditFilterArgs{Namespaces: []string{"agents-team-a"}},
		}},
		Alerts: &AlertArgs{QuotaSaturation: true, SandboxMaxLifetime: 5 * time.Hour, Namespaces: []string{"agents-team-a"}},
	}
}

// kataPlatform is the example KVM/Kata platform: one KVM pool with an extra
// taint, FQDN policy, BigQuery and Pub/Sub sinks (every event, so network
// policy logging is switched on), no alerts.
func kataPlatform() PlatformArgs {
	return PlatformArgs{
		Name: "vmdemo",
		Cluster: ClusterArgs{
			Project: "paddock-demo", Location: "us-central1-a", ReleaseChannel: "stable",
			AuthorizedNetworks: []spec.AuthorizedNetwork{{CIDR: "198.51.100.0/24"}},
			FQDNNetworkPolicy:  true,
		},
		NodePools: []NodePoolArgs{{
			Name: "kata", Isolation: spec.IsolationKVM, MachineType: "n2-standard-8", MinNodes: 0, MaxNodes: 4, DiskSizeGB: 100,
			Taints: []spec.Taint{{Key: "paddock.dev/tenant", Value: "team-b", Effect: spec.EffectNoSchedule}},
		}},
		WorkloadIdentities: []WorkloadIdentityArgs{{
			Tenant: "team-b", Namespace: "agents-team-b", KSA: "agent-orchestrator", Roles: []string{"roles/pubsub.subscriber"},
		}},
		AuditSinks: []AuditSinkArgs{
			{Name: "vmdemo-bq", Kind: spec.AuditBigQuery, Destination: "paddock_audit", RetentionDays: 400,
				Filter: spec.AuditFilterArgs{Namespaces: []string{"agents-team-b"}}},
			{Name: "vmdemo-stream", Kind: spec.AuditPubSub, Destination: "paddock-audit", RetentionDays: 7,
				Filter: spec.AuditFilterArgs{Namespaces: []string{"agents-team-b"}, Events: spec.AuditEvents()}},
		},
	}
}
