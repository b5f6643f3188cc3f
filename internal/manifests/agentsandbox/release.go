// Package agentsandbox carries the pinned Agent Sandbox release manifests (rendered
// from the module's k8s/ kustomization by hack/agentsandbox-manifests) and turns
// them into the objects Paddock installs.
package agentsandbox

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/paddock-platform/paddock/internal/pins"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

//go:embed release-*.yaml
var releases embed.FS

const (
	// Namespace is where the release puts its controller.
	Namespace = "agent-sandbox-system"
	// ControllerDeployment is the controller's Deployment name in the release.
	ControllerDeployment = "agent-sandbox-controller"
	imagePlaceholder     = "ko://sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller"
	// VersionLabel carries the release version on every object of the release:
	// the local stack's supervisor reads it from the controller Deployment to
	// run the matching controller build, and `up` reads it to know which
	// release is installed.
	VersionLabel = "app.kubernetes.io/version"
	// controllerBinary is the pinned release's controller, as tools/agent-sandbox
	// names it in PADDOCK_HOME/bin.
	controllerBinary = "agent-sandbox-controller"
)

// ControllerBinary is the name, in PADDOCK_HOME/bin, of the controller build of
// release version: the pinned release's is agent-sandbox-controller (make tools),
// any other's carries its version (agent-sandbox-controller-v0.5.5, built by
// tools/agent-sandbox-previous for tests). An empty version is the pinned one.
func ControllerBinary(version string) string {
	if version == "" || version == pins.AgentSandbox {
		return controllerBinary
	}
	return controllerBinary + "-" + version
}

// Versions lists the releases embedded in this binary.
func Versions() []string {
	entries, _ := releases.ReadDir(".")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(e.Name(), "release-"), ".yaml"))
	}
	return out
}

// SkipAwaitAnnotation tells the kubernetes provider not to wait for an
// object to become ready.
const SkipAwaitAnnotation = "pulumi.com/skipAwait"

// PodNameHashLabel is the label the pinned controller stamps on every
// sandbox's pod (its controllers.SandboxNameHashLabel, which this module does
// not import: that package brings the controller's whole dependency tree).
const PodNameHashLabel = "agents.x-k8s.io/sandbox-name-hash"

// Options shape the release for a target.
type Options struct {
	// Image replaces the ko:// placeholder: the pinned controller image.
	Image string
	// ControllerReplicas overrides the Deployment's replicas when non-nil. The local
	// target sets 0: no container runtime can run the image there, and the real
	// controller runs outside the cluster against the same API server instead.
	ControllerReplicas *int64
	// Labels are added to every object (ownership labels).
	Labels map[string]string
	// ControllerArgs are appended to the controller container's args.
	ControllerArgs []string
}

// Objects parses the embedded release of version and applies opts. The result is in
// the release's own order (namespace first, CRDs after RBAC).
func Objects(version string, opts Options) ([]*unstructured.Unstructured, error) {
	docs, err := parsed(version)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, doc := range docs {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(doc)}
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range opts.Labels {
			l[k] = v
		}
		l[VersionLabel] = version
		u.SetLabels(l)
		if u.GetKind() == "Deployment" && u.GetName() == ControllerDeployment {
			if err := shapeController(u, opts); err != nil {
				return nil, err
			}
		}
		if (u.GetKind() == "Service" || u.GetKind() == "Deployment") && opts.ControllerReplicas != nil && *opts.ControllerReplicas == 0 {
			// No pod will ever back the controller here: waiting for its
			// rollout and its Services' endpoints would only hold up every
			// first up (and warn that replicas are 0 on every run).
			a := u.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[SkipAwaitAnnotation] = "true"
			u.SetAnnotations(a)
		}
		out = append(out, u)
	}
	return out, nil
}

// releaseCache holds each embedded release, parsed once: parsing the
// manifests costs far more than everything else `render` and policy do, and
// they never change within a process. Callers get deep copies.
var releaseCache struct {
	sync.Mutex
	docs map[string][]map[string]any
}

func parsed(version string) ([]map[string]any, error) {
	releaseCache.Lock()
	defer releaseCache.Unlock()
	if docs, ok := releaseCache.docs[version]; ok {
		return docs, nil
	}
	raw, err := releases.ReadFile("release-" + version + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("agent sandbox %s is not embedded in this paddock build (embedded: %s)", version, strings.Join(Versions(), ", "))
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var docs []map[string]any
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("embedded agent sandbox %s: %w", version, err)
		}
		if len(m) == 0 {
			continue
		}
		docs = append(docs, m)
	}
	if releaseCache.docs == nil {
		releaseCache.docs = map[string][]map[string]any{}
	}
	releaseCache.docs[version] = docs
	return docs, nil
}

func shapeController(u *unstructured.Unstructured, opts Options) error {
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	replaced := false
	for _, c := range containers {
		cm, ok := c.(map[string]any)
		if ok && cm["image"] == imagePlaceholder {
			if opts.Image == "" {
				return fmt.Errorf("agent sandbox controller image is not set")
			}
			cm["image"] = opts.Image
			replaced = true
			if len(opts.ControllerArgs) > 0 {
				args, _ := cm["args"].([]any)
				for _, a := range opts.ControllerArgs {
					args = append(args, a)
				}
				cm["args"] = args
			}
		}
	}
	if !replaced {
		return fmt.Errorf("agent sandbox release has no %s placeholder to pin", imagePlaceholder)
	}
	if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return err
	}
	if opts.ControllerReplicas != nil {
		return unstructured.SetNestedField(u.Object, *opts.ControllerReplicas, "spec", "replicas")
	}
	return nil
}

// MetricsEndpoint is where the release's controller serves its Prometheus
// metrics: the Service in front of the controller, its selector labels and
// the name of its metrics port, read from the embedded release manifest so
// a new release that moves them is followed, not contradicted.
type MetricsEndpoint struct {
	Service  string
	Labels   map[string]string
	PortName string
}

// metricsPortName is the port name the release gives the controller's
// metrics (Service and container alike).
const metricsPortName = "metrics"

// Metrics finds the controller's metrics Service in release version.
func Metrics(version string) (MetricsEndpoint, error) {
	docs, err := parsed(version)
	if err != nil {
		return MetricsEndpoint{}, err
	}
	for _, doc := range docs {
		u := &unstructured.Unstructured{Object: doc}
		if u.GetKind() != "Service" || u.GetNamespace() != Namespace {
			continue
		}
		ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
		for _, p := range ports {
			if m, _ := p.(map[string]any); m != nil && m["name"] == metricsPortName {
				return MetricsEndpoint{Service: u.GetName(), Labels: u.GetLabels(), PortName: metricsPortName}, nil
			}
		}
	}
	return MetricsEndpoint{}, fmt.Errorf("agent sandbox %s: the release has no Service with a %q port in %s", version, metricsPortName, Namespace)
}

// ReportsPoolGeneration reports whether the release's SandboxWarmPool CRD has
// status.observedGeneration (v0.5.6 on): only then does its controller say
// which generation of a pool its status describes. False for a release this
// build does not carry.
func ReportsPoolGeneration(version string) bool {
	docs, err := parsed(version)
	if err != nil {
		return false
	}
	for _, doc := range docs {
		u := unstructured.Unstructured{Object: doc}
		if u.GetKind() != "CustomResourceDefinition" || u.GetName() != warmPoolCRD {
			continue
		}
		versions, _, _ := unstructured.NestedSlice(doc, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			if storage, _ := m["storage"].(bool); !storage {
				continue
			}
			_, found, _ := unstructured.NestedFieldNoCopy(m, "schema", "openAPIV3Schema", "properties", "status", "properties", "observedGeneration")
			return found
		}
	}
	return false
}

const warmPoolCRD = "sandboxwarmpools.extensions.agents.x-k8s.io"
