// Package model holds the typed form of a Paddock spec: plain Go values with the
// hardened defaults already applied. It is the one thing every later stage
// (policy, components, engine, verify) reads; nothing downstream goes back to HCL.
package model

// Platform is one declared agent platform: where it runs, the pinned Agent Sandbox
// release, the runtime classes and the tenants (one trust boundary each).
type Platform struct {
	Name           string
	Target         Target
	AgentSandbox   AgentSandboxRelease
	RuntimeClasses []RuntimeClass
	Tenants        []Tenant
	Waivers        []Waiver
}

// TargetKind says where the platform is provisioned.
type TargetKind string

const (
	// TargetLocal is the embedded local cluster (kwok nodes, real control plane).
	TargetLocal TargetKind = "local"
	// TargetKubeconfig is an existing cluster reached through a kubeconfig.
	TargetKubeconfig TargetKind = "kubeconfig"
)

// Target is where the in-cluster layer goes.
type Target struct {
	Kind TargetKind
	// Kubeconfig and Context select an existing cluster (TargetKubeconfig). For
	// TargetLocal the engine fills Kubeconfig from the running local cluster.
	Kubeconfig string
	Context    string
	Src        Range
}

// AgentSandboxRelease is the pinned sigs.k8s.io/agent-sandbox install.
type AgentSandboxRelease struct {
	Version string
	// Image is the controller image, pinned to the release (tag, optionally @digest).
	Image string
	Src   Range
}

// Toleration mirrors the Kubernetes toleration fields Paddock sets.
type Toleration struct {
	Key      string
	Operator string // "Equal" or "Exists"
	Value    string
	Effect   string
}

// RuntimeClass is a sandbox runtime exposed to the scheduler, with the scheduling
// that pins its pods onto the node pool that provides it.
type RuntimeClass struct {
	Name         string
	Handler      string
	NodeSelector map[string]string
	Tolerations  []Toleration
	Src          Range
}

// Tenant is one trust boundary: its own namespace, identity, templates and pools.
type Tenant struct {
	Name      string
	Namespace string
	Templates []Template
	WarmPools []WarmPool
	Src       Range
}

// Resources are per-container requests and limits (Kubernetes quantity strings).
type Resources struct {
	RequestsCPU              string
	RequestsMemory           string
	RequestsEphemeralStorage string
	LimitsCPU                string
	LimitsMemory             string
	LimitsEphemeralStorage   string
}

// Template is a hardened SandboxTemplate. The security context is not a field:
// components always render non-root, seccomp RuntimeDefault, no privilege
// escalation, read-only root and all capabilities dropped. Loosening one needs a
// waiver (policy), never a template knob.
type Template struct {
	Name         string
	Image        string
	Command      []string
	Args         []string
	RuntimeClass string
	RunAsUser    int64
	Resources    Resources
	// TmpSize is the size limit of the writable /tmp emptyDir (read-only root needs one).
	TmpSize string
	Src     Range
}

// WarmPool keeps Replicas pre-created sandboxes of one template of its own tenant.
type WarmPool struct {
	Name     string
	Template string
	Replicas int32
	Src      Range
}

// Waiver is an explicit, reasoned exception to one policy rule.
type Waiver struct {
	Rule    string
	Reason  string
	Expires string // RFC 3339 date, optional
	Src     Range
}

// Range is where a model value came from in the spec, so policy findings and
// later-stage errors can point back at file:line:col without importing HCL.
type Range struct {
	Filename string
	Line     int
	Column   int
}

// Known reports whether the range points somewhere.
func (r Range) Known() bool { return r.Filename != "" }
