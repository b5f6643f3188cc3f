package gcp

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/components/gcp/kata"
)

const tRepoIAM = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"

// The nodes pull the platform's images as their own service account, which
// GKE's node role does not let read a private Artifact Registry repository:
// it gets roles/artifactregistry.reader on exactly the repositories the
// images name (one grant per repository, the Kata mirror's included), and the
// in-cluster layer, whose warm pools pull them, waits for the grants. Images
// anywhere else are declared as prerequisites, not granted anything.
func TestMockNodesReadTheRepositoriesOfTheirImages(t *testing.T) {
	p := kataPlatform()
	p.Images = []string{
		"europe-docker.pkg.dev/paddock-demo/agents/runtime:1.0",
		"europe-docker.pkg.dev/paddock-demo/agents/tools@sha256:" + strings.Repeat("a", 64),
		"us-central1-docker.pkg.dev/shared-images/base/python/slim:3.12",
		"python:3.12-slim",
		"ghcr.io/example/agent:2",
	}
	p.Kata.Image = "us-docker.pkg.dev/paddock-demo/mirror/kata-deploy:3.20.0@sha256:" + strings.Repeat("0", 64)
	m, c := runPlatform(t, p)

	grants := m.OfType(tRepoIAM)
	got := map[string]bool{}
	for _, g := range grants {
		g.WantString(t, "role", "roles/artifactregistry.reader")
		g.WantString(t, "member", "serviceAccount:vmdemo-nodes@paddock-demo.iam.gserviceaccount.com")
		if g.Parent != "paddock:gcp:Cluster::vmdemo" {
			t.Errorf("grant %s parented to %s, want the cluster (the node identity)", g.Name, g.Parent)
		}
		got[g.Get(t, "location").StringValue()+"/"+g.Get(t, "project").StringValue()+"/"+g.Get(t, "repository").StringValue()] = true
	}
	want := map[string]bool{"europe/paddock-demo/agents": true, "us-central1/shared-images/base": true, "us/paddock-demo/mirror": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reader grants on %v, want exactly %v", got, want)
	}
	prov := m.Find(t, tK8sProv, "vmdemo-gke")
	for _, g := range grants {
		if !slices.Contains(prov.Deps, g.ID()) {
			t.Errorf("the in-cluster layer does not wait for %s", g.Name)
		}
	}
	if pre := c.platform.PullPrerequisites; !reflect.DeepEqual(pre, []string{"ghcr.io/example/agent:2", "python:3.12-slim"}) {
		t.Errorf("pull prerequisites %v", pre)
	}

	// The pinned kata-deploy image (quay.io) is a prerequisite of its own:
	// private nodes pull it through Cloud NAT.
	p = kataPlatform()
	_, c = runPlatform(t, p)
	if pre := c.platform.PullPrerequisites; !reflect.DeepEqual(pre, []string{kata.Image}) {
		t.Errorf("pull prerequisites %v, want the pinned kata-deploy image", pre)
	}
	// No KVM pool, no kata-deploy, nothing from quay.io.
	_, c = runPlatform(t, gvisorPlatform())
	if pre := c.platform.PullPrerequisites; len(pre) != 0 {
		t.Errorf("pull prerequisites %v on a gVisor-only platform without images", pre)
	}
}

// What kata-deploy changes on a node (/opt/kata, containerd's configuration)
// is never cleaned up by Paddock, and need not be: kata-deploy exists exactly
// while a KVM pool does, runs only on that pool's VMs, and is applied through
// the provider that depends on the pools, so `destroy` (and a spec that drops
// the pool) deletes the DaemonSet first and the VMs it touched after.
func TestMockKataLivesAndDiesWithTheKVMPools(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	if n := len(m.OfType("kubernetes:apps/v1:DaemonSet")) + len(m.OfType("paddock:gcp:Kata")); n != 0 {
		t.Errorf("kata-deploy on a platform without a KVM pool (%d objects)", n)
	}
	m, _ = runPlatform(t, kataPlatform())
	ds := m.Find(t, "kubernetes:apps/v1:DaemonSet", "kube-system/kata-deploy")
	if ds.Provider != tK8sProv+"::vmdemo-gke" {
		t.Fatalf("kata-deploy goes through %s", ds.Provider)
	}
	if prov := m.Find(t, tK8sProv, "vmdemo-gke"); !slices.Contains(prov.Deps, tNodePool+"::vmdemo/kata") {
		t.Errorf("the provider of kata-deploy does not depend on the KVM pool: %v", prov.Deps)
	}
}
