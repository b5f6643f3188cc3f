package replacement

import (
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/pins"
)

const (
	cluster  = "gcp:container/cluster:Cluster"
	nodePool = "gcp:container/nodePool:NodePool"
)

func load(t *testing.T) *Schema {
	t.Helper()
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The rules are those of the pinned provider: the fixture says which version
// it was read from, and must be re-read when the pin moves.
func TestSchemaIsThePinnedProviders(t *testing.T) {
	s := load(t)
	if s.PulumiGCP != pins.PulumiGCP {
		t.Fatalf("forcenew.json was read for pulumi-gcp %s, the pin is %s: re-read it", s.PulumiGCP, pins.PulumiGCP)
	}
	if len(s.Provenance) == 0 || s.Provider == "" {
		t.Error("forcenew.json does not say where it was read")
	}
	for _, typ := range []string{cluster, nodePool} {
		if len(s.Resources[typ].Replace) == 0 {
			t.Errorf("no replacement rule for %s", typ)
		}
		for _, r := range s.Resources[typ].Replace {
			if r.When != "" && r.When != "disabled" {
				t.Errorf("%s %s: unknown when %q", typ, r.Path, r.When)
			}
		}
	}
}

func TestReplacements(t *testing.T) {
	s := load(t)
	base := func() map[string]any {
		return map[string]any{
			"name": "c", "project": "p", "location": "europe-west4", "datapathProvider": "ADVANCED_DATAPATH",
			"privateClusterConfig":    map[string]any{"enablePrivateNodes": true, "enablePrivateEndpoint": false, "masterIpv4CidrBlock": "172.16.0.0/28"},
			"enableFqdnNetworkPolicy": true,
			"releaseChannel":          map[string]any{"channel": "REGULAR"},
		}
	}
	for _, c := range []struct {
		name   string
		mutate func(m map[string]any)
		want   string // the path that replaces, "" for none
	}{
		{"unchanged", func(map[string]any) {}, ""},
		{"in place: release channel", func(m map[string]any) { m["releaseChannel"] = map[string]any{"channel": "STABLE"} }, ""},
		{"in place: private endpoint", func(m map[string]any) { m["privateClusterConfig"].(map[string]any)["enablePrivateEndpoint"] = true }, ""},
		{"fqdn policy off", func(m map[string]any) { m["enableFqdnNetworkPolicy"] = false }, "enableFqdnNetworkPolicy"},
		{"fqdn policy dropped", func(m map[string]any) { delete(m, "enableFqdnNetworkPolicy") }, "enableFqdnNetworkPolicy"},
		{"public nodes", func(m map[string]any) { m["privateClusterConfig"].(map[string]any)["enablePrivateNodes"] = false }, "privateClusterConfig.enablePrivateNodes"},
		{"legacy datapath", func(m map[string]any) { m["datapathProvider"] = "LEGACY_DATAPATH" }, "datapathProvider"},
		{"unknown new value", func(m map[string]any) { m["datapathProvider"] = Unknown }, ""},
		{"bridge bookkeeping", func(m map[string]any) { m["__defaults"] = []any{"x"} }, ""},
	} {
		old, new := base(), base()
		c.mutate(new)
		got := s.Replacements(cluster, old, new)
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: replacements %v, want none", c.name, got)
		case c.want != "" && (len(got) != 1 || got[0].Path != c.want):
			t.Errorf("%s: replacements %v, want %s", c.name, got, c.want)
		}
	}

	// Turning FQDN network policy on is an in-place update.
	old, new := base(), base()
	delete(old, "enableFqdnNetworkPolicy")
	if got := s.Replacements(cluster, old, new); len(got) != 0 {
		t.Errorf("enabling FQDN network policy replaces: %v", got)
	}
	// The bridge records Terraform defaults: an absent input equals its default.
	old["enableFqdnNetworkPolicy"] = false
	delete(new, "enableFqdnNetworkPolicy")
	if got := s.Replacements(cluster, old, new); len(got) != 0 {
		t.Errorf("default against absent: %v", got)
	}
}

func TestNodePoolReplacements(t *testing.T) {
	s := load(t)
	gvisor := func() map[string]any {
		return map[string]any{
			"name": "sandboxes", "cluster": "c",
			"nodeConfig": map[string]any{
				"machineType": "e2-standard-8", "imageType": "COS_CONTAINERD",
				"oauthScopes":   []any{"https://www.googleapis.com/auth/cloud-platform", "x"},
				"sandboxConfig": map[string]any{"sandboxType": "gvisor"},
				"metadata":      map[string]any{"disable-legacy-endpoints": "true"},
				"labels":        map[string]any{},
			},
		}
	}
	kvm := gvisor()
	nc := kvm["nodeConfig"].(map[string]any)
	delete(nc, "sandboxConfig")
	nc["advancedMachineFeatures"] = map[string]any{"enableNestedVirtualization": true, "threadsPerCore": 0}
	got := s.Replacements(nodePool, gvisor(), kvm)
	var paths []string
	for _, c := range got {
		paths = append(paths, c.Path)
	}
	if strings.Join(paths, " ") != "nodeConfig.sandboxConfig.sandboxType nodeConfig.advancedMachineFeatures.enableNestedVirtualization" {
		t.Errorf("gVisor to KVM: %v", paths)
	}

	moved := gvisor()
	moved["nodeConfig"].(map[string]any)["machineType"] = "e2-standard-16"
	moved["nodeConfig"].(map[string]any)["labels"] = map[string]any{"team": "a"}
	moved["nodeConfig"].(map[string]any)["oauthScopes"] = []any{"x", "https://www.googleapis.com/auth/cloud-platform"}
	if got := s.Replacements(nodePool, gvisor(), moved); len(got) != 0 {
		t.Errorf("machine type, labels and reordered scopes replace: %v", got)
	}
	smt := gvisor()
	smt["nodeConfig"].(map[string]any)["serviceAccount"] = Unknown
	if got := s.Replacements(nodePool, gvisor(), smt); len(got) != 0 {
		t.Errorf("an unknown service account is a replacement: %v", got)
	}
}

func TestClassified(t *testing.T) {
	s := load(t)
	for path, want := range map[string]bool{
		"nodeConfig.labels[team]":            true,
		"nodeConfig.taints[0].effect":        true,
		"nodeConfig.metadata.x":              true,
		"nodeConfig.machineTypeX":            false,
		"nodeConfig.guestAccelerators[0].ty": false,
	} {
		if got := s.Classified(nodePool, path); got != want {
			t.Errorf("Classified(%s) = %v, want %v", path, got, want)
		}
	}
}
