// Package model holds the typed form of a Paddock spec: plain Go values with the
// hardened defaults already applied. It is the one thing every later stage
// (policy, components, engine, verify) reads; nothing downstream goes back to HCL.
package model

import (
	"fmt"
	"strings"
	"time"
)

// Platform is one declared agent platform: where it runs, the pinned Agent Sandbox
// release, the runtime classes and the tenants (one trust boundary each).
type Platform struct {
	Name           string
	Target         Target
	AgentSandbox   AgentSandboxRelease
	RuntimeClasses []RuntimeClass
	Tenants        []Tenant
	Waivers        []Waiver
	// TrustedAdmission are the mutating admission objects the spec trusts to
	// rewrite what the platform guards (trust_admission blocks).
	TrustedAdmission []TrustedAdmission

	// Cluster holds the settings of the cluster Paddock creates (TargetGKE only;
	// nil for every other target).
	Cluster *Cluster
	// NodePools are the node pools Paddock creates (TargetGKE only).
	NodePools []NodePool
	// AuditSinks ship the platform's audit trail out of the cluster.
	AuditSinks []AuditSink
	// Observability is the opt-in ServiceMonitor and PrometheusRule (nil:
	// no observability block, nothing rendered).
	Observability *Observability
	// Src is where the platform block is.
	Src Range
	// Attrs are the source ranges of the platform block's arguments.
	Attrs Attrs

	// sensitive holds the string values that came from sensitive variables
	// (MarkSensitive, Redact).
	sensitive map[string]struct{}
}

// TargetKind says where the platform is provisioned.
type TargetKind string

const (
	// TargetLocal is the embedded local cluster (kwok nodes, real control plane).
	TargetLocal TargetKind = "local"
	// TargetKubeconfig is an existing cluster reached through a kubeconfig.
	TargetKubeconfig TargetKind = "kubeconfig"
	// TargetGKE is a GKE cluster Paddock creates (Project, Location, Cluster).
	TargetGKE TargetKind = "gke"
)

// Target is where the in-cluster layer goes.
type Target struct {
	Kind TargetKind
	// Kubeconfig and Context select an existing cluster (TargetKubeconfig). For
	// TargetLocal the engine fills Kubeconfig from the running local cluster.
	Kubeconfig string
	Context    string
	Src        Range

	// Project, Location (a region or zone) and ClusterName locate the GKE
	// cluster of TargetGKE. ClusterName defaults to the platform name.
	Project     string
	Location    string
	ClusterName string
	// FQDNPolicy is how the target's CNI enforces FQDN egress allow-lists:
	// FQDNPolicyCilium (CiliumNetworkPolicy toFQDNs), FQDNPolicyGKE (GKE Dataplane
	// V2 FQDNNetworkPolicy) or FQDNPolicyNone (it cannot: a spec listing FQDNs is
	// refused, use an egress proxy instead).
	FQDNPolicy string
	// Attrs are the source ranges of the target's arguments.
	Attrs Attrs
}

// FQDN policy engines of a target.
const (
	FQDNPolicyCilium = "cilium"
	FQDNPolicyGKE    = "gke"
	FQDNPolicyNone   = "none"
)

// AgentSandboxRelease is the pinned sigs.k8s.io/agent-sandbox install.
type AgentSandboxRelease struct {
	Version string
	// Image is the controller image, pinned to the release (tag, optionally @digest).
	Image string
	Src   Range

	// Digest optionally pins the controller image by content ("sha256:..."):
	// components pull Image@Digest when it is set.
	Digest string

	// RefillDelay and RefillPerMinute shape how the controller refills warm
	// pools after claims drain them (zero: at once, unpaced).
	RefillDelay     time.Duration
	RefillPerMinute int64

	Attrs Attrs
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

	// NodePool names the node pool (of Platform.NodePools) that provides the
	// runtime; when set, NodeSelector and Tolerations default to that pool's
	// labels and taints.
	NodePool string
	// OverheadCPU and OverheadMemory are the pod overhead of the runtime
	// (RuntimeClass.overhead.podFixed), Kubernetes quantities; "" for none.
	OverheadCPU    string
	OverheadMemory string
	Attrs          Attrs
}

// Tenant is one trust boundary: its own namespace, identity, templates and pools.
type Tenant struct {
	Name      string
	Namespace string
	Templates []Template
	WarmPools []WarmPool
	Src       Range

	// PodSecurity is the Pod Security Standards level enforced on the
	// namespace: "restricted" (the default; "" means the same) unless the
	// spec loosens it.
	PodSecurity string
	Quota       Quota
	LimitRange  LimitRange
	Identity    Identity
	Egress      Egress
	// EgressGateway is the tenant's egress gateway; nil for none.
	EgressGateway *EgressGateway
	Claims        ClaimPolicy
	Attrs         Attrs
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

// Template is a hardened SandboxTemplate: non-root, seccomp RuntimeDefault, no
// privilege escalation, read-only root, every capability dropped, no service
// account token. Each of those can only be loosened by an explicit spec knob,
// whose zero value here is the hardened setting (so a Template built in Go
// without them is hardened), and which policy flags as a finding.
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

	// Workspace is the sandbox's working volume; nil for none (only /tmp).
	Workspace *Workspace
	// Env are plain environment variables, by name.
	Env map[string]string
	// SecretEnv are environment variables read from Secrets of the tenant's
	// namespace, in spec order.
	SecretEnv []SecretEnv

	// Loosening knobs: each zero value is the hardened setting.

	// AllowRoot drops runAsNonRoot (spec: run_as_non_root = false).
	AllowRoot bool
	// AllowPrivilegeEscalation sets allowPrivilegeEscalation: true.
	AllowPrivilegeEscalation bool
	// Privileged runs the container privileged.
	Privileged bool
	// WritableRootFilesystem drops readOnlyRootFilesystem (spec: read_only_root = false).
	WritableRootFilesystem bool
	// AddCapabilities are added back after dropping ALL.
	AddCapabilities []string
	// Seccomp is the seccomp profile type: "RuntimeDefault" ("" means the
	// same), "Localhost/<profile>" or "Unconfined".
	Seccomp string
	// AutomountServiceAccountToken mounts the agent-runtime token into the pod.
	AutomountServiceAccountToken bool

	Attrs Attrs
}

// Workspace kinds.
const (
	// WorkspaceEphemeral is an emptyDir: gone with the pod.
	WorkspaceEphemeral = "ephemeral"
	// WorkspacePersistent is a PVC per sandbox (a volumeClaimTemplate): it
	// survives pod restarts and is deleted with the sandbox.
	WorkspacePersistent = "persistent"
)

// Workspace is the volume an agent works in.
type Workspace struct {
	Kind         string // WorkspaceEphemeral or WorkspacePersistent
	Size         string // Kubernetes quantity: sizeLimit or PVC request
	MountPath    string
	StorageClass string // persistent only; "" for the cluster default
	Src          Range
	Attrs        Attrs
}

// SecretEnv is one environment variable from a key of a Secret. It fails
// closed (secretKeyRef.optional: false) unless Optional is set, which policy
// flags.
type SecretEnv struct {
	Name     string // the environment variable
	Secret   string // the Secret, in the tenant's namespace
	Key      string // the key in the Secret
	Optional bool
	Src      Range
	Attrs    Attrs
}

// Quota is the tenant namespace's ResourceQuota: it caps the whole fleet.
type Quota struct {
	// Disabled removes the ResourceQuota (spec: enabled = false).
	Disabled bool
	Pods     int32
	// LimitsCPU, LimitsMemory and LimitsEphemeralStorage cap the sum of the
	// containers' limits (limits.cpu, limits.memory, limits.ephemeral-storage).
	LimitsCPU              string
	LimitsMemory           string
	LimitsEphemeralStorage string
	// PersistentVolumeClaims caps count/persistentvolumeclaims.
	PersistentVolumeClaims int32
	// RequestsStorage caps requests.storage (persistent workspaces).
	RequestsStorage string
	Src             Range
	Attrs           Attrs
}

// LimitRange is the namespace's container LimitRange: defaults for any
// container that sets no requests or limits of its own.
type LimitRange struct {
	// Disabled removes the LimitRange (spec: enabled = false).
	Disabled bool
	// Defaults: the Limits* fields are the default limits, the Requests*
	// fields the default requests.
	Defaults Resources
	Src      Range
	Attrs    Attrs
}

// Identity are the tenant's Kubernetes identities besides the
// zero-permission agent runtime.
type Identity struct {
	// Orchestrator creates the agent-orchestrator ServiceAccount with a Role
	// limited to SandboxClaims and Sandboxes of the tenant's namespace.
	Orchestrator bool
	// ToolGatewayToken, when set, mounts a projected, audience-bound service
	// account token into sandboxes for an in-pod tool gateway.
	ToolGatewayToken *ProjectedToken
	// WorkloadIdentities give the tenant's Kubernetes service accounts Google
	// Cloud roles through GKE Workload Identity (TargetGKE only), at most one
	// per service account, in spec order.
	WorkloadIdentities []WorkloadIdentity
	Src                Range
	Attrs              Attrs
}

// WorkloadIdentity gives one Kubernetes service account of a tenant cloud
// access through GKE Workload Identity: a Google service account holding
// exactly Roles, which only that Kubernetes service account may impersonate.
// No key is ever created.
type WorkloadIdentity struct {
	// ServiceAccount is the Kubernetes service account:
	// AgentOrchestratorServiceAccount or AgentRuntimeServiceAccount.
	ServiceAccount string
	// Roles are the project roles of the Google service account, and its only ones.
	Roles []string
	Src   Range
	Attrs Attrs
}

// WorkloadIdentity returns the tenant's workload identity of the Kubernetes
// service account ksa, or nil.
func (id Identity) WorkloadIdentity(ksa string) *WorkloadIdentity {
	for i := range id.WorkloadIdentities {
		if id.WorkloadIdentities[i].ServiceAccount == ksa {
			return &id.WorkloadIdentities[i]
		}
	}
	return nil
}

// ProjectedToken is a projected serviceAccountToken volume.
type ProjectedToken struct {
	Audience   string
	Expiration time.Duration // expirationSeconds
	MountPath  string        // directory; the token is the file "token" in it
	Src        Range
	Attrs      Attrs
}

// Egress is the tenant's network posture: ingress is always denied; egress
// is denied except what is listed.
type Egress struct {
	// Unrestricted drops the default-deny NetworkPolicy (spec: default_deny = false).
	Unrestricted bool
	// DNS allows UDP and TCP 53 to the cluster DNS (kube-system/kube-dns) only.
	DNS bool
	// FQDNs allow TCP 443 to these host names (needs an FQDN-aware CNI such as
	// Cilium or GKE Dataplane V2 FQDN policies); "*.example.com" wildcards.
	FQDNs []string
	// Allows are CIDR and port holes.
	Allows []EgressAllow
	// Proxy is the egress proxy sandboxes reach (and get HTTPS_PROXY for).
	Proxy *EgressProxy
	Src   Range
	Attrs Attrs
}

// EgressAllow is one NetworkPolicy egress hole.
type EgressAllow struct {
	CIDR     string
	Ports    []int32
	Protocol string // "TCP" (default), "UDP" or "SCTP"
	Src      Range
	Attrs    Attrs
}

// EgressProxy is an egress proxy: sandboxes may reach it on Port, selected by
// Namespace (and PodLabels) or by CIDR, and get URL as HTTPS_PROXY/HTTP_PROXY.
type EgressProxy struct {
	URL       string
	Host      string
	Port      int32
	Namespace string
	PodLabels map[string]string
	CIDR      string
	Src       Range
	Attrs     Attrs
}

// Claim shutdown policies (SandboxClaim spec.lifecycle.shutdownPolicy).
const (
	ShutdownDelete           = "Delete"
	ShutdownDeleteForeground = "DeleteForeground"
	ShutdownRetain           = "Retain"
)

// ClaimPolicy is the lifecycle every SandboxClaim of the tenant gets.
type ClaimPolicy struct {
	// TTL is ttlSecondsAfterFinished: how long a finished claim is kept.
	// 0 means none: finished claims are never reaped (spec: ttl = "none").
	TTL time.Duration
	// MaxTTL caps a session's lifetime (shutdownTime = creation + MaxTTL).
	// 0 means none (spec: max_ttl = "none").
	MaxTTL time.Duration
	// ShutdownPolicy is Delete, DeleteForeground or Retain ("" means Delete).
	ShutdownPolicy string
	Src            Range
	Attrs          Attrs
}

// WarmPool keeps Replicas pre-created sandboxes of one template of its own tenant.
type WarmPool struct {
	Name     string
	Template string
	Replicas int32
	// UpdateStrategy is what the controller does with the pool's unclaimed
	// sandboxes once the template changes: UpdateRecreate (replace them at
	// once) or UpdateOnReplenish (keep handing them out until claimed).
	UpdateStrategy string
	Src            Range
	// Attrs are the source ranges of the warm_pool block's arguments.
	Attrs Attrs
}

// Update strategies of a warm pool (the SandboxWarmPool's
// spec.updateStrategy.type).
const (
	// UpdateRecreate: stale unclaimed sandboxes are deleted as soon as the
	// template changes, so a fix reaches the next claim.
	UpdateRecreate = "Recreate"
	// UpdateOnReplenish: stale unclaimed sandboxes stay in the pool until a
	// claim takes them or someone deletes them.
	UpdateOnReplenish = "OnReplenish"
)

// UpdateStrategies are the update strategies a warm pool may use.
var UpdateStrategies = []string{UpdateRecreate, UpdateOnReplenish}

// Strategy is the pool's update strategy, the default when a model built
// without the decoder leaves it unset.
func (wp *WarmPool) Strategy() string {
	if wp.UpdateStrategy == "" {
		return DefaultWarmPoolUpdateStrategy
	}
	return wp.UpdateStrategy
}

// Waiver is an explicit, reasoned exception to one policy rule.
type Waiver struct {
	Rule    string
	Reason  string
	Expires string // RFC 3339 date, optional
	Src     Range

	// Scope limits the waiver to one object and what is in it, by address
	// ("tenant.team-a", "tenant.team-a.template.python"); "" for the whole
	// platform.
	Scope string
}

// Mutating admission kinds a trust_admission block may name.
const (
	AdmissionWebhook = "MutatingWebhookConfiguration"
	AdmissionPolicy  = "MutatingAdmissionPolicy"
)

// AdmissionKinds are the kinds a trust_admission block may name.
var AdmissionKinds = []string{AdmissionWebhook, AdmissionPolicy}

// TrustedAdmission is a mutating admission object the spec trusts, by exact
// kind and name, with the reason: the drift sweep (S09) does not report it,
// and what it adds to an object Paddock applies is not drift. Like a waiver
// it is shown in every report.
type TrustedAdmission struct {
	Kind   string // AdmissionWebhook or AdmissionPolicy
	Name   string
	Reason string
	Src    Range
}

// Ref is the object as kubectl names it: "mutatingwebhookconfiguration/x".
func (t TrustedAdmission) Ref() string { return AdmissionRef(t.Kind, t.Name) }

// AdmissionRef names a mutating admission object as kubectl does.
func AdmissionRef(kind, name string) string {
	return strings.ToLower(kind) + "/" + name
}

// TrustOf returns the spec's trust of the admission object of kind and
// name, or nil.
func (p *Platform) TrustOf(kind, name string) *TrustedAdmission {
	for i := range p.TrustedAdmission {
		if t := &p.TrustedAdmission[i]; t.Kind == kind && t.Name == name {
			return t
		}
	}
	return nil
}

// Cluster are the settings of a cluster Paddock creates (GKE).
type Cluster struct {
	// ReleaseChannel is "rapid", "regular" or "stable".
	ReleaseChannel string
	// PublicNodes gives nodes public IP addresses (spec: private_nodes = false).
	PublicNodes bool
	// AuthorizedNetworks are the CIDRs allowed to reach the control plane;
	// none means only the cluster's own network.
	AuthorizedNetworks []string
	// NoDataplaneV2 turns GKE Dataplane V2 off (spec: dataplane_v2 = false);
	// without it NetworkPolicy is not enforced.
	NoDataplaneV2 bool
	// NoWorkloadIdentity turns Workload Identity off (spec:
	// workload_identity = false): pods then reach the node's credentials.
	NoWorkloadIdentity bool
	// AllowDeletion turns GKE deletion protection off (spec:
	// deletion_protection = false), so destroy can delete the cluster.
	AllowDeletion bool
	// FQDNNetworkPolicy turns GKE FQDN network policy on (spec:
	// fqdn_network_policy = true). Explicit, never derived from the tenants:
	// turning it off replaces the cluster.
	FQDNNetworkPolicy bool
	// AllowReplacement lets preview and up go ahead with a change that
	// replaces the cluster or a node pool (spec: allow_replacement = true).
	AllowReplacement bool
	Src              Range
	Attrs            Attrs
}

// Node pool isolations.
const (
	IsolationGVisor = "gvisor" // GKE Sandbox: gVisor on every node
	IsolationKVM    = "kvm"    // nested virtualization for Kata Containers
)

// Taint is a node taint.
type Taint struct {
	Key    string
	Value  string
	Effect string
}

// NodePool is a pool of nodes that run sandboxes.
type NodePool struct {
	Name        string
	Isolation   string // IsolationGVisor or IsolationKVM
	MachineType string
	MinNodes    int32
	MaxNodes    int32
	// Labels and Taints are what Paddock sets on the pool; NodeLabels and
	// NodeTaints add what the isolation implies.
	Labels map[string]string
	Taints []Taint
	// Shared drops the default dedication taint, so other workloads may land
	// on the pool (spec: dedicated = false).
	Shared bool
	Src    Range
	Attrs  Attrs
}

// Audit sink kinds.
const (
	AuditBigQuery = "bigquery"
	AuditStorage  = "storage"
	AuditPubSub   = "pubsub"
)

// Audit filter presets: what a sink receives.
const (
	// AuditSandboxLifecycle: API audit of Sandbox, SandboxClaim, SandboxTemplate
	// and SandboxWarmPool create, update and delete.
	AuditSandboxLifecycle = "sandbox_lifecycle"
	// AuditPodLogs: stdout and stderr of sandbox pods.
	AuditPodLogs = "pod_logs"
	// AuditNetworkDrops: NetworkPolicy denials of sandbox pods.
	AuditNetworkDrops = "network_drops"
	// AuditAdmission: admission rejections (Pod Security, quota).
	AuditAdmission = "admission"
	// AuditRBAC: Role and RoleBinding changes in the tenant namespaces, and
	// ClusterRole and ClusterRoleBinding changes (a RoleBinding may reference
	// a ClusterRole).
	AuditRBAC = "rbac"
)

// AuditSink ships audit records out of the cluster.
type AuditSink struct {
	Name        string
	Kind        string // AuditBigQuery, AuditStorage or AuditPubSub
	Destination string // dataset, bucket or topic
	Filters     []string
	// IncludePayloads records request and response bodies (audit level
	// RequestResponse): prompts, code and secrets end up in the sink.
	IncludePayloads bool
	Src             Range
	Attrs           Attrs
}

// Attrs are the source ranges of a block's arguments, by spec argument name,
// so a finding can point at the very argument that loosens a control. A
// nested block's arguments may appear as "block.argument"
// ("resources.unbounded").
type Attrs map[string]Range

// At is the range of argument name, or fallback when the spec did not set it.
func (a Attrs) At(name string, fallback Range) Range {
	if r, ok := a[name]; ok {
		return r
	}
	return fallback
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

// String renders the range as file:line:col ("" when unknown).
func (r Range) String() string {
	if !r.Known() {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Line, r.Column)
}
