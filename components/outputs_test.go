package components

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/model"
)

// gatedMocks creates the first tenant's ResourceQuota only once the second
// tenant's Namespace has been registered, or after a minute (a guard against
// the hang a serial program meets, never a measurement).
type gatedMocks struct {
	mocks
	quota, namespace string // first's quota, second's namespace
	once             sync.Once
	gate             chan struct{}
	waited           bool // the quota was created without the gate opening
}

func (m *gatedMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	switch {
	case args.TypeToken == "kubernetes:core/v1:Namespace" && args.Name == m.namespace:
		m.once.Do(func() { close(m.gate) })
	case args.TypeToken == "kubernetes:core/v1:ResourceQuota" && strings.HasPrefix(args.Name, m.quota+"/"):
		select {
		case <-m.gate:
		case <-time.After(time.Minute):
			m.mu.Lock()
			m.waited = true
			m.mu.Unlock()
		}
	}
	return m.mocks.NewResource(args)
}

// The engine gives a component its URN only once the component's
// dependencies exist, and the Go SDK's RegisterResourceOutputs waits for that
// URN. A tenant's template and warm pool wait for its whole fence; had they
// registered their outputs in line, the next tenant would be registered only
// once this one's fence was created, and a 1,000-tenant create would run one
// tenant at a time. Here the first tenant's fence cannot finish until the
// second tenant is registered.
func TestTenantsAreRegisteredWithoutWaitingForEachOther(t *testing.T) {
	p := testPlatform(model.TargetLocal)
	second := p.Tenants[0]
	second.Name, second.Namespace = "team-b", model.DefaultNamespacePrefix+"team-b"
	p.Tenants = append(p.Tenants, second)
	m := &gatedMocks{quota: p.Tenants[0].Namespace, namespace: second.Namespace, gate: make(chan struct{})}
	runWith(t, p, m)
	if m.waited {
		t.Fatalf("tenant %s was registered only after tenant %s's fence was created: tenants are registered one at a time",
			second.Name, p.Tenants[0].Name)
	}
	// Both tenants whole: each one's template and warm pool, after the gate.
	for _, tn := range p.Tenants {
		for _, typ := range []string{"kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate", "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool"} {
			if !m.has(typ, tn.Namespace+"/python") {
				t.Errorf("%s %s/python not registered:\n%s", typ, tn.Namespace, m.list())
			}
		}
	}
}
