// Package pulumitest holds what the mock tests of Pulumi programs share
// (the GCP layer's in components/gcp, the whole program's in internal/program/): a
// mock resource monitor that records every registration, typed assertions on
// the recorded inputs by property path, and golden previews of a run.
//
// It lives outside components/internal because internal/program/ imports it too.
package pulumitest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Resource is one registration as the mocks saw it.
type Resource struct {
	Type, Name string
	Parent     string   // type::name of the parent, "" for none
	Provider   string   // type::name of the provider, "" when none is given
	Deps       []string // type::name of each explicit dependency
	Custom     bool
	Inputs     resource.PropertyMap
}

// ID is the resource's type::name, as Parent, Provider and Deps name it.
func (r Resource) ID() string { return r.Type + "::" + r.Name }

// Mocks is a pulumi.MockResourceMonitor that records every registration and
// returns its inputs as its state, plus what Outputs adds.
type Mocks struct {
	// Outputs, if set, adds to state (a copy of inputs) the outputs the
	// cloud would compute for a resource of type typ, for the programs that
	// read them (endpoints, emails, ...).
	Outputs func(typ string, inputs, state resource.PropertyMap)

	mu  sync.Mutex
	all []Resource
}

var _ pulumi.MockResourceMonitor = (*Mocks)(nil)

// idOfURN is the type::name of a resource URN.
func idOfURN(urn string) string {
	u := resource.URN(urn)
	return string(u.Type()) + "::" + u.Name()
}

func (m *Mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r := Resource{Type: args.TypeToken, Name: args.Name, Custom: args.Custom, Inputs: args.Inputs}
	if rpc := args.RegisterRPC; rpc != nil {
		if rpc.GetParent() != "" {
			r.Parent = idOfURN(rpc.GetParent())
		}
		for _, d := range rpc.GetDependencies() {
			r.Deps = append(r.Deps, idOfURN(d))
		}
	}
	// A provider reference is "URN::ID".
	if args.Provider != "" {
		if i := strings.LastIndex(args.Provider, "::"); i > 0 {
			r.Provider = idOfURN(args.Provider[:i])
		}
	}
	m.mu.Lock()
	m.all = append(m.all, r)
	m.mu.Unlock()

	state := args.Inputs.Copy()
	if m.Outputs != nil {
		m.Outputs(args.TypeToken, args.Inputs, state)
	}
	return args.Name + "_id", state, nil
}

func (m *Mocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return args.Args, nil
}

// All returns the registrations in the order they happened.
func (m *Mocks) All() []Resource {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Resource(nil), m.all...)
}

// Sorted returns the registrations by type, then name: an order that does
// not depend on goroutine scheduling.
func (m *Mocks) Sorted() []Resource {
	out := m.All()
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// OfType returns the registrations of type typ, by name.
func (m *Mocks) OfType(typ string) []Resource {
	var out []Resource
	for _, r := range m.Sorted() {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// Find returns the registration typ name, or fails the test naming those of
// that type.
func (m *Mocks) Find(t testing.TB, typ, name string) Resource {
	t.Helper()
	for _, r := range m.All() {
		if r.Type == typ && r.Name == name {
			return r
		}
	}
	var have []string
	for _, r := range m.OfType(typ) {
		have = append(have, r.Name)
	}
	t.Fatalf("no %s %q registered; of that type: %v", typ, name, have)
	return Resource{}
}

// List is every registration, one "type name" a line, for failure messages.
func (m *Mocks) List() string {
	var b strings.Builder
	for _, r := range m.Sorted() {
		fmt.Fprintf(&b, "  %s %s\n", r.Type, r.Name)
	}
	return b.String()
}
