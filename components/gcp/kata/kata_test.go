package kata

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	appsv1 "k8s.io/api/apps/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/pins"
)

func kvm() gcpinputs.KataArgs {
	return gcpinputs.KataArgs{
		Scheduling: gcpinputs.MergeScheduling([]gcpinputs.NodePoolArgs{{Isolation: gcpinputs.IsolationKVM}}),
		Labels:     gcpinputs.OwnershipLabels("demo"),
	}
}

func TestImageIsPinnedByVersionAndDigest(t *testing.T) {
	if !strings.HasPrefix(Image, "quay.io/kata-containers/kata-deploy:"+Version+"@sha256:") || len(Image[strings.Index(Image, "@sha256:")+8:]) != 64 {
		t.Errorf("Image %s is not tag+sha256 pinned", Image)
	}
}

func TestObjects(t *testing.T) {
	objs := Objects(kvm())
	var ds *appsv1.DaemonSet
	var rcs []*nodev1.RuntimeClass
	for _, o := range objs {
		switch x := o.(type) {
		case *appsv1.DaemonSet:
			ds = x
		case *nodev1.RuntimeClass:
			rcs = append(rcs, x)
		case *rbacv1.ClusterRole:
			for _, r := range x.Rules {
				for _, res := range r.Resources {
					if res != "nodes" {
						t.Errorf("kata-deploy may touch %s", res)
					}
				}
			}
		}
	}
	if ds == nil || len(rcs) != 2 {
		t.Fatalf("objects: %d, DaemonSet %v, RuntimeClasses %d", len(objs), ds != nil, len(rcs))
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if c.Image != Image {
		t.Errorf("image %s", c.Image)
	}
	if ds.Spec.Template.Spec.NodeSelector[gcpinputs.IsolationKey] != gcpinputs.IsolationKVM {
		t.Errorf("kata-deploy is not confined to KVM nodes: %v", ds.Spec.Template.Spec.NodeSelector)
	}
	if ds.Namespace != Namespace || ds.Labels[gcpinputs.ManagedByLabel] != gcpinputs.ManagedByValue {
		t.Errorf("metadata %+v", ds.ObjectMeta)
	}

	// A mirror and one shim.
	a := kvm()
	a.Image = "europe-docker.pkg.dev/p/mirror/kata-deploy@sha256:" + strings.Repeat("0", 64)
	a.Shims = []string{"clh"}
	for _, o := range Objects(a) {
		switch x := o.(type) {
		case *appsv1.DaemonSet:
			env := map[string]string{}
			for _, e := range x.Spec.Template.Spec.Containers[0].Env {
				env[e.Name] = e.Value
			}
			if x.Spec.Template.Spec.Containers[0].Image != a.Image || env["SHIMS"] != "clh" || env["DEFAULT_SHIM"] != "clh" {
				t.Errorf("override not applied: %s %v", x.Spec.Template.Spec.Containers[0].Image, env)
			}
		case *nodev1.RuntimeClass:
			if x.Name != "kata-clh" || x.Overhead.PodFixed.Memory().String() != "130Mi" {
				t.Errorf("runtime class %s overhead %v", x.Name, x.Overhead)
			}
		}
	}
}

// With ExternalRuntimeClasses the caller owns the RuntimeClasses: the
// install still puts the runtime on the KVM nodes, and creates none.
func TestObjectsExternalRuntimeClasses(t *testing.T) {
	a := kvm()
	a.ExternalRuntimeClasses = true
	a.Shims = []string{"qemu"}
	var ds *appsv1.DaemonSet
	for _, o := range Objects(a) {
		switch x := o.(type) {
		case *nodev1.RuntimeClass:
			t.Errorf("runtime class %s created though the caller owns them", x.Name)
		case *appsv1.DaemonSet:
			ds = x
		}
	}
	if ds == nil {
		t.Fatal("no kata-deploy DaemonSet")
	}
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "SHIMS" && e.Value != "qemu" {
			t.Errorf("shims %q, want qemu", e.Value)
		}
	}
}

// The image is the pin of internal/pins/versions.env, by tag and digest.
func TestImageComesFromPins(t *testing.T) {
	if Image != pins.KataDeployImage+":"+pins.KataDeploy+"@"+pins.KataDeployDigest || Version != pins.KataDeploy {
		t.Errorf("Image %s / Version %s are not the pins", Image, Version)
	}
}

type noMocks struct{ n int }

func (m *noMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	m.n++
	return args.Name, args.Inputs, nil
}
func (m *noMocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) { return args.Args, nil }

// Mock test: without scheduling onto a KVM pool, the install refuses to run
// kata-deploy (privileged, host PID) on every node of the cluster.
func TestMockInstallRefusesUnscheduledDaemonSet(t *testing.T) {
	m := &noMocks{}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := NewInstall(ctx, "kata", &gcpinputs.KataArgs{})
		return err
	}, pulumi.WithMocks("paddock", "test", m))
	if err == nil || !strings.Contains(err.Error(), "every node") {
		t.Fatalf("err = %v", err)
	}
}
