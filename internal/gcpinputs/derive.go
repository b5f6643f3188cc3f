package gcpinputs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
)

// WithDefaults returns a copy of p with every unset GCP-layer default applied:
// release channel, master CIDR, image types, the system pool, and the project,
// cluster and namespaces of identities, sinks and alerts. Components and rules
// both work on the defaulted value.
func (p PlatformArgs) WithDefaults() PlatformArgs {
	out := p
	c := &out.Cluster
	if c.Name == "" {
		c.Name = p.Name
	}
	if c.ReleaseChannel == "" {
		c.ReleaseChannel = DefaultReleaseChannel
	} else {
		c.ReleaseChannel = strings.ToUpper(c.ReleaseChannel)
	}
	if c.MasterCIDR == "" {
		c.MasterCIDR = DefaultMasterCIDR
	}
	if isZeroPool(out.SystemPool) {
		out.SystemPool = DefaultSystemPool()
	}
	out.SystemPool = out.SystemPool.WithDefaults()
	out.NodePools = make([]NodePoolArgs, len(p.NodePools))
	for i, np := range p.NodePools {
		out.NodePools[i] = np.WithDefaults()
	}
	out.WorkloadIdentities = make([]WorkloadIdentityArgs, len(p.WorkloadIdentities))
	for i, wi := range p.WorkloadIdentities {
		if wi.Project == "" {
			wi.Project = c.Project
		}
		if wi.Platform == "" {
			wi.Platform = p.Name
		}
		if wi.AccountID == "" {
			wi.AccountID = ServiceAccountID(wi.Platform, wi.Tenant, wi.KSA)
		}
		out.WorkloadIdentities[i] = wi
	}
	out.AuditSinks = make([]AuditSinkArgs, len(p.AuditSinks))
	for i, s := range p.AuditSinks {
		if s.Project == "" {
			s.Project = c.Project
		}
		if s.Location == "" {
			s.Location = DefaultAuditLocation
		}
		if s.Kind == AuditStorage && s.RetentionDays == 0 {
			s.RetentionDays = DefaultAuditRetentionDays
		}
		s.Filter = s.Filter.withCluster(*c)
		out.AuditSinks[i] = s
	}
	if p.Alerts != nil {
		a := *p.Alerts
		if a.Project == "" {
			a.Project = c.Project
		}
		if a.Location == "" {
			a.Location = c.Location
		}
		if a.ClusterName == "" {
			a.ClusterName = c.Name
		}
		out.Alerts = &a
	}
	return out
}

func (f AuditFilterArgs) withCluster(c ClusterArgs) AuditFilterArgs {
	if f.Project == "" {
		f.Project = c.Project
	}
	if f.Location == "" {
		f.Location = c.Location
	}
	if f.ClusterName == "" {
		f.ClusterName = c.Name
	}
	if f.Events == nil {
		f.Events = DefaultAuditEvents()
	}
	return f
}

func isZeroPool(np NodePoolArgs) bool {
	return np.Name == "" && np.MachineType == "" && np.MinNodes == 0 && np.MaxNodes == 0 &&
		len(np.Labels) == 0 && len(np.Taints) == 0 && np.ImageType == "" && np.Isolation == ""
}

// DefaultSystemPool is the small untainted pool every cluster gets.
func DefaultSystemPool() NodePoolArgs {
	return NodePoolArgs{
		Name:        DefaultSystemPoolName,
		Isolation:   IsolationNone,
		MachineType: DefaultSystemPoolMachineType,
		ImageType:   ImageCOSContainerd,
		MinNodes:    DefaultSystemPoolMinNodes,
		MaxNodes:    DefaultSystemPoolMaxNodes,
	}
}

// WithDefaults fills the pool's image type from its isolation.
func (np NodePoolArgs) WithDefaults() NodePoolArgs {
	if np.ImageType == "" {
		np.ImageType = DefaultImageType(np.Isolation)
	} else {
		np.ImageType = strings.ToUpper(np.ImageType)
	}
	return np
}

// DefaultImageType is the node image of an isolation: Ubuntu for KVM, COS
// everywhere else (GKE Sandbox requires it). GKE supports nested
// virtualisation on COS as well (from 1.28.4-gke.1083000); what rules COS
// out for KVM pools is kata-deploy, which copies the Kata runtime to
// /opt/kata on the host, executes it from there and rewrites containerd's
// configuration, while COS keeps its root read-only and mounts its writable
// paths noexec. Ubuntu nodes take that install as kata-deploy expects.
func DefaultImageType(isolation string) string {
	if isolation == IsolationKVM {
		return ImageUbuntuContainerd
	}
	return ImageCOSContainerd
}

// PaddockLabels are the labels Paddock sets on the pool's nodes: Labels plus
// the KVM isolation label. GKE adds sandbox.gke.io/runtime=gvisor to gVisor
// nodes itself, so it is not here (model.NodePool.NodeLabels, by contrast,
// is every label the nodes carry).
func (np NodePoolArgs) PaddockLabels() map[string]string {
	out := map[string]string{}
	for k, v := range np.Labels {
		out[k] = v
	}
	if np.Isolation == IsolationKVM {
		out[IsolationKey] = IsolationKVM
	}
	return out
}

// PaddockTaints are the taints Paddock sets on the pool: the KVM dedication
// taint (unless Shared) plus Taints. GKE taints gVisor nodes itself
// (sandbox.gke.io/runtime=gvisor:NoSchedule); Paddock never duplicates it.
func (np NodePoolArgs) PaddockTaints() []Taint {
	var out []Taint
	if np.Isolation == IsolationKVM && !np.Shared {
		out = append(out, Taint{Key: IsolationKey, Value: IsolationKVM, Effect: EffectNoSchedule})
	}
	return append(out, np.Taints...)
}

// AppliedTaints are every taint the pool's nodes carry: GKE's own for gVisor,
// then PaddockTaints.
func (np NodePoolArgs) AppliedTaints() []Taint {
	var out []Taint
	if np.Isolation == IsolationGVisor {
		out = append(out, Taint{Key: GKESandboxKey, Value: IsolationGVisor, Effect: EffectNoSchedule})
	}
	return append(out, np.PaddockTaints()...)
}

// Scheduling is exactly what a RuntimeClass for this pool must carry: a node
// selector on the isolation label (GKE's for gVisor, Paddock's for KVM) and a
// toleration for every taint the nodes carry. It matches only labels present in
// the pool's node template, so the cluster autoscaler can scale the pool up for
// a pending sandbox.
func (np NodePoolArgs) Scheduling() Scheduling {
	s := Scheduling{NodeSelector: map[string]string{}}
	switch np.Isolation {
	case IsolationGVisor:
		s.NodeSelector[GKESandboxKey] = IsolationGVisor
	case IsolationKVM:
		s.NodeSelector[IsolationKey] = IsolationKVM
	}
	for _, t := range np.AppliedTaints() {
		s.Tolerations = append(s.Tolerations, Toleration{Key: t.Key, Operator: "Equal", Value: t.Value, Effect: t.Effect})
	}
	return s
}

// IsolationScheduling is the scheduling of a RuntimeClass shared by every pool
// of an isolation: the isolation's node selector and a toleration for the
// isolation's own taint only. Extra taints of a pool (a tenant's dedication,
// say) are deliberately not tolerated: a pod reaches such a pool only if its
// template tolerates them itself, so one tenant's sandboxes cannot land on
// another tenant's dedicated pool through the shared RuntimeClass. For gVisor
// this is exactly the scheduling of GKE's own gvisor RuntimeClass.
func IsolationScheduling(isolation string) Scheduling {
	switch isolation {
	case IsolationGVisor:
		return Scheduling{
			NodeSelector: map[string]string{GKESandboxKey: IsolationGVisor},
			Tolerations:  []Toleration{{Key: GKESandboxKey, Operator: "Equal", Value: IsolationGVisor, Effect: EffectNoSchedule}},
		}
	case IsolationKVM:
		return Scheduling{
			NodeSelector: map[string]string{IsolationKey: IsolationKVM},
			Tolerations:  []Toleration{{Key: IsolationKey, Operator: "Equal", Value: IsolationKVM, Effect: EffectNoSchedule}},
		}
	}
	return Scheduling{}
}

// MergeScheduling is the scheduling that reaches every pool of a set (all of
// one isolation): the shared node selector, and the union of the tolerations.
// It is for node agents that must run on every node (kata-deploy), never for a
// RuntimeClass (see IsolationScheduling).
func MergeScheduling(pools []NodePoolArgs) Scheduling {
	out := Scheduling{NodeSelector: map[string]string{}}
	seen := map[Toleration]bool{}
	for _, np := range pools {
		s := np.Scheduling()
		for k, v := range s.NodeSelector {
			out.NodeSelector[k] = v
		}
		for _, t := range s.Tolerations {
			if !seen[t] {
				seen[t] = true
				out.Tolerations = append(out.Tolerations, t)
			}
		}
	}
	return out
}

// GKETaintEffect translates a Kubernetes taint effect to the GKE API's enum.
func GKETaintEffect(effect string) string {
	switch effect {
	case EffectNoSchedule:
		return "NO_SCHEDULE"
	case EffectPreferNoSchedule:
		return "PREFER_NO_SCHEDULE"
	case EffectNoExecute:
		return "NO_EXECUTE"
	}
	return effect
}

// KataShims returns the shims to install ("qemu", "clh" when none are set).
func (k KataArgs) KataShims() []string {
	if len(k.Shims) == 0 {
		return []string{"qemu", "clh"}
	}
	return k.Shims
}

// KataOverhead is the pod overhead (cpu, memory) of a Kata shim: the VMM and
// guest kernel the scheduler must account for on top of the pod's requests.
// The figures are the model's (model.DefaultKataOverhead of handler
// kata-<shim>); ok is false for a shim of unknown overhead.
func KataOverhead(shim string) (cpu, memory string, ok bool) {
	return model.DefaultKataOverhead("kata-" + shim)
}

// KataRuntimeClasses are the RuntimeClasses kata-<shim> of the install, each
// scheduled onto the KVM pools by IsolationScheduling.
func (k KataArgs) KataRuntimeClasses() []RuntimeClass {
	var out []RuntimeClass
	for _, shim := range k.KataShims() {
		cpu, memory, _ := KataOverhead(shim)
		out = append(out, RuntimeClass{
			Name: "kata-" + shim, Handler: "kata-" + shim, Scheduling: IsolationScheduling(IsolationKVM),
			OverheadCPU: cpu, OverheadMemory: memory,
		})
	}
	return out
}

// RuntimeClasses are the sandbox RuntimeClasses the platform's pools provide:
// gvisor (GKE's own) when a gVisor pool exists, kata-<shim> when a KVM pool does.
func (p PlatformArgs) RuntimeClasses() []RuntimeClass {
	d := p.WithDefaults()
	var out []RuntimeClass
	if g := d.PoolsOf(IsolationGVisor); len(g) > 0 {
		out = append(out, RuntimeClass{Name: GVisorRuntimeClass, Handler: GVisorHandler, Scheduling: IsolationScheduling(IsolationGVisor), ManagedByGKE: true})
	}
	if k := d.PoolsOf(IsolationKVM); len(k) > 0 {
		out = append(out, d.KataArgs().KataRuntimeClasses()...)
	}
	return out
}

// PoolsOf returns the sandbox pools of one isolation.
func (p PlatformArgs) PoolsOf(isolation string) []NodePoolArgs {
	var out []NodePoolArgs
	for _, np := range p.NodePools {
		if np.Isolation == isolation {
			out = append(out, np)
		}
	}
	return out
}

// KataArgs is p.Kata with the scheduling of kata-deploy (every KVM node: the
// union of the KVM pools' tolerations) and the platform's ownership labels
// filled in.
func (p PlatformArgs) KataArgs() KataArgs {
	k := p.Kata
	if len(k.Scheduling.NodeSelector) == 0 && len(k.Scheduling.Tolerations) == 0 {
		k.Scheduling = MergeScheduling(p.PoolsOf(IsolationKVM))
	}
	if k.Labels == nil {
		k.Labels = OwnershipLabels(p.Name)
	}
	return k
}

// Ownership labels (Kubernetes), the same keys the in-cluster layer uses.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "paddock"
	PlatformLabel  = "paddock.dev/platform"
)

// OwnershipLabels are the Kubernetes labels of everything the platform creates.
func OwnershipLabels(platform string) map[string]string {
	return map[string]string{ManagedByLabel: ManagedByValue, PlatformLabel: platform}
}

// GCPLabels are the GCP resource labels of everything the platform creates
// (GCP label keys allow no "/" or ".", so they differ from the Kubernetes ones),
// plus extra.
func GCPLabels(platform string, extra map[string]string) map[string]string {
	out := map[string]string{"managed-by": "paddock", "paddock-platform": gcpLabelValue(platform)}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func gcpLabelValue(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	out := b.String()
	if len(out) > 63 {
		out = out[:63]
	}
	return out
}

// ServiceAccountID derives a valid Google service account id (6-30 characters,
// [a-z][-a-z0-9]*[a-z0-9]) from parts. Ids that would be too long keep a
// readable prefix and end in a hash of the whole, so distinct inputs stay
// distinct.
func ServiceAccountID(parts ...string) string {
	var clean []string
	for _, p := range parts {
		if p = sanitizeID(p); p != "" {
			clean = append(clean, p)
		}
	}
	id := strings.Join(clean, "-")
	if id == "" || id[0] < 'a' || id[0] > 'z' {
		id = "p-" + id
	}
	if len(id) > 30 {
		sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
		id = strings.TrimRight(id[:23], "-") + "-" + hex.EncodeToString(sum[:])[:6]
	}
	id = strings.TrimRight(id, "-")
	for len(id) < 6 {
		id += "-sa"
	}
	return id
}

func sanitizeID(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

// ServiceAccountEmail is the email of the Google service account id of
// project: what the KSA annotation iam.gke.io/gcp-service-account names.
func ServiceAccountEmail(id, project string) string {
	return id + "@" + project + ".iam.gserviceaccount.com"
}

// WorkloadPool is the cluster's Workload Identity pool.
func WorkloadPool(project string) string { return project + ".svc.id.goog" }

// WorkloadIdentityMember is the only principal allowed to impersonate a
// tenant's Google service account: one KSA in one namespace.
func WorkloadIdentityMember(project, namespace, ksa string) string {
	return fmt.Sprintf("serviceAccount:%s[%s/%s]", WorkloadPool(project), namespace, ksa)
}

// SinkDestination is the log sink destination URI of a sink's dataset, bucket
// or topic.
func SinkDestination(s AuditSinkArgs) (string, error) {
	switch s.Kind {
	case AuditBigQuery:
		return fmt.Sprintf("bigquery.googleapis.com/projects/%s/datasets/%s", s.Project, s.Destination), nil
	case AuditStorage:
		return "storage.googleapis.com/" + s.Destination, nil
	case AuditPubSub:
		return fmt.Sprintf("pubsub.googleapis.com/projects/%s/topics/%s", s.Project, s.Destination), nil
	}
	return "", fmt.Errorf("audit sink %q: unknown kind %q (want %s, %s or %s)", s.Name, s.Kind, AuditBigQuery, AuditStorage, AuditPubSub)
}

// SinkWriterRole is the role a sink's writer identity gets on its destination:
// enough to write, nothing to read or delete.
func SinkWriterRole(kind string) string {
	switch kind {
	case AuditBigQuery:
		return "roles/bigquery.dataEditor"
	case AuditStorage:
		return "roles/storage.objectCreator"
	case AuditPubSub:
		return "roles/pubsub.publisher"
	}
	return ""
}

// Kubeconfig renders a kubeconfig for a GKE cluster that authenticates through
// the gke-gcloud-auth-plugin exec credential plugin: it carries the endpoint and
// the cluster CA (base64, as GKE returns it) and no credential at all.
func Kubeconfig(name, endpoint, caBase64 string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: https://%[2]s
    certificate-authority-data: %[3]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[1]s
current-context: %[1]s
users:
- name: %[1]s
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin)
      provideClusterInfo: true
      interactiveMode: Never
`, name, endpoint, caBase64)
}

// KubeconfigContext is the context name of a cluster's kubeconfig.
func KubeconfigContext(project, location, cluster string) string {
	return fmt.Sprintf("gke_%s_%s_%s", project, location, cluster)
}

// ArtifactRegistryRepository is one Docker repository of Artifact Registry.
type ArtifactRegistryRepository struct {
	Project    string // "my-project", or "example.com:my-project" (domain-scoped)
	Location   string // "us", "europe-west4"
	Repository string
}

// String is the repository's image path prefix.
func (r ArtifactRegistryRepository) String() string {
	return r.Location + "-docker.pkg.dev/" + strings.Replace(r.Project, ":", "/", 1) + "/" + r.Repository
}

// ParseArtifactRegistryImage returns the Artifact Registry repository image
// lives in: LOCATION-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE[:tag][@digest],
// where a domain-scoped project is written DOMAIN/PROJECT. ok is false for an
// image anywhere else.
func ParseArtifactRegistryImage(image string) (r ArtifactRegistryRepository, ok bool) {
	host, path, found := strings.Cut(image, "/")
	location, isAR := strings.CutSuffix(host, "-docker.pkg.dev")
	if !found || !isAR || !arLocationRE.MatchString(location) {
		return r, false
	}
	parts := strings.Split(path, "/")
	project := parts[0]
	if strings.Contains(project, ".") && len(parts) > 1 {
		project, parts = parts[0]+":"+parts[1], parts[1:]
	}
	// PROJECT, REPOSITORY and at least one image path element.
	if len(parts) < 3 || project == "" || !arRepositoryRE.MatchString(parts[1]) {
		return r, false
	}
	return ArtifactRegistryRepository{Project: project, Location: location, Repository: parts[1]}, true
}

var (
	arLocationRE   = regexp.MustCompile(`^[a-z]+(-[a-z]+[0-9]+)?$`)
	arRepositoryRE = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)
)

// ImageRepositories splits images into the distinct Artifact Registry
// repositories they live in and the images that live elsewhere, both sorted.
func ImageRepositories(images ...string) (repos []ArtifactRegistryRepository, elsewhere []string) {
	seenRepo, seenImage := map[ArtifactRegistryRepository]bool{}, map[string]bool{}
	for _, img := range images {
		if img == "" {
			continue
		}
		if r, ok := ParseArtifactRegistryImage(img); ok {
			if !seenRepo[r] {
				seenRepo[r] = true
				repos = append(repos, r)
			}
			continue
		}
		if !seenImage[img] {
			seenImage[img] = true
			elsewhere = append(elsewhere, img)
		}
	}
	sort.Slice(repos, func(i, j int) bool { return repos[i].String() < repos[j].String() })
	sort.Strings(elsewhere)
	return repos, elsewhere
}
