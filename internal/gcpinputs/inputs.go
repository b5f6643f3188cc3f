// Package gcpinputs holds the plain Go inputs of Paddock's GCP layer (the GKE cluster,
// its node pools, Kata, workload identities, audit sinks and alerts) and the pure
// functions derived from them: node labels and taints, RuntimeClass scheduling,
// the audit log filter, the exec-auth kubeconfig and service account ids.
//
// It imports no Pulumi: the components in package gcp take these values as
// their Args, package rules validates them, and package frommodel maps the
// model onto them. The facts it shares with the model (isolation names, the
// label and taint keys, Kata overheads, the release channel, audit sink kinds
// and events) are the model's, referred to here, not copied. Every zero value is the hardened setting; the fields that
// loosen a control say so in their name (PublicNodes, DisableDataplaneV2, ...).
package gcpinputs

import (
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
)

// Node pool isolations.
const (
	// IsolationGVisor is a GKE Sandbox pool: every pod with runtimeClassName
	// gvisor runs under gVisor. GKE labels and taints these nodes itself.
	IsolationGVisor = model.IsolationGVisor
	// IsolationKVM is a pool with nested virtualisation, for Kata Containers.
	IsolationKVM = model.IsolationKVM
	// IsolationNone is the system pool: GKE's own workloads and the platform's
	// controllers. GKE Sandbox cannot be the only pool of a cluster.
	IsolationNone = ""
)

// GKE node image types.
const (
	ImageCOSContainerd    = "COS_CONTAINERD"
	ImageUbuntuContainerd = "UBUNTU_CONTAINERD"
)

// Release channels.
const (
	ChannelRapid   = "RAPID"
	ChannelRegular = "REGULAR"
	ChannelStable  = "STABLE"
)

// DefaultReleaseChannel is the model's default channel in the GKE API's
// spelling (REGULAR).
var DefaultReleaseChannel = strings.ToUpper(model.DefaultReleaseChannel)

// Labels, taints and annotations with a fixed meaning.
const (
	// GKESandboxKey is the label and taint key GKE Sandbox puts on every node of
	// a gVisor pool (value "gvisor", taint effect NoSchedule). Paddock never sets
	// it: GKE does, and a copy on any other pool would attract sandbox pods there.
	GKESandboxKey = model.GKESandboxKey
	// IsolationKey labels (and, unless Shared, taints) the nodes of a KVM pool.
	IsolationKey = model.IsolationLabel
	// KSAAnnotation binds a Kubernetes service account to a Google service
	// account through GKE Workload Identity.
	KSAAnnotation = "iam.gke.io/gcp-service-account"
	// WorkloadIdentityUser is the role that lets a KSA impersonate a GSA.
	WorkloadIdentityUser = "roles/iam.workloadIdentityUser"
	// NodeServiceAccountRole is the least-privilege role GKE documents for the
	// nodes' own service account (logs, metrics, resource metadata).
	NodeServiceAccountRole = "roles/container.defaultNodeServiceAccount"
	// ImagePullRole lets the nodes pull from one Artifact Registry repository;
	// it is granted on the repository, never on the project.
	ImagePullRole = "roles/artifactregistry.reader"
	// CloudPlatformScope is the only OAuth scope nodes get; what they may do is
	// decided by the node service account's IAM roles.
	CloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"
)

// RuntimeClass names and handlers on GKE.
const (
	// GVisorRuntimeClass is the RuntimeClass GKE Sandbox installs and manages
	// itself (handler "gvisor") as soon as a gVisor pool exists. The in-cluster
	// layer must use it, not create its own.
	GVisorRuntimeClass = "gvisor"
	GVisorHandler      = "gvisor"
)

// Taint effects, in Kubernetes spelling (the components translate them to the
// GKE API's NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE).
const (
	EffectNoSchedule       = "NoSchedule"
	EffectPreferNoSchedule = "PreferNoSchedule"
	EffectNoExecute        = "NoExecute"
)

// Hardened defaults of the GCP layer, in one place.
const (
	// DefaultMasterCIDR is the /28 the private control plane endpoint uses.
	DefaultMasterCIDR = "172.16.0.0/28"
	// DefaultSystemPoolName, machine type and size of the untainted pool that
	// runs GKE's system workloads, kata-deploy's controller side and the Agent
	// Sandbox controller.
	DefaultSystemPoolName        = "system"
	DefaultSystemPoolMachineType = "e2-standard-2"
	DefaultSystemPoolMinNodes    = 1
	DefaultSystemPoolMaxNodes    = 3
	// DefaultAuditLocation is where a sink's dataset or bucket lives unless set.
	DefaultAuditLocation = "US"
	// DefaultAuditRetentionDays is the Cloud Storage retention of audit objects.
	DefaultAuditRetentionDays = 365
	// DefaultKataShim is the Kata runtime pods get when they name "kata".
	DefaultKataShim = "qemu"
)

// AuthorizedNetwork is a CIDR allowed to reach the cluster's control plane.
type AuthorizedNetwork struct {
	CIDR        string
	DisplayName string // "" = "paddock-<index>"
}

// ClusterArgs are the inputs of the GKE cluster: a VPC-native Standard cluster
// with Dataplane V2, Workload Identity, private nodes, shielded nodes, a release
// channel, control-plane logging, and no default node pool.
type ClusterArgs struct {
	Project  string
	Location string // a region (regional cluster) or a zone
	Name     string

	// Network and Subnetwork are the VPC the nodes join ("" = the project's
	// "default" network and its subnetwork in the region). Private nodes pull
	// images from outside Google only through Cloud NAT on that network.
	Network    string
	Subnetwork string
	// PodsRange and ServicesRange name the subnetwork's secondary ranges; ""
	// lets GKE create them.
	PodsRange     string
	ServicesRange string

	// ReleaseChannel is RAPID, REGULAR or STABLE ("" = REGULAR).
	ReleaseChannel string
	// AuthorizedNetworks may reach the control plane; none means only the
	// cluster's own VPC (Google's public ranges are never let in).
	AuthorizedNetworks []AuthorizedNetwork
	// MasterCIDR is the control plane's /28 ("" = DefaultMasterCIDR).
	MasterCIDR string
	// PrivateEndpoint serves the control plane on its private IP only: the
	// kubeconfig then points there and `up` must run from inside the VPC.
	PrivateEndpoint bool
	// FQDNNetworkPolicy turns on GKE FQDN network policies (egress allowlists by
	// host name); it needs Dataplane V2. GKE replaces the cluster when it is
	// turned off again, so it is set explicitly, never derived from what the
	// tenants happen to list today.
	FQDNNetworkPolicy bool
	// DataAccessAuditLogs turns on Data Access audit logs (DATA_READ and
	// DATA_WRITE) for container.googleapis.com. Admin Activity logs, which carry
	// every create, update and delete, are always on. The setting is
	// authoritative for that service in the project.
	DataAccessAuditLogs bool
	// NodeServiceAccount is an existing service account email for the nodes;
	// "" makes Paddock create one with only NodeServiceAccountRole.
	NodeServiceAccount string
	// Labels are extra GCP resource labels (keys and values [a-z0-9_-]).
	Labels map[string]string

	// Loosening knobs: each zero value is the hardened setting.

	// PublicNodes gives nodes public IP addresses (spec: private_nodes = false).
	PublicNodes bool
	// DisableDataplaneV2 falls back to the legacy datapath: no NetworkPolicy
	// enforcement without the Calico add-on, no FQDN policy.
	DisableDataplaneV2 bool
	// DisableWorkloadIdentity drops the workload pool: pods then reach the node
	// service account through the metadata server.
	DisableWorkloadIdentity bool
	// AllowDeletion turns GKE deletion protection off (tests, throwaway stacks).
	AllowDeletion bool
}

// Taint is a node taint (Kubernetes effect spelling).
type Taint struct {
	Key    string
	Value  string
	Effect string
}

// Toleration mirrors the Kubernetes toleration fields Paddock sets.
type Toleration struct {
	Key      string
	Operator string // "Equal" or "Exists"
	Value    string
	Effect   string
}

// Scheduling is what a RuntimeClass (and kata-deploy) must carry to land on a
// pool's nodes: node.k8s.io/v1 RuntimeClass.scheduling.
type Scheduling struct {
	NodeSelector map[string]string
	Tolerations  []Toleration
}

// NodePoolArgs are the inputs of one node pool.
type NodePoolArgs struct {
	Name      string
	Isolation string // IsolationGVisor, IsolationKVM or IsolationNone
	// MachineType is the Compute Engine machine type; a KVM pool needs a
	// series with nested virtualisation (Intel: N1, N2, C2, C3), never E2.
	MachineType string
	// ImageType is the node image ("" = COS_CONTAINERD, or UBUNTU_CONTAINERD
	// for KVM: GKE offers nested virtualisation on COS too, from
	// 1.28.4-gke.1083000, but kata-deploy cannot install into COS).
	ImageType string
	// MinNodes and MaxNodes bound the autoscaler, per zone of the pool.
	MinNodes int
	MaxNodes int
	// DiskSizeGB is the boot disk size (0 = GKE's default).
	DiskSizeGB int
	// Labels are extra node labels (Kubernetes labels).
	Labels map[string]string
	// Taints are extra node taints.
	Taints []Taint
	// Shared drops the KVM dedication taint (spec: dedicated = false) so other
	// workloads may land on the pool.
	Shared bool
	// DisableSMT runs a KVM pool with one thread per core, closing cross-VM
	// SMT side channels at the price of half the vCPUs.
	DisableSMT bool
	// ResourceLabels are GCP labels on the pool's VMs.
	ResourceLabels map[string]string
}

// KataArgs are the inputs of the Kata Containers install on the KVM pools.
type KataArgs struct {
	// Image overrides the pinned kata-deploy image (a mirror, which must carry
	// the same digest); "" = the pinned image.
	Image string
	// Shims are the Kata runtimes to install and expose as RuntimeClasses
	// kata-<shim>: "qemu", "clh" (nil = both).
	Shims []string
	// Scheduling places kata-deploy on every KVM node (and nowhere else). The
	// RuntimeClasses use IsolationScheduling(IsolationKVM) instead, so they
	// never tolerate a pool's extra (e.g. per-tenant) taints.
	Scheduling Scheduling
	// Labels are the ownership labels of every object.
	Labels map[string]string
	// ExternalRuntimeClasses leaves the RuntimeClasses to the caller: the
	// install puts the Kata runtimes on the KVM nodes and creates no
	// RuntimeClass. Paddock's program sets it when the spec declares its own
	// Kata runtime classes (the in-cluster layer creates exactly those, with
	// scheduling onto the KVM pools and pod overhead), so that no RuntimeClass
	// is owned twice.
	ExternalRuntimeClasses bool
}

// WorkloadIdentityArgs give one Kubernetes service account cloud access: a
// Google service account with exactly Roles on the project, impersonable only
// by serviceAccount:PROJECT.svc.id.goog[Namespace/KSA]. No key is ever created.
type WorkloadIdentityArgs struct {
	Project   string
	Platform  string // for naming and labels
	Tenant    string
	Namespace string
	KSA       string
	// Roles are the project-level roles of the Google service account, and
	// the only ones.
	Roles []string
	// AccountID is the Google service account id ("" = derived from platform,
	// tenant and KSA; always 6-30 characters).
	AccountID string
}

// Audit sink kinds.
const (
	AuditBigQuery = model.AuditBigQuery
	AuditStorage  = model.AuditStorage
	AuditPubSub   = model.AuditPubSub
)

// Audit events a sink can receive (its filter is built from them).
const (
	// EventSandboxLifecycle: Sandbox and SandboxClaim create and delete;
	// SandboxTemplate and SandboxWarmPool create, update and delete.
	EventSandboxLifecycle = model.AuditSandboxLifecycle
	// EventRBAC: Role and RoleBinding changes in the tenant namespaces, and
	// ClusterRole/ClusterRoleBinding changes (a RoleBinding may reference a
	// ClusterRole, so changing it changes rights in tenant namespaces).
	EventRBAC = model.AuditRBAC
	// EventPodLogs: stdout and stderr of the tenant namespaces' containers.
	EventPodLogs = model.AuditPodLogs
	// EventNetworkDrops: Dataplane V2 network policy denials of tenant pods
	// (the platform turns deny logging on in-cluster).
	EventNetworkDrops = model.AuditNetworkDrops
	// EventAdmission: writes into tenant namespaces the API server refused
	// (Pod Security, quota, admission policy, RBAC).
	EventAdmission = model.AuditAdmission
)

// DefaultAuditEvents are the control-plane events the seed names.
func DefaultAuditEvents() []string { return []string{EventSandboxLifecycle, EventRBAC} }

// AuditEvents lists every known event.
func AuditEvents() []string {
	return []string{EventSandboxLifecycle, EventRBAC, EventPodLogs, EventNetworkDrops, EventAdmission}
}

// AuditFilterArgs scope a sink's filter to one cluster and its tenants.
type AuditFilterArgs struct {
	Project     string
	Location    string
	ClusterName string
	// Namespaces are the tenant namespaces ("" none = every namespace).
	Namespaces []string
	// Events select what the sink receives (nil = DefaultAuditEvents()).
	Events []string
}

// AuditSinkArgs are the inputs of one log sink and its destination, which
// Paddock creates and owns.
type AuditSinkArgs struct {
	Project string
	Name    string
	Kind    string // AuditBigQuery, AuditStorage or AuditPubSub
	// Destination is the dataset id, bucket name or topic name.
	Destination string
	// Location of the dataset or bucket ("" = DefaultAuditLocation).
	Location string
	// RetentionDays: the bucket's retention policy (storage, 0 = default
	// DefaultAuditRetentionDays), the tables' expiration (bigquery, 0 = none),
	// the topic's message retention (pubsub, 0 = Pub/Sub default, max 31).
	RetentionDays int
	// LockRetention locks the bucket's retention policy: irreversible, and the
	// bucket can then not be deleted before every object has aged out.
	LockRetention bool
	Filter        AuditFilterArgs
	Labels        map[string]string
}

// AlertArgs are the optional Cloud Monitoring alert policies.
type AlertArgs struct {
	Project     string
	Location    string
	ClusterName string
	Namespaces  []string
	// QuotaSaturation alerts when a tenant's ResourceQuota refuses a request.
	QuotaSaturation bool
	// SandboxMaxLifetime alerts when a sandbox container has run longer (0 =
	// no lifetime alert). Set it a little above the claims' max TTL.
	SandboxMaxLifetime time.Duration
	// NotificationChannels are monitoring notification channel ids.
	NotificationChannels []string
	Labels               map[string]string
}

// PlatformArgs are the inputs of the whole GCP layer.
type PlatformArgs struct {
	// Name is the platform's name: labels, and the cluster's default name.
	Name    string
	Cluster ClusterArgs
	// SystemPool is the untainted pool for system workloads (zero value =
	// DefaultSystemPool()).
	SystemPool NodePoolArgs
	// NodePools are the sandbox pools (gVisor, KVM).
	NodePools []NodePoolArgs
	// FQDNNamespaces are the tenant namespaces whose egress allow-list by
	// host name the in-cluster layer applies as GKE FQDNNetworkPolicies: they
	// need Cluster.FQDNNetworkPolicy (GCP-018).
	FQDNNamespaces []string
	// Images are the container images the nodes pull for the platform (the
	// sandbox templates, a mirror of the Agent Sandbox controller). GKE's node
	// role reads no private repository: the node service account gets
	// roles/artifactregistry.reader on each Artifact Registry repository
	// they name (and the Kata image's). An image anywhere else must be
	// pullable without credentials, through Cloud NAT on private nodes: it is
	// declared as a prerequisite (Platform.PullPrerequisites), not granted.
	Images []string
	// Kata configures the Kata install, made when any pool is KVM.
	Kata               KataArgs
	WorkloadIdentities []WorkloadIdentityArgs
	AuditSinks         []AuditSinkArgs
	// Alerts are optional (nil = none).
	Alerts *AlertArgs
}

// RuntimeClass is a sandbox RuntimeClass the GCP layer provides, for the
// in-cluster layer: its scheduling keeps pods on the pool that provides it.
type RuntimeClass struct {
	Name           string
	Handler        string
	Scheduling     Scheduling
	OverheadCPU    string
	OverheadMemory string
	// ManagedByGKE is set for gvisor: GKE creates and reconciles it, so the
	// in-cluster layer uses it and must not create its own.
	ManagedByGKE bool
}
