package localcluster

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestRealNodeSupportSaysWhy(t *testing.T) {
	ok := machineFacts{GOOS: "linux", EUID: 0, CgroupV1: true, OverlayFS: true}
	if why := realNodeSupport(ok); why != "" {
		t.Fatalf("a capable machine was refused: %s", why)
	}
	for _, tc := range []struct {
		name string
		f    func(*machineFacts)
		want string
	}{
		{"macOS", func(f *machineFacts) { f.GOOS = "darwin" }, "needs Linux (this is darwin)"},
		{"no root", func(f *machineFacts) { f.EUID = 1000 }, "needs root"},
		{"no cgroups", func(f *machineFacts) { f.CgroupV1 = false }, "no cgroup hierarchy"},
		{"no overlay", func(f *machineFacts) { f.OverlayFS = false }, "overlay"},
		{"tools", func(f *machineFacts) { f.MissingTools = []string{"kubelet", "runsc"} }, "pinned tools not built: kubelet, runsc (run `make tools`)"},
		{"packages", func(f *machineFacts) { f.MissingFiles = []string{"/usr/sbin/runc"} }, "missing /usr/sbin/runc (run `make node-packages`)"},
		{"route", func(f *machineFacts) { f.RouteConflict = "10.213.0.0/16 dev eth0" }, "overlaps a route of this machine (10.213.0.0/16 dev eth0)"},
		{"another node", func(f *machineFacts) { f.OtherNode = "paddock" }, `the real node of local cluster "paddock" runs on this machine`},
	} {
		f := ok
		tc.f(&f)
		if why := realNodeSupport(f); !strings.Contains(why, tc.want) {
			t.Errorf("%s: why = %q, want it to contain %q", tc.name, why, tc.want)
		}
	}
}

func TestPlanNodeNet(t *testing.T) {
	a, b := planNodeNet("paddock"), planNodeNet("paddock")
	if a != b {
		t.Fatalf("not deterministic: %v vs %v", a, b)
	}
	if len(a.Bridge) > 15 || !strings.HasPrefix(a.Bridge, "pdk-") {
		t.Errorf("bridge %q: want pdk-… of at most 15 bytes (IFNAMSIZ)", a.Bridge)
	}
	_, n, err := net.ParseCIDR(a.Subnet)
	if err != nil || !n.Contains(net.ParseIP(a.NodeIP)) || !strings.HasPrefix(a.Subnet, "10.213.") {
		t.Errorf("subnet %s / node IP %s: want the node IP inside a /24 of 10.213.0.0/16", a.Subnet, a.NodeIP)
	}
}

func TestOverlappingRoute(t *testing.T) {
	_, want, _ := net.ParseCIDR("10.213.7.0/24")
	routes := `default via 172.16.0.1 dev eth0
172.16.0.0/24 dev eth0 proto kernel scope link src 172.16.0.2
10.213.7.0/24 dev pdk-1234abcd proto kernel scope link src 10.213.7.1
local 10.213.7.1 dev pdk-1234abcd table local proto kernel scope host src 10.213.7.1
`
	if got := overlappingRoute(routes, want, "pdk-1234abcd"); got != "" {
		t.Errorf("the node's own bridge counted as a conflict: %q", got)
	}
	if got := overlappingRoute(routes+"10.0.0.0/8 via 172.16.0.9 dev eth0\n", want, "pdk-1234abcd"); !strings.HasPrefix(got, "10.0.0.0/8") {
		t.Errorf("a covering route was missed: %q", got)
	}
	if got := overlappingRoute(routes+"10.213.7.99 dev tun0\n", want, "pdk-1234abcd"); !strings.HasPrefix(got, "10.213.7.99") {
		t.Errorf("a host route inside the subnet was missed: %q", got)
	}
}

// The rendered containerd configuration is valid TOML, keeps everything under the
// node directory, and has the settings this machine kind needs.
func TestContainerdConfig(t *testing.T) {
	d := nodeDirs{root: "/x/local/node"}
	var cfg map[string]any
	if _, err := toml.Decode(containerdConfigTOML(d), &cfg); err != nil {
		t.Fatalf("containerd config is not TOML: %v", err)
	}
	for _, k := range []string{"root", "state"} {
		if !strings.HasPrefix(cfg[k].(string), d.root+"/") {
			t.Errorf("%s = %v: want it under %s", k, cfg[k], d.root)
		}
	}
	plugins := cfg["plugins"].(map[string]any)
	rt := plugins["io.containerd.cri.v1.runtime"].(map[string]any)
	if rt["restrict_oom_score_adj"] != true || rt["netns_mounts_under_state_dir"] != true {
		t.Errorf("want restrict_oom_score_adj and netns_mounts_under_state_dir: %v", rt)
	}
	runtimes := rt["containerd"].(map[string]any)["runtimes"].(map[string]any)
	for _, h := range []string{"gvisor", "runsc"} {
		r, ok := runtimes[h].(map[string]any)
		if !ok || r["runtime_type"] != "io.containerd.runsc.v1" || r["options"].(map[string]any)["ConfigPath"] != d.runscConfig() {
			t.Errorf("runtime %q: %v", h, runtimes[h])
		}
	}
	img := plugins["io.containerd.cri.v1.images"].(map[string]any)
	if img["pinned_images"].(map[string]any)["sandbox"] != PauseImage {
		t.Errorf("sandbox image: %v", img)
	}
	var rs map[string]any
	if _, err := toml.Decode(runscConfigTOML(d, "/t/runsc"), &rs); err != nil {
		t.Fatalf("runsc config is not TOML: %v", err)
	}
	if rs["binary_name"] != "/t/runsc" || rs["runsc_config"].(map[string]any)["platform"] != "systrap" {
		t.Errorf("runsc config: %v", rs)
	}
}

func TestKubeletConfig(t *testing.T) {
	d := nodeDirs{root: "/x/node"}
	nn := planNodeNet("paddock")
	k := kubeletConfigYAML(d, "paddock", "/pki/ca.crt", nn)
	for _, want := range []string{"failCgroupV1: false", "cgroupDriver: cgroupfs", "cgroupRoot: /paddock-paddock", "address: " + nn.NodeIP, "readOnlyPort: 0", "enabled: false", `clientCAFile: "/pki/ca.crt"`,
		"registerWithTaints:\n- key: sandbox.gke.io/runtime\n  value: gvisor\n  effect: NoSchedule"} {
		if !strings.Contains(k, want) {
			t.Errorf("kubelet config lacks %q", want)
		}
	}
	args := strings.Join(kubeletArgs(d, "paddock", "/k", nn), " ")
	for _, want := range []string{"sandbox.gke.io/runtime=gvisor,", "--node-ip " + nn.NodeIP, "--root-dir /x/node/kubelet/root"} {
		if !strings.Contains(args, want) {
			t.Errorf("kubelet args lack %q: %s", want, args)
		}
	}
}

// Chains the node created since Up go, with the jumps into them; those that
// were there before stay. The sample is what a node of the kube-router era left
// (its firewall's chains, a CNI plugin's): Down removes it without kube-router.
func TestChainRemovals(t *testing.T) {
	save := `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:KUBE-OLD - [0:0]
:KUBE-ROUTER-FORWARD - [0:0]
:KUBE-NWPLCY-ABC - [0:0]
-A FORWARD -m comment --comment "kube-router netpol - TEMCG2JMHZYE7H7T" -j KUBE-ROUTER-FORWARD
-A INPUT -j KUBE-OLD
-A KUBE-ROUTER-FORWARD -j KUBE-NWPLCY-ABC
COMMIT
*nat
:POSTROUTING ACCEPT [0:0]
:CNI-1234 - [0:0]
-A POSTROUTING -s 10.213.7.11/32 -j CNI-1234
COMMIT
`
	got := chainRemovals(save, createdSince([]string{"filter/INPUT", "filter/FORWARD", "filter/KUBE-OLD", "nat/POSTROUTING"}))
	want := [][]string{
		{"-t", "filter", "-D", "FORWARD", "-m", "comment", "--comment", "kube-router netpol - TEMCG2JMHZYE7H7T", "-j", "KUBE-ROUTER-FORWARD"},
		{"-t", "nat", "-D", "POSTROUTING", "-s", "10.213.7.11/32", "-j", "CNI-1234"},
		{"-t", "filter", "-F", "KUBE-NWPLCY-ABC"},
		{"-t", "filter", "-F", "KUBE-ROUTER-FORWARD"},
		{"-t", "nat", "-F", "CNI-1234"},
		{"-t", "filter", "-X", "KUBE-NWPLCY-ABC"},
		{"-t", "filter", "-X", "KUBE-ROUTER-FORWARD"},
		{"-t", "nat", "-X", "CNI-1234"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chainRemovals:\n got %q\nwant %q", got, want)
	}
	if got := chainRemovals(save, createdSince(parseChains(save))); got != nil {
		t.Errorf("chains that existed before Up must stay: %q", got)
	}
}

func TestOwnedCNIResult(t *testing.T) {
	id := strings.Repeat("ab", 32)
	other := strings.Repeat("cd", 32)
	ids := map[string]bool{id: true}
	for name, want := range map[string]bool{
		"paddock-pdk-1-" + other + "-eth0": true,  // the node's network
		"cni-loopback-" + id + "-lo":       true,  // containerd's loopback, a sandbox of this node
		"cni-loopback-" + other + "-lo":    false, // someone else's
		"other-net-" + id[:10] + "-eth0":   false,
	} {
		if got := ownedCNIResult(name, "paddock-pdk-1", ids); got != want {
			t.Errorf("ownedCNIResult(%s) = %v, want %v", name, got, want)
		}
	}
	// A Cilium node has no network of its own name: its sandboxes tell.
	for name, want := range map[string]bool{
		"cilium-" + id + "-eth0":    true,
		"cilium-" + other + "-eth0": false,
		"-" + other + "-eth0":       false,
	} {
		if got := ownedCNIResult(name, "", ids); got != want {
			t.Errorf("ownedCNIResult(%s, no network) = %v, want %v", name, got, want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/a\040b/c`); got != "/a b/c" {
		t.Errorf("got %q", got)
	}
}

// The image archive is a docker-archive containerd can import: a manifest naming
// the config and the layer, the config's diff_id is the layer's digest, and the
// layer holds busybox and its applet links. Two builds are byte-identical.
func TestDockerArchive(t *testing.T) {
	layer, err := rootfsLayer([]byte("\x7fELF fake busybox"), []string{"nc", "sh", "uname"}, map[string][]byte{"coredns": []byte("\x7fELF fake coredns")})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	spec := imageSpec{Ref: SandboxImage, Cmd: []string{"/bin/sh"}}
	if err := dockerArchive(&a, spec, layer); err != nil {
		t.Fatal(err)
	}
	_ = dockerArchive(&b, spec, layer)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two builds of the same image differ")
	}
	files := map[string][]byte{}
	tr := tar.NewReader(&a)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		files[h.Name] = body
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v %s", err, files["manifest.json"])
	}
	m := manifest[0]
	if !reflect.DeepEqual(m.RepoTags, []string{SandboxImage}) || len(m.Layers) != 1 {
		t.Errorf("manifest: %+v", m)
	}
	var cfg struct {
		OS     string `json:"os"`
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
		Config struct{ Cmd []string }
	}
	if err := json.Unmarshal(files[m.Config], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.RootFS.DiffIDs[0] != "sha256:"+sha(files[m.Layers[0]]) || cfg.Config.Cmd[0] != "/bin/sh" {
		t.Errorf("config: %+v", cfg)
	}
	entries := map[string]string{}
	lr := tar.NewReader(bytes.NewReader(files[m.Layers[0]]))
	for {
		h, err := lr.Next()
		if err != nil {
			break
		}
		entries[h.Name] = h.Linkname
	}
	if _, ok := entries["bin/busybox"]; !ok || entries["bin/nc"] != "busybox" || entries["bin/sh"] != "busybox" {
		t.Errorf("layer entries: %v", entries)
	}
	// A pinned tool the image carries is a file of its own, not an applet link.
	if l, ok := entries["bin/coredns"]; !ok || l != "" {
		t.Errorf("bin/coredns: present %v, link %q; want the binary itself", ok, l)
	}
	if imageFileName(PauseImage) != "localhost_paddock_pause_v1.tar" {
		t.Errorf("imageFileName = %s", imageFileName(PauseImage))
	}
}

// An explicit fake choice never probes the machine; an invalid one is refused.
// kwok is needed only then, and its absence says how to build it.
func TestNodeChoice(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PADDOCK_HOME", home)
	c := New(Options{Nodes: NodesFake, Dir: t.TempDir()}).(*cluster)
	if _, err := c.chooseNodes(map[string]string{}); err == nil || !strings.Contains(err.Error(), "make tool-kwok") {
		t.Errorf("chooseNodes(fake) without kwok built: %v, want an error naming `make tool-kwok`", err)
	}
	kwok := filepath.Join(home, "bin", "kwok")
	if err := os.MkdirAll(filepath.Dir(kwok), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kwok, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{}
	if got, err := c.chooseNodes(bins); got != NodesFake || err != nil || bins["kwok"] != kwok {
		t.Errorf("chooseNodes(fake) = %q, %v, kwok %q", got, err, bins["kwok"])
	}
	if err := New(Options{Nodes: "kvm", Dir: t.TempDir()}).(*cluster).err; err == nil || !strings.Contains(err.Error(), `invalid node kind "kvm"`) {
		t.Errorf("invalid node kind: %v", err)
	}
	if nodesOf(&clusterState{}) != NodesFake || nodesOf(&clusterState{Nodes: NodesReal}) != NodesReal {
		t.Error("state without a node kind must read as fake (clusters created before real nodes)")
	}
}
