package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/paths"
)

// A node of the kube-router era kept two chains for the cluster DNS address,
// named after its bridge: Down removes them, jumps first, and only its own.
func TestRetiredDNSChainRemovals(t *testing.T) {
	nn := planNodeNet("paddock")
	id := strings.TrimPrefix(nn.Bridge, "pdk-")
	save := func(id, bridge string) string {
		return fmt.Sprintf(`*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:PADDOCK-DNS-%[1]s - [0:0]
-A PREROUTING -d 10.96.0.10/32 -i %[2]s -m comment --comment "paddock: cluster DNS address, from pods" -j PADDOCK-DNS-%[1]s
-A OUTPUT -d 10.96.0.10/32 -m comment --comment "paddock: cluster DNS address, from the node" -j PADDOCK-DNS-%[1]s
-A PADDOCK-DNS-%[1]s -p udp -m udp --dport 53 -m comment --comment "paddock: cluster DNS to the resolver pod" -j DNAT --to-destination 10.213.7.12:53
COMMIT
*mangle
:FORWARD ACCEPT [0:0]
:PADDOCK-NOFWD-%[1]s - [0:0]
-A FORWARD -i %[2]s -j PADDOCK-NOFWD-%[1]s
-A PADDOCK-NOFWD-%[1]s -i %[2]s ! -o %[2]s -m comment --comment "paddock: pods reach nothing beyond the node" -j DROP
COMMIT
`, id, bridge)
	}
	owned := func(tc string) bool { return contains(retiredChains(nn), tc) }
	got := chainRemovals(save(id, nn.Bridge), owned)
	want := [][]string{
		{"-t", "nat", "-D", "PREROUTING", "-d", "10.96.0.10/32", "-i", nn.Bridge, "-m", "comment", "--comment", "paddock: cluster DNS address, from pods", "-j", "PADDOCK-DNS-" + id},
		{"-t", "nat", "-D", "OUTPUT", "-d", "10.96.0.10/32", "-m", "comment", "--comment", "paddock: cluster DNS address, from the node", "-j", "PADDOCK-DNS-" + id},
		{"-t", "mangle", "-D", "FORWARD", "-i", nn.Bridge, "-j", "PADDOCK-NOFWD-" + id},
		{"-t", "mangle", "-F", "PADDOCK-NOFWD-" + id},
		{"-t", "nat", "-F", "PADDOCK-DNS-" + id},
		{"-t", "mangle", "-X", "PADDOCK-NOFWD-" + id},
		{"-t", "nat", "-X", "PADDOCK-DNS-" + id},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chainRemovals:\n got %q\nwant %q", got, want)
	}
	// Another cluster's chains are not this node's.
	other := planNodeNet("other")
	if got := chainRemovals(save(strings.TrimPrefix(other.Bridge, "pdk-"), other.Bridge), owned); got != nil {
		t.Errorf("removed another node's chains: %q", got)
	}
}

func TestDNSAddresses(t *testing.T) {
	_, cidr, err := net.ParseCIDR(ServiceCIDR)
	if err != nil {
		t.Fatal(err)
	}
	first := make(net.IP, 4)
	copy(first, cidr.IP.To4())
	first[3]++
	// The kubernetes Service takes the range's first address: the probe's answer.
	if !cidr.Contains(net.ParseIP(DNSServiceIP)) || DNSProbeAddress != first.String() || DNSServiceIP == DNSProbeAddress {
		t.Errorf("DNS address %s and probe answer %s: want both in %s, the answer its first address", DNSServiceIP, DNSProbeAddress, ServiceCIDR)
	}
	nn := planNodeNet("paddock")
	_, subnet, _ := net.ParseCIDR(nn.Subnet)
	if subnet.Contains(net.ParseIP(DNSServiceIP)) {
		t.Errorf("the DNS address %s must not be on the node subnet %s", DNSServiceIP, nn.Subnet)
	}
	// A machine route covering the DNS address would catch whatever the agent
	// does not translate: refused like one overlapping the subnet.
	vip := &net.IPNet{IP: net.ParseIP(DNSServiceIP).To4(), Mask: net.CIDRMask(32, 32)}
	routes := "default via 192.0.2.1 dev eth0\n" + DNSServiceIP + " dev " + nn.Bridge + " scope link src " + nn.NodeIP + "\n"
	if got := overlappingRoute(routes, vip, nn.Bridge); got != "" {
		t.Errorf("the node's own route counted as a conflict: %q", got)
	}
	if got := overlappingRoute(routes+"10.96.0.0/12 dev docker0\n", vip, nn.Bridge); !strings.HasPrefix(got, "10.96.0.0/12") {
		t.Errorf("a route covering the DNS address was missed: %q", got)
	}
}

func TestKubeletGivesPodsTheClusterResolver(t *testing.T) {
	d := nodeDirs{root: "/x/node"}
	nn := planNodeNet("paddock")
	var k struct {
		ClusterDNS    []string `json:"clusterDNS"`
		ClusterDomain string   `json:"clusterDomain"`
		ResolvConf    *string  `json:"resolvConf"`
		Kind          string   `json:"kind"`
	}
	if err := yaml.UnmarshalStrict([]byte(kubeletConfigYAML(d, "paddock", "/pki/ca.crt", nn)), &map[string]any{}); err != nil {
		t.Fatalf("kubelet config is not YAML: %v", err)
	}
	if err := yaml.Unmarshal([]byte(kubeletConfigYAML(d, "paddock", "/pki/ca.crt", nn)), &k); err != nil {
		t.Fatal(err)
	}
	if k.Kind != "KubeletConfiguration" || !reflect.DeepEqual(k.ClusterDNS, []string{DNSServiceIP}) || k.ClusterDomain != "cluster.local" {
		t.Errorf("kubelet config: clusterDNS %v clusterDomain %q, want [%s] cluster.local", k.ClusterDNS, k.ClusterDomain, DNSServiceIP)
	}
	if k.ResolvConf == nil || *k.ResolvConf != "" {
		t.Errorf("kubelet resolvConf %v: want \"\" (nothing of the machine's resolver reaches pods)", k.ResolvConf)
	}

	api := strings.Join(testCluster(t, NodesReal).componentArgs("kube-apiserver"), " ")
	if !strings.Contains(api, "--service-cluster-ip-range="+ServiceCIDR) {
		t.Errorf("the API server is not given the service range: %s", api)
	}
}

// The Service selects the resolver pod, and Paddock's DNS egress rule allows the
// pod: Cilium enforces the rule on the Service's backend, which it matches.
func TestDNSServiceAndPolicySelectTheResolver(t *testing.T) {
	pod, svc := dnsPod(), dnsService()
	if svc.Namespace != pod.Namespace || svc.Spec.ClusterIP != DNSServiceIP || svc.Name != "kube-dns" {
		t.Errorf("service %s/%s at %s", svc.Namespace, svc.Name, svc.Spec.ClusterIP)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
		t.Errorf("service selector %v does not select the resolver pod %v", svc.Spec.Selector, pod.Labels)
	}
	ports := map[corev1.Protocol]int32{}
	for _, p := range svc.Spec.Ports {
		ports[p.Protocol] = p.TargetPort.IntVal
	}
	if ports[corev1.ProtocolUDP] != 53 || ports[corev1.ProtocolTCP] != 53 {
		t.Errorf("service ports %v", svc.Spec.Ports)
	}
	rule := manifests.DNSEgressRule()
	peer := rule.To[0]
	nsSel, _ := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
	podSel, _ := metav1.LabelSelectorAsSelector(peer.PodSelector)
	if !nsSel.Matches(labels.Set{"kubernetes.io/metadata.name": pod.Namespace}) || !podSel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("the tenants' DNS egress rule %v does not allow the resolver pod %s/%s %v", peer, pod.Namespace, pod.Name, pod.Labels)
	}
	if pod.Spec.DNSPolicy != corev1.DNSDefault {
		t.Errorf("resolver dnsPolicy %q: it must not name itself as its resolver", pod.Spec.DNSPolicy)
	}
}

func TestResolverTarget(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()

	// Missing: created, and nothing to point at yet.
	ip, did, err := resolverTarget(ctx, cs)
	if err != nil || ip != "" || !strings.Contains(did, "created") {
		t.Fatalf("missing pod: %q %q %v", ip, did, err)
	}
	p, err := cs.CoreV1().Pods(DNSNamespace).Get(ctx, DNSPodName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the resolver pod was not created: %v", err)
	}

	// Pending: nowhere.
	if ip, did, err := resolverTarget(ctx, cs); ip != "" || did != "" || err != nil {
		t.Errorf("pending pod: %q %q %v", ip, did, err)
	}

	// Running: its address.
	p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "10.213.7.12"
	if _, err := cs.CoreV1().Pods(DNSNamespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ip, did, err := resolverTarget(ctx, cs); ip != "10.213.7.12" || did != "" || err != nil {
		t.Errorf("running pod: %q %q %v", ip, did, err)
	}

	// Ended: deleted, so that the next look creates it again.
	p.Status.Phase = corev1.PodFailed
	if _, err := cs.CoreV1().Pods(DNSNamespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ip, did, err := resolverTarget(ctx, cs); ip != "" || !strings.Contains(did, "deleted") || err != nil {
		t.Errorf("failed pod: %q %q %v", ip, did, err)
	}
	if _, err := cs.CoreV1().Pods(DNSNamespace).Get(ctx, DNSPodName, metav1.GetOptions{}); err == nil {
		t.Error("the ended resolver pod is still there")
	}
}

func TestEnsureDNSService(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	for i := 0; i < 2; i++ { // the second finds it there
		if err := ensureDNSService(ctx, cs); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	svc, err := cs.CoreV1().Services(DNSNamespace).Get(ctx, DNSServiceName, metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != DNSServiceIP {
		t.Errorf("kube-dns Service: %v %v", svc, err)
	}
	// A kube-dns Service at another address is not taken for Paddock's.
	other := dnsService()
	other.Spec.ClusterIP = "10.96.0.53"
	cs = fake.NewClientset(other)
	if err := ensureDNSService(ctx, cs); err == nil || !strings.Contains(err.Error(), `clusterIP "10.96.0.53"`) {
		t.Errorf("kube-dns at another address: %v", err)
	}
}

// The resolver's Corefile, served by the pinned CoreDNS on loopback: the probe
// name has its address (whatever the case of the question), no AAAA (NODATA), and
// every other name, such as the first name of a pod's search path, does not
// exist (NXDOMAIN, not SERVFAIL: resolvers then try the next search domain).
func TestCorefileAnswers(t *testing.T) {
	bin, err := paths.Tool("coredns")
	if err != nil {
		t.Skipf("the pinned CoreDNS is not built (make tools): %v", err)
	}
	dir := t.TempDir()
	// The pod's Corefile, with the hosts ConfigMap's directory in the test's.
	cf := strings.ReplaceAll(resolverCorefile(), dnsHostsDir, dir)
	if err := os.WriteFile(dir+"/hosts", []byte("10.215.1.2 llm.allowed.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cf, "'") {
		t.Fatalf("the Corefile holds a single quote, which the pod's sh command cannot carry:\n%s", cf)
	}
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.LocalAddr().(*net.UDPAddr).Port
	l.Close()
	if err := os.WriteFile(dir+"/Corefile", []byte(strings.Replace(cf, ".:53 {", fmt.Sprintf(".:%d {\n  bind 127.0.0.1", port), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-conf", dir+"/Corefile")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	ask := func(name string, qt dnsmessage.Type) (dnsmessage.RCode, []string, error) {
		q, err := (&dnsmessage.Message{
			Header:    dnsmessage.Header{ID: 7, RecursionDesired: true},
			Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: qt, Class: dnsmessage.ClassINET}},
		}).Pack()
		if err != nil {
			return 0, nil, err
		}
		c, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return 0, nil, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(q); err != nil {
			return 0, nil, err
		}
		buf := make([]byte, 1500)
		n, err := c.Read(buf)
		if err != nil {
			return 0, nil, err
		}
		var m dnsmessage.Message
		if err := m.Unpack(buf[:n]); err != nil {
			return 0, nil, err
		}
		var as []string
		for _, a := range m.Answers {
			if r, ok := a.Body.(*dnsmessage.AResource); ok {
				as = append(as, net.IP(r.A[:]).String())
			}
		}
		return m.RCode, as, nil
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, err := ask(DNSProbeName+".", dnsmessage.TypeA); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("CoreDNS did not answer within 20s (%v):\n%s", err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct {
		name  string
		qt    dnsmessage.Type
		rcode dnsmessage.RCode
		addrs []string
	}{
		{DNSProbeName + ".", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{DNSProbeAddress}},
		{strings.ToUpper(DNSProbeName) + ".", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{DNSProbeAddress}},
		{DNSProbeName + ".", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, nil},
		{"kubernetes.default.agents-team-a.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
		{"xkubernetes.default.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
		{"example.com.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
		{"llm.allowed.test.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.215.1.2"}},
		{"other.allowed.test.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
	} {
		rc, addrs, err := ask(c.name, c.qt)
		if err != nil || rc != c.rcode || !reflect.DeepEqual(addrs, c.addrs) {
			t.Errorf("%s %s: %v %v (err %v), want %v %v", c.name, c.qt, rc, addrs, err, c.rcode, c.addrs)
		}
	}
}

// The local node's CoreDNS compiles in only the plugins tools/coredns/main.go lists
// (a Corefile naming any other fails to start): every directive CorefileFor writes,
// and the bind TestCorefileAnswers adds, must be one of them, each with its import.
func TestCorefileUsesBuiltPlugins(t *testing.T) {
	src, err := os.ReadFile("../../tools/coredns/main.go")
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)
	list, ok := strings.CutPrefix(body[strings.Index(body, "var directives = []string{"):], "var directives = []string{")
	if !ok {
		t.Fatal("tools/coredns/main.go has no `var directives = []string{` list")
	}
	built := map[string]bool{}
	for _, line := range strings.Split(list[:strings.Index(list, "}")], "\n") {
		if name := strings.Trim(strings.TrimSpace(line), `",`); name != "" {
			built[name] = true
			if !strings.Contains(body, `"github.com/coredns/coredns/plugin/`+name+`"`) {
				t.Errorf("tools/coredns/main.go lists directive %q but does not import its plugin", name)
			}
		}
	}
	used := map[string]bool{"bind": true}
	cf := resolverCorefile()
	for _, line := range strings.Split(cf, "\n") {
		// A directive opens a line of the server block, indented once.
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.TrimSpace(line) != "}" {
			used[strings.Fields(line)[0]] = true
		}
	}
	if len(used) < 3 {
		t.Fatalf("found only %v as directives in the Corefile:\n%s", used, cf)
	}
	for d := range used {
		if !built[d] {
			t.Errorf("the Corefile uses plugin %q, which tools/coredns/main.go does not build in (add it to its imports and directives)", d)
		}
	}
}
