package program_test

// Mock tests of the whole program of target "gke", per example spec: each
// spec is loaded and gated through the real loader and policy
// (project.LoadSpec), then program.New runs under pulumi.WithMocks, which
// records every registration and returns the inputs as state (plus the few
// outputs GCP computes: the cluster's endpoint and CA, service account
// emails, sink writer identities). They prove what Paddock asks GCP and the
// new cluster for, end to end from HCL; not what GCP does with it (that is
// components/gcp/e2e_gke_test.go, build tag gke, against a real project).

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/model"
	"github.com/paddock-platform/paddock/program"
	"github.com/paddock-platform/paddock/project"
)

var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

type registered struct {
	typ, name string
	urn       string
	parent    string // type::name of the parent
	provider  string // type::name of the provider
	custom    bool
	inputs    resource.PropertyMap
	deps      []string
}

func (r registered) id() string { return r.typ + "::" + r.name }

type mocks struct {
	mu  sync.Mutex
	all []registered
}

func typeName(urn string) string {
	u := resource.URN(urn)
	return string(u.Type()) + "::" + u.Name()
}

const (
	mockEndpoint = "203.0.113.10"
	mockCA       = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
)

func mockWriter(sink string) string {
	return "serviceAccount:service-" + sink + "@gcp-sa-logging.iam.gserviceaccount.com"
}

func (m *mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r := registered{typ: args.TypeToken, name: args.Name, custom: args.Custom, inputs: args.Inputs}
	if rpc := args.RegisterRPC; rpc != nil {
		if rpc.GetParent() != "" {
			r.parent = typeName(rpc.GetParent())
		}
		for _, d := range rpc.GetDependencies() {
			r.deps = append(r.deps, typeName(d))
		}
	}
	if args.Provider != "" {
		if i := strings.LastIndex(args.Provider, "::"); i > 0 {
			r.provider = typeName(args.Provider[:i])
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
		state["masterAuth"] = resource.NewObjectProperty(resource.PropertyMap{"clusterCaCertificate": resource.NewStringProperty(mockCA)})
	case "gcp:serviceaccount/account:Account":
		email := str("accountId") + "@" + str("project") + ".iam.gserviceaccount.com"
		state["email"] = resource.NewStringProperty(email)
		state["member"] = resource.NewStringProperty("serviceAccount:" + email)
		state["name"] = resource.NewStringProperty("projects/" + str("project") + "/serviceAccounts/" + email)
	case "gcp:logging/projectSink:ProjectSink":
		state["writerIdentity"] = resource.NewStringProperty(mockWriter(str("name")))
	}
	return args.Name + "_id", state, nil
}

func (m *mocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return args.Args, nil
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

func (m *mocks) find(t *testing.T, typ, name string) registered {
	t.Helper()
	for _, r := range m.all {
		if r.typ == typ && r.name == name {
			return r
		}
	}
	var have []string
	for _, r := range m.sorted() {
		if r.typ == typ {
			have = append(have, r.name)
		}
	}
	t.Fatalf("no %s %q registered; of that type: %v", typ, name, have)
	return registered{}
}

func (m *mocks) ofType(typ string) []registered {
	var out []registered
	for _, r := range m.sorted() {
		if r.typ == typ {
			out = append(out, r)
		}
	}
	return out
}

// runExample loads dir through the real loader and policy gate, and runs the
// program under mocks.
func runExample(t *testing.T, dir string) (*model.Platform, *mocks) {
	t.Helper()
	var report bytes.Buffer
	p, err := project.LoadSpec(dir, project.SpecOptions{Now: testNow}, &report)
	if err != nil {
		t.Fatalf("%s: %v\n%s", dir, err, report.String())
	}
	if err := project.ResolveTarget(t.Context(), p); err != nil {
		t.Fatalf("resolve target: %v", err)
	}
	m := &mocks{}
	if err := pulumi.RunErr(program.New(p), pulumi.WithMocks("paddock", "test", m)); err != nil {
		t.Fatalf("program: %v", err)
	}
	return p, m
}

// splitPath splits "a.b[c.d][0].e": bracketed keys are taken literally.
func splitPath(path string) []string {
	var parts []string
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			parts = append(parts, path[1:end])
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			parts = append(parts, path[:end])
			path = path[end:]
		}
	}
	return parts
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
	for _, part := range splitPath(path) {
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
		t.Fatalf("%s: no input %s", r.id(), path)
	}
	return unwrap(v)
}

func str(t *testing.T, r registered, path string) string {
	t.Helper()
	v := get(t, r, path)
	if !v.IsString() {
		t.Fatalf("%s: %s = %v, not a string", r.id(), path, v)
	}
	return v.StringValue()
}

func wantStr(t *testing.T, r registered, path, want string) {
	t.Helper()
	if got := str(t, r, path); got != want {
		t.Errorf("%s: %s = %q, want %q", r.id(), path, got, want)
	}
}

func wantBool(t *testing.T, r registered, path string, want bool) {
	t.Helper()
	if v := get(t, r, path); !v.IsBool() || v.BoolValue() != want {
		t.Errorf("%s: %s = %v, want %v", r.id(), path, v, want)
	}
}

func wantNumber(t *testing.T, r registered, path string, want float64) {
	t.Helper()
	if v := get(t, r, path); !v.IsNumber() || v.NumberValue() != want {
		t.Errorf("%s: %s = %v, want %v", r.id(), path, v, want)
	}
}

func absent(t *testing.T, r registered, path string) {
	t.Helper()
	if v, ok := lookup(r.inputs, path); ok && !unwrap(v).IsNull() {
		t.Errorf("%s: %s = %v, want unset", r.id(), path, v)
	}
}

func strs(t *testing.T, r registered, path string) []string {
	t.Helper()
	v := get(t, r, path)
	if !v.IsArray() {
		t.Fatalf("%s: %s = %v, not an array", r.id(), path, v)
	}
	var out []string
	for _, e := range v.ArrayValue() {
		out = append(out, unwrap(e).StringValue())
	}
	return out
}

// strMap reads an object of strings ({} when unset).
func strMap(t *testing.T, r registered, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	v, ok := lookup(r.inputs, path)
	if !ok {
		return out
	}
	v = unwrap(v)
	if !v.IsObject() {
		t.Fatalf("%s: %s = %v, not an object", r.id(), path, v)
	}
	for k, e := range v.ObjectValue() {
		out[string(k)] = unwrap(e).StringValue()
	}
	return out
}

// objects reads an array of objects of strings (nil when unset).
func objects(t *testing.T, r registered, path string) []map[string]string {
	t.Helper()
	v, ok := lookup(r.inputs, path)
	if !ok || unwrap(v).IsNull() {
		return nil
	}
	var out []map[string]string
	for i := range unwrap(v).ArrayValue() {
		out = append(out, strMap(t, r, fmt.Sprintf("%s[%d]", path, i)))
	}
	return out
}
