package localcluster

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The world hosts never share a name, a link or an address, stay out of the
// node's, the pods' and the Services' ranges, and their links are the ones the
// pod guard lets pod traffic leave by.
func TestWorldHostsApart(t *testing.T) {
	nn := planNodeNet("paddock")
	taken := []netip.Prefix{
		netip.MustParsePrefix(nn.Subnet),
		netip.MustParsePrefix(nn.PodCIDR),
		netip.MustParsePrefix("10.96.0.0/12"), // ServiceCIDR
	}
	names, links := map[string]bool{}, map[string]bool{}
	for _, h := range WorldHosts {
		if names[h.Name] || links[h.Link()] {
			t.Fatalf("%s: name or link %s used twice", h.Name, h.Link())
		}
		names[h.Name], links[h.Link()] = true, true
		if !strings.HasPrefix(h.Link(), WorldLinkPrefix) || len(h.Link()) > 15 {
			t.Errorf("%s: link %q must start with %q and fit IFNAMSIZ", h.Name, h.Link(), WorldLinkPrefix)
		}
		if !strings.HasSuffix(h.Name, ".test") {
			t.Errorf("%s: a world host's name must be under .test, which no real resolver answers", h.Name)
		}
		addr := netip.MustParseAddr(h.Addr())
		for _, p := range taken {
			if p.Contains(addr) {
				t.Errorf("%s: %s lies in %s", h.Name, addr, p)
			}
		}
		if !netip.MustParsePrefix(h.gateway()+"/30").Masked().Contains(addr) || h.gateway() == h.Addr() {
			t.Errorf("%s: %s and its gateway %s are not one /30", h.Name, addr, h.gateway())
		}
		if len(h.Ports) == 0 {
			t.Errorf("%s: no port", h.Name)
		}
	}
}

// The resolver's hosts file names every world host at its address, one per
// line, as the hosts plugin reads it.
func TestWorldHostsFile(t *testing.T) {
	got := map[string]string{}
	for _, line := range strings.Split(worldHostsFile(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("line %q: want 'address name'", line)
		}
		got[f[1]] = f[0]
	}
	for _, h := range WorldHosts {
		if got[h.Name] != h.Addr() {
			t.Errorf("%s: file says %q, want %s", h.Name, got[h.Name], h.Addr())
		}
	}
	if len(got) != len(WorldHosts) {
		t.Errorf("file names %d hosts, want %d", len(got), len(WorldHosts))
	}
}

// ensureWorldHostNames creates the resolver's ConfigMap, leaves it alone when
// it says the stack's names, and puts them back whatever else it is made to say.
func TestEnsureWorldHostNames(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	did, err := ensureWorldHostNames(ctx, cs)
	if err != nil || !strings.Contains(did, "api.llm.paddock.test") {
		t.Fatalf("create: did %q, err %v", did, err)
	}
	if did, err := ensureWorldHostNames(ctx, cs); err != nil || did != "" {
		t.Fatalf("unchanged: did %q, err %v; want nothing done", did, err)
	}
	for _, edit := range []map[string]string{
		{"hosts": "10.215.1.2 api.llm.paddock.test\n192.0.2.1 evil.example\n"},
		{"hosts": worldHostsFile(), "extra": "10.0.0.1 other"},
		nil,
	} {
		cm, _ := cs.CoreV1().ConfigMaps(DNSNamespace).Get(ctx, DNSHostsConfigMap, metav1.GetOptions{})
		cm.Data = edit
		if _, err := cs.CoreV1().ConfigMaps(DNSNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		did, err := ensureWorldHostNames(ctx, cs)
		if err != nil || !strings.Contains(did, "put back") {
			t.Fatalf("edited to %v: did %q, err %v; want it put back", edit, did, err)
		}
		cm, _ = cs.CoreV1().ConfigMaps(DNSNamespace).Get(ctx, DNSHostsConfigMap, metav1.GetOptions{})
		if len(cm.Data) != 1 || cm.Data["hosts"] != worldHostsFile() {
			t.Fatalf("after put back: %v", cm.Data)
		}
	}
}

// A test host's name reaches the resolver's file beside the world hosts';
// a line that would rename a world host, point a name at any other address
// or name something outside .test is left out; removing the test's
// ConfigMap takes its names back out.
func TestTestHostNamesFollowTheirConfigMap(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	if _, err := ensureWorldHostNames(ctx, cs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Join([]string{
		"10.215.16.2 tls.e2e.paddock.test",
		"10.215.17.2 api.llm.paddock.test",      // a world host's name
		"10.215.18.2 metadata.google.internal",  // not under .test
		"10.215.1.2 low.paddock.test",           // a world host's address
		"10.215.19.1 machine-side.paddock.test", // not a host's .2
		"169.254.169.254 meta.paddock.test",
		"# a comment",
	}, "\n")
	if _, err := cs.CoreV1().ConfigMaps(DNSNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DNSTestHostsConfigMap, Namespace: DNSNamespace},
		Data:       map[string]string{"hosts": lines},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	did, err := ensureWorldHostNames(ctx, cs)
	if err != nil || !strings.Contains(did, "tls.e2e.paddock.test") || strings.Contains(did, "put back") {
		t.Fatalf("did %q, err %v; want the test host named", did, err)
	}
	cm, _ := cs.CoreV1().ConfigMaps(DNSNamespace).Get(ctx, DNSHostsConfigMap, metav1.GetOptions{})
	if want := worldHostsFile() + "10.215.16.2 tls.e2e.paddock.test\n"; cm.Data["hosts"] != want {
		t.Errorf("resolver's file:\n%s\nwant:\n%s", cm.Data["hosts"], want)
	}
	if did, err := ensureWorldHostNames(ctx, cs); err != nil || did != "" {
		t.Errorf("unchanged: did %q, err %v", did, err)
	}
	if err := UnnameTestHosts(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureWorldHostNames(ctx, cs); err != nil {
		t.Fatal(err)
	}
	cm, _ = cs.CoreV1().ConfigMaps(DNSNamespace).Get(ctx, DNSHostsConfigMap, metav1.GetOptions{})
	if cm.Data["hosts"] != worldHostsFile() {
		t.Errorf("after the test's names are removed:\n%s", cm.Data["hosts"])
	}
}
