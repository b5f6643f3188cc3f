package model

import (
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Hardened defaults, in one place. The spec decoder applies them to whatever the
// spec leaves unset; components never invent values of their own.
const (
	DefaultRunAsUser int64 = 10001
	DefaultTmpSize         = "512Mi"

	DefaultRequestsCPU              = "250m"
	DefaultRequestsMemory           = "512Mi"
	DefaultRequestsEphemeralStorage = "1Gi"
	DefaultLimitsCPU                = "1"
	DefaultLimitsMemory             = "1Gi"
	DefaultLimitsEphemeralStorage   = "2Gi"

	DefaultWarmPoolReplicas int32 = 1
	// DefaultWarmPoolUpdateStrategy: a template change (a fixed image, a
	// tighter setting) must not wait for claims to drain the old sandboxes.
	DefaultWarmPoolUpdateStrategy = UpdateRecreate

	// ManagedByLabel marks every object Paddock creates, so sweeps and drift checks find them.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "paddock"
	PlatformLabel  = "paddock.dev/platform"
	TenantLabel    = "paddock.dev/tenant"

	// AgentRuntimeServiceAccount is the zero-permission identity sandbox pods run as.
	AgentRuntimeServiceAccount = "agent-runtime"
)

// ApplyResourceDefaults fills every unset request and limit with the hardened default.
func (r *Resources) ApplyResourceDefaults() {
	set := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	set(&r.RequestsCPU, DefaultRequestsCPU)
	set(&r.RequestsMemory, DefaultRequestsMemory)
	set(&r.RequestsEphemeralStorage, DefaultRequestsEphemeralStorage)
	set(&r.LimitsCPU, DefaultLimitsCPU)
	set(&r.LimitsMemory, DefaultLimitsMemory)
	set(&r.LimitsEphemeralStorage, DefaultLimitsEphemeralStorage)
}

// Labels returns the ownership labels for an object of this platform (and tenant, if any).
func (p *Platform) Labels(tenant string) map[string]string {
	l := map[string]string{ManagedByLabel: ManagedByValue, PlatformLabel: p.Name}
	if tenant != "" {
		l[TenantLabel] = tenant
	}
	return l
}

// Hardened defaults of the blocks added with the spec language v1. The decoder
// starts every block from these constructors and overwrites what the spec
// sets; components and tests that build a model in Go can use them too.
const (
	// PodSecurityRestricted is the Pod Security Standards level of every
	// tenant namespace unless the spec loosens it.
	PodSecurityRestricted = "restricted"

	DefaultQuotaPods                   int32 = 20
	DefaultQuotaLimitsCPU                    = "8"
	DefaultQuotaLimitsMemory                 = "16Gi"
	DefaultQuotaLimitsEphemeralStorage       = "20Gi"
	DefaultQuotaPersistentVolumeClaims int32 = 20
	DefaultQuotaRequestsStorage              = "100Gi"

	DefaultClaimTTL            = 10 * time.Minute
	DefaultClaimMaxTTL         = 4 * time.Hour
	DefaultClaimShutdownPolicy = ShutdownDelete

	// SeccompRuntimeDefault is the seccomp profile of every sandbox.
	SeccompRuntimeDefault = "RuntimeDefault"
	SeccompUnconfined     = "Unconfined"

	DefaultWorkspaceKind      = WorkspaceEphemeral
	DefaultWorkspaceSize      = "5Gi"
	DefaultWorkspaceMountPath = "/workspace"

	DefaultToolGatewayAudience   = "tool-gateway"
	DefaultToolGatewayExpiration = time.Hour
	DefaultToolGatewayMountPath  = "/var/run/secrets/tokens"

	DefaultReleaseChannel = "regular"

	DefaultNodePoolIsolation = IsolationGVisor
	DefaultNodePoolMinNodes  = int32(1)
	DefaultNodePoolMaxNodes  = int32(3)

	// AgentOrchestratorServiceAccount is the identity that creates claims.
	AgentOrchestratorServiceAccount = "agent-orchestrator"

	// IsolationLabel and IsolationTaint dedicate a node pool to sandboxes of
	// one isolation (the value is the isolation).
	IsolationLabel = "paddock.dev/isolation"
	// GKESandboxKey is the label and taint key GKE Sandbox puts on gVisor
	// node pools (value "gvisor").
	GKESandboxKey = "sandbox.gke.io/runtime"
)

// DefaultMachineType is the default machine type of a node pool of the given
// isolation: KVM needs a machine series with nested virtualization.
func DefaultMachineType(isolation string) string {
	if isolation == IsolationKVM {
		return "n2-standard-4"
	}
	return "e2-standard-4"
}

// DefaultAuditFilters is what a sink receives unless the spec says otherwise:
// everything, including the control-plane events the hardening guide names
// (sandbox and claim lifecycle, RBAC changes).
func DefaultAuditFilters() []string {
	return []string{AuditSandboxLifecycle, AuditRBAC, AuditPodLogs, AuditNetworkDrops, AuditAdmission}
}

// DefaultKataOverhead is the pod overhead (cpu, memory) of a Kata handler
// when the spec sets none: the VMM and guest kernel the scheduler and quota
// must count on top of the pod's containers. CPU and Cloud Hypervisor's 130Mi
// are kata-deploy 3.20.0's own figures; QEMU's 320Mi is Paddock's conservative
// choice (kata-deploy ships 160Mi): an undercounted VMM is memory the
// scheduler and the tenant quota do not see. The GCP layer takes its figures
// from here (gcpinputs.KataOverhead). ok is false for handlers of unknown
// overhead.
func DefaultKataOverhead(handler string) (cpu, memory string, ok bool) {
	switch handler {
	case "kata", "kata-qemu":
		return "250m", "320Mi", true
	case "kata-clh":
		return "250m", "130Mi", true
	}
	return "", "", false
}

// KataShim is the Kata runtime (kata-deploy shim) a Kata handler names:
// "qemu" for "kata" and "kata-qemu", "clh" for "kata-clh", "<x>" for
// "kata-<x>"; "" for a handler that is not Kata.
func KataShim(handler string) string {
	switch {
	case handler == "kata":
		return "qemu"
	case strings.HasPrefix(handler, "kata-"):
		return strings.TrimPrefix(handler, "kata-")
	}
	return ""
}

// The GKE metadata server, as a NetworkPolicy must allow it for a pod to get
// Workload Identity tokens on a cluster with GKE Dataplane V2: TCP 80 to
// 169.254.169.254/32. GKE documents this hole for Dataplane V2 (other
// datapaths use 169.254.169.252:988, which Paddock never opens: its GKE
// clusters run Dataplane V2). The GKE metadata server hands a pod only the
// tokens of its own Kubernetes service account's Google service account, never
// the node's credentials.
const (
	GKEMetadataServerCIDR        = "169.254.169.254/32"
	GKEMetadataServerPort  int32 = 80
	GKEMetadataServerProto       = "TCP"
)

// MetadataServerAddr is the address of the GKE metadata server, which is also
// the address every cloud's instance metadata service answers on (GCE, EC2,
// Azure): the one host a sandbox's CIDR allow must exclude.
var MetadataServerAddr = netip.MustParsePrefix(GKEMetadataServerCIDR).Addr()

// AgentNeedsMetadataServer reports whether t's sandboxes must reach the GKE
// metadata server: the agent runtime identity has a workload identity on a GKE
// cluster with Workload Identity and Dataplane V2 on. Only then do the
// tenant's network policies open exactly that hole.
func (p *Platform) AgentNeedsMetadataServer(t Tenant) bool {
	if p.Target.Kind != TargetGKE || p.Cluster == nil || p.Cluster.NoWorkloadIdentity || p.Cluster.NoDataplaneV2 {
		return false
	}
	return t.Identity.WorkloadIdentity(AgentRuntimeServiceAccount) != nil
}

// OrchestratorNeedsMetadataServer reports whether t's orchestrator pods must
// reach the GKE metadata server: the orchestrator has a workload identity on a
// GKE cluster with Workload Identity and Dataplane V2 on. Only its own pods
// then get the hole, never the sandboxes.
func (p *Platform) OrchestratorNeedsMetadataServer(t Tenant) bool {
	if p.Target.Kind != TargetGKE || p.Cluster == nil || p.Cluster.NoWorkloadIdentity || p.Cluster.NoDataplaneV2 {
		return false
	}
	return t.Identity.Orchestrator && t.Identity.WorkloadIdentity(AgentOrchestratorServiceAccount) != nil
}

// DefaultQuota caps a tenant's fleet (the guide's pilot sizing).
func DefaultQuota() Quota {
	return Quota{
		Pods:                   DefaultQuotaPods,
		LimitsCPU:              DefaultQuotaLimitsCPU,
		LimitsMemory:           DefaultQuotaLimitsMemory,
		LimitsEphemeralStorage: DefaultQuotaLimitsEphemeralStorage,
		PersistentVolumeClaims: DefaultQuotaPersistentVolumeClaims,
		RequestsStorage:        DefaultQuotaRequestsStorage,
	}
}

// DefaultLimitRange gives every container the template resource defaults.
func DefaultLimitRange() LimitRange {
	var r Resources
	r.ApplyResourceDefaults()
	return LimitRange{Defaults: r}
}

// DefaultIdentity has the scoped orchestrator identity and no in-pod token.
func DefaultIdentity() Identity { return Identity{Orchestrator: true} }

// DefaultEgress denies everything but the cluster DNS.
func DefaultEgress() Egress { return Egress{DNS: true} }

// DefaultClaimPolicy reaps finished claims after 10 minutes, caps sessions at
// 4 hours and deletes the sandbox at expiry.
func DefaultClaimPolicy() ClaimPolicy {
	return ClaimPolicy{TTL: DefaultClaimTTL, MaxTTL: DefaultClaimMaxTTL, ShutdownPolicy: DefaultClaimShutdownPolicy}
}

// DefaultCluster is a private, Dataplane V2, Workload Identity cluster on the
// regular release channel.
func DefaultCluster() Cluster { return Cluster{ReleaseChannel: DefaultReleaseChannel} }

// DefaultTenant is a tenant named name with every hardened default.
func DefaultTenant(name string) Tenant {
	return Tenant{
		Name:        name,
		Namespace:   DefaultNamespacePrefix + name,
		PodSecurity: PodSecurityRestricted,
		Quota:       DefaultQuota(),
		LimitRange:  DefaultLimitRange(),
		Identity:    DefaultIdentity(),
		Egress:      DefaultEgress(),
		Claims:      DefaultClaimPolicy(),
	}
}

// DefaultTemplate is a template with every hardened default but an image.
func DefaultTemplate(name string) Template {
	t := Template{Name: name, RunAsUser: DefaultRunAsUser, TmpSize: DefaultTmpSize, Seccomp: SeccompRuntimeDefault}
	t.Resources.ApplyResourceDefaults()
	return t
}

// DefaultNamespacePrefix makes a tenant's namespace when the spec sets none.
const DefaultNamespacePrefix = "agents-"

// DefaultNodePool is a dedicated node pool of the given isolation.
func DefaultNodePool(name, isolation string) NodePool {
	return NodePool{
		Name: name, Isolation: isolation, MachineType: DefaultMachineType(isolation),
		MinNodes: DefaultNodePoolMinNodes, MaxNodes: DefaultNodePoolMaxNodes,
	}
}

// NodeLabels are the labels the pool's nodes carry: Labels plus what the
// isolation implies (GKE Sandbox labels gVisor nodes itself; Paddock labels
// KVM nodes).
func (np NodePool) NodeLabels() map[string]string {
	out := map[string]string{}
	switch np.Isolation {
	case IsolationGVisor:
		out[GKESandboxKey] = IsolationGVisor
	case IsolationKVM:
		out[IsolationLabel] = IsolationKVM
	}
	for k, v := range np.Labels {
		out[k] = v
	}
	return out
}

// NodeTaints are the taints the pool's nodes carry: Taints plus the
// dedication taint of the isolation. GKE Sandbox always taints gVisor nodes;
// a KVM pool is tainted unless Shared.
func (np NodePool) NodeTaints() []Taint {
	var out []Taint
	switch {
	case np.Isolation == IsolationGVisor:
		out = append(out, Taint{Key: GKESandboxKey, Value: IsolationGVisor, Effect: "NoSchedule"})
	case np.Isolation == IsolationKVM && !np.Shared:
		out = append(out, Taint{Key: IsolationLabel, Value: IsolationKVM, Effect: "NoSchedule"})
	}
	return append(out, np.Taints...)
}

// HandlerIsolation is the isolation a RuntimeClass handler provides:
// IsolationGVisor for runsc (and GKE's "gvisor"), IsolationKVM for Kata
// handlers ("kata", "kata-qemu", "kata-clh", ...), "" for anything else
// (runc, crun: no sandbox at all).
func HandlerIsolation(handler string) string {
	switch {
	case handler == "runsc" || handler == "gvisor" || strings.HasPrefix(handler, "runsc-"):
		return IsolationGVisor
	case handler == "kata" || strings.HasPrefix(handler, "kata-"):
		return IsolationKVM
	}
	return ""
}

// MarkSensitive records that v came from a sensitive value: Redact masks it
// and components should pass it as a secret. Empty strings are ignored.
func (p *Platform) MarkSensitive(v string) {
	if v == "" {
		return
	}
	if p.sensitive == nil {
		p.sensitive = map[string]struct{}{}
	}
	p.sensitive[v] = struct{}{}
}

// IsSensitive reports whether v is a value marked sensitive.
func (p *Platform) IsSensitive(v string) bool {
	_, ok := p.sensitive[v]
	return ok
}

// SensitiveValues returns the marked values, longest first.
func (p *Platform) SensitiveValues() []string {
	out := make([]string, 0, len(p.sensitive))
	for v := range p.sensitive {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// Redact replaces every sensitive value in s with "(sensitive value)". Use it
// on anything derived from the model that a person or a log will read.
func (p *Platform) Redact(s string) string {
	if p == nil || len(p.sensitive) == 0 {
		return s
	}
	return RedactValues(s, p.SensitiveValues())
}

// RedactValues replaces each of values (quoted, bare or Go-escaped) in s
// with "(sensitive value)". Values shorter than 4 characters are only
// replaced in their quoted form, so that a short secret does not garble the
// text around.
func RedactValues(s string, values []string) string {
	for _, v := range values {
		if v == "" {
			continue
		}
		quoted := strconv.Quote(v)
		s = strings.ReplaceAll(s, quoted, "(sensitive value)")
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "(sensitive value)")
			// Inside a longer quoted string, v appears escaped.
			if inner := quoted[1 : len(quoted)-1]; inner != v {
				s = strings.ReplaceAll(s, inner, "(sensitive value)")
			}
		}
	}
	return s
}

// ParseAuditDestination splits an audit sink's destination, as the spec
// writes it, into its project ("" when the form names none) and the
// resource: BigQuery "project.dataset", Cloud Storage "gs://bucket" (the
// resource is everything after gs://) or Pub/Sub "projects/p/topics/t".
// Malformed destinations return ("", dest).
func ParseAuditDestination(kind, dest string) (project, resource string) {
	switch kind {
	case AuditBigQuery:
		if p, ds, ok := strings.Cut(dest, "."); ok {
			return p, ds
		}
	case AuditStorage:
		if b, ok := strings.CutPrefix(dest, "gs://"); ok {
			return "", b
		}
	case AuditPubSub:
		parts := strings.Split(dest, "/")
		if len(parts) == 4 && parts[0] == "projects" && parts[2] == "topics" {
			return parts[1], parts[3]
		}
	}
	return "", dest
}

// AuditDestinationProject is the project an audit destination names ("" for
// Cloud Storage, whose bucket names are global).
func AuditDestinationProject(kind, dest string) string {
	p, _ := ParseAuditDestination(kind, dest)
	return p
}

// AuditDestinationIn is dest moved into project (for messages).
func AuditDestinationIn(kind, dest, project string) string {
	_, r := ParseAuditDestination(kind, dest)
	switch kind {
	case AuditBigQuery:
		return project + "." + r
	case AuditPubSub:
		return "projects/" + project + "/topics/" + r
	}
	return dest
}
