package gcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/pins"
)

const tFirewall = "gcp:compute/firewall:Firewall"

// On a private cluster GKE lets the control plane reach the nodes on 443 and
// 10250 only; the Agent Sandbox release's conversion webhook listens on 9443.
// Paddock opens exactly that port, from exactly the control plane's range, to
// exactly the nodes of this cluster (by their service account).
func TestMockControlPlaneReachesTheWebhook(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	fws := m.OfType(tFirewall)
	if len(fws) != 1 {
		t.Fatalf("%d firewall rules on a private cluster, want 1", len(fws))
	}
	fw := fws[0]
	if fw.Parent != "paddock:gcp:Cluster::demo" {
		t.Errorf("firewall parented to %s", fw.Parent)
	}
	fw.WantString(t, "project", "paddock-demo")
	fw.WantString(t, "network", "default")
	fw.WantString(t, "name", "demo-control-plane-webhooks")
	fw.WantString(t, "direction", "INGRESS")
	if got := fw.StringsAt(t, "sourceRanges"); !reflect.DeepEqual(got, []string{"172.16.0.0/28"}) {
		t.Errorf("source ranges %v, want only the control plane's", got)
	}
	if got := fw.StringsAt(t, "targetServiceAccounts"); !reflect.DeepEqual(got, []string{"demo-nodes@paddock-demo.iam.gserviceaccount.com"}) {
		t.Errorf("targets %v, want only this cluster's nodes", got)
	}
	if n := len(fw.Get(t, "allows").ArrayValue()); n != 1 {
		t.Fatalf("%d allow blocks", n)
	}
	fw.WantString(t, "allows[0].protocol", "tcp")
	if got := fw.StringsAt(t, "allows[0].ports"); !reflect.DeepEqual(got, []string{"9443"}) {
		t.Errorf("ports %v, want only the webhook's", got)
	}
	fw.Absent(t, "denies")
	fw.Absent(t, "sourceTags")
	fw.Absent(t, "targetTags")

	// The cluster's own network, when it names one.
	p := gvisorPlatform()
	p.Cluster.Network, p.Cluster.MasterCIDR = "projects/paddock-demo/global/networks/agents", "10.0.0.16/28"
	m, _ = runPlatform(t, p)
	fw = m.Find(t, tFirewall, "demo-control-plane-webhooks")
	fw.WantString(t, "network", "projects/paddock-demo/global/networks/agents")
	if got := fw.StringsAt(t, "sourceRanges"); !reflect.DeepEqual(got, []string{"10.0.0.16/28"}) {
		t.Errorf("source ranges %v", got)
	}

	// Public nodes: GKE's own rules already let the control plane in.
	p = gvisorPlatform()
	p.Cluster.PublicNodes = true
	m, _ = runPlatform(t, p)
	if fws := m.OfType(tFirewall); len(fws) != 0 {
		t.Errorf("%d firewall rules on a cluster with public nodes", len(fws))
	}
}

// The firewall rule is registered by its token, without the generated
// compute package (13 MB of source, three times container's): its token and
// every input name must be the pinned SDK's own, read from the SDK's source.
func TestFirewallInputsAreThePinnedSDKs(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/pulumi/pulumi-gcp/sdk/v7").Output()
	if err != nil {
		t.Fatalf("go list the pulumi-gcp SDK: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "go", "gcp", "compute")
	if v, _ := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/pulumi/pulumi-gcp/sdk/v7").Output(); strings.TrimSpace(string(v)) != "v"+pins.PulumiGCP {
		t.Fatalf("pulumi-gcp SDK %s, pin %s", v, pins.PulumiGCP)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	firewall, types := read("firewall.go"), read("pulumiTypes.go")
	if !strings.Contains(firewall, `ctx.RegisterResource("`+firewallToken+`"`) {
		t.Errorf("the SDK registers no %s", firewallToken)
	}
	argsBlock := regexp.MustCompile(`(?s)type firewallArgs struct \{(.*?)\n\}`).FindStringSubmatch(firewall)
	allowBlock := regexp.MustCompile(`(?s)type FirewallAllow struct \{(.*?)\n\}`).FindStringSubmatch(types)
	if argsBlock == nil || allowBlock == nil {
		t.Fatal("firewallArgs or FirewallAllow not found in the SDK source")
	}
	m, _ := runPlatform(t, gvisorPlatform())
	fw := m.Find(t, tFirewall, "demo-control-plane-webhooks")
	for k := range fw.Inputs {
		if !strings.Contains(argsBlock[1], `pulumi:"`+string(k)+`"`) {
			t.Errorf("input %q is not an input of the SDK's firewall", k)
		}
	}
	for k := range fw.Get(t, "allows[0]").ObjectValue() {
		if !strings.Contains(allowBlock[1], `pulumi:"`+string(k)+`"`) {
			t.Errorf("allow field %q is not the SDK's", k)
		}
	}
}
