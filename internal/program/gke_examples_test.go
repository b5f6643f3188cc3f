package program_test

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/components/gcp/kata"
	"github.com/paddock-platform/paddock/components/pulumitest"
	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/program"
)

func TestMockGKEGVisorExample(t *testing.T) {
	p, m := runExample(t, "../../examples/gke-gvisor")
	checkGKE(t, p, m)

	// The example's specifics, spelled out.
	c := m.Find(t, "gcp:container/cluster:Cluster", "agents-gvisor")
	c.WantString(t, "location", "europe-west1")
	c.WantString(t, "releaseChannel.channel", "REGULAR")
	c.WantBool(t, "enableFqdnNetworkPolicy", true) // the tenants list FQDNs
	np := m.Find(t, "gcp:container/nodePool:NodePool", "agents-gvisor/sandboxes")
	np.WantString(t, "nodeConfig.machineType", "e2-standard-8")
	np.WantNumber(t, "autoscaling.minNodeCount", 1)
	np.WantNumber(t, "autoscaling.maxNodeCount", 10)
	if n := len(m.OfType("gcp:serviceaccount/account:Account")); n != 3 { // nodes + 2 orchestrators
		t.Errorf("%d Google service accounts, want the node account and one per tenant orchestrator", n)
	}
	// GKE's gvisor RuntimeClass is used, never created.
	for _, rc := range m.OfType("kubernetes:node.k8s.io/v1:RuntimeClass") {
		t.Errorf("RuntimeClass %s registered on a gVisor-only GKE platform", rc.Name)
	}
	for _, st := range m.OfType("kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate") {
		st.WantString(t, "spec.podTemplate.spec.runtimeClassName", "gvisor")
	}
	m.Find(t, "kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy", "agents-research/allow-fqdn")
	sink := m.Find(t, "gcp:logging/projectSink:ProjectSink", "agents-gvisor-bigquery")
	sink.WantString(t, "destination", "bigquery.googleapis.com/projects/paddock-example-prod/datasets/agent_audit")
	w := m.Find(t, "gcp:bigquery/datasetIamMember:DatasetIamMember", "agents-gvisor-bigquery-writer")
	w.WantString(t, "role", "roles/bigquery.dataEditor")
	w.WantString(t, "datasetId", "agent_audit")
	// The orchestrators have workload identities: their own pods (and only
	// pods bound to their account, by the orchestrator guardrails) reach the
	// GKE metadata server; the sandboxes do not.
	for _, ns := range []string{"agents-research", "agents-support"} {
		np := m.Find(t, "kubernetes:networking.k8s.io/v1:NetworkPolicy", ns+"/allow-gke-metadata-server-orchestrator")
		np.WantString(t, "spec.podSelector.matchLabels[paddock.dev/identity]", "agent-orchestrator")
		np.WantString(t, "spec.egress[0].to[0].ipBlock.cidr", "169.254.169.254/32")
		np.WantNumber(t, "spec.egress[0].ports[0].port", 80)
		if hasResource(m, "kubernetes:networking.k8s.io/v1:NetworkPolicy", ns+"/allow-gke-metadata-server") {
			t.Errorf("%s: the sandboxes' metadata server hole is open", ns)
		}
	}
	// The agent image is private in Artifact Registry: the nodes may read
	// exactly its repository.
	checkImagePull(t, m, "agents-gvisor", "paddock-example-prod", "us", "agents")
}

// checkImagePull asserts that the cluster's nodes read exactly one Artifact
// Registry repository, the one the example's template images live in, and
// that the in-cluster layer (whose warm pools pull them) waits for the grant.
func checkImagePull(t *testing.T, m *pulumitest.Mocks, cluster, project, location, repo string) {
	t.Helper()
	grants := m.OfType("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
	if len(grants) != 1 {
		t.Fatalf("%d repository grants, want 1 (the templates' repository)", len(grants))
	}
	g := grants[0]
	g.WantString(t, "project", project)
	g.WantString(t, "location", location)
	g.WantString(t, "repository", repo)
	g.WantString(t, "role", "roles/artifactregistry.reader")
	g.WantString(t, "member", "serviceAccount:"+cluster+"-nodes@"+project+".iam.gserviceaccount.com")
	if prov := m.Find(t, "pulumi:providers:kubernetes", cluster+"-gke"); !slices.Contains(prov.Deps, g.ID()) {
		t.Errorf("the in-cluster layer does not wait for the nodes' pull grant %s", g.Name)
	}
}

func TestMockGKEKataExample(t *testing.T) {
	p, m := runExample(t, "../../examples/gke-kata")
	checkGKE(t, p, m)

	prov := m.Find(t, "pulumi:providers:gcp", "gcp")
	prov.WantString(t, "region", "europe-west4")
	prov.WantString(t, "zone", "europe-west4-a")
	c := m.Find(t, "gcp:container/cluster:Cluster", "agents-kata")
	c.WantString(t, "location", "europe-west4-a")
	c.WantString(t, "releaseChannel.channel", "STABLE")
	c.Absent(t, "enableFqdnNetworkPolicy") // egress through a proxy only

	np := m.Find(t, "gcp:container/nodePool:NodePool", "agents-kata/kata")
	np.WantString(t, "nodeConfig.machineType", "n2-standard-8")
	if got := np.StringMapAt(t, "nodeConfig.labels"); got["example.com/team"] != "platform" {
		t.Errorf("pool labels %v lack the spec's", got)
	}

	// kata-deploy, pinned, on the KVM nodes only, through the new cluster's provider.
	ds := m.Find(t, "kubernetes:apps/v1:DaemonSet", "kube-system/kata-deploy")
	ds.WantString(t, "spec.template.spec.containers[0].image", kata.Image)
	if !strings.Contains(kata.Image, "@sha256:") {
		t.Errorf("kata-deploy image %s is not pinned by digest", kata.Image)
	}
	if got := ds.StringMapAt(t, "spec.template.spec.nodeSelector"); !reflect.DeepEqual(got, map[string]string{gcpinputs.IsolationKey: gcpinputs.IsolationKVM}) {
		t.Errorf("kata-deploy node selector %v", got)
	}
	// The spec declares its Kata runtime class: it is the only one, and the
	// install creates none of its own.
	rcs := m.OfType("kubernetes:node.k8s.io/v1:RuntimeClass")
	if len(rcs) != 1 || rcs[0].Name != "kata" || rcs[0].Parent == "paddock:gcp:Kata::agents-kata-kata" {
		t.Fatalf("runtime classes %v", rcs)
	}
	rcs[0].WantString(t, "handler", "kata-qemu")
	sink := m.Find(t, "gcp:storage/bucket:Bucket", "agents-kata-archive")
	sink.WantString(t, "name", "paddock-example-kata-audit")
	sink.WantBool(t, "uniformBucketLevelAccess", true)
	sink.WantString(t, "publicAccessPrevention", "enforced")
	sink.WantNumber(t, "retentionPolicy.retentionPeriod", 365*24*60*60)
	w := m.Find(t, "gcp:storage/bucketIAMMember:BucketIAMMember", "agents-kata-archive-writer")
	w.WantString(t, "role", "roles/storage.objectCreator")
	w.WantString(t, "bucket", "paddock-example-kata-audit")
	checkImagePull(t, m, "agents-kata", "paddock-example-kata", "us", "agents")
}

// A workload identity of the agent (waived PDK-207): the agent-runtime KSA is
// annotated and bound, and its sandboxes get exactly the GKE metadata server
// hole, nothing wider.
func TestMockGKEAgentIdentity(t *testing.T) {
	p, m := runExample(t, "testdata/agent-identity")
	checkGKE(t, p, m)
	np := m.Find(t, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "agents-ml/allow-gke-metadata-server")
	np.WantString(t, "spec.egress[0].to[0].ipBlock.cidr", "169.254.169.254/32")
	np.Absent(t, "spec.egress[0].to[0].ipBlock.except")
	np.WantString(t, "spec.egress[0].ports[0].protocol", "TCP")
	np.WantNumber(t, "spec.egress[0].ports[0].port", 80)
	if n := len(np.Get(t, "spec.egress").ArrayValue()); n != 1 {
		t.Errorf("%d egress rules, want 1", n)
	}
	if n := len(np.Get(t, "spec.egress[0].ports").ArrayValue()); n != 1 {
		t.Errorf("%d ports, want 1", n)
	}
	if n := len(np.Get(t, "spec.egress[0].to").ArrayValue()); n != 1 {
		t.Errorf("%d peers, want 1", n)
	}
	// No other policy of the tenant reaches link-local space.
	for _, pol := range m.OfType("kubernetes:networking.k8s.io/v1:NetworkPolicy") {
		if pol.Name == np.Name {
			continue
		}
		if strings.Contains(fmt.Sprint(pol.Inputs), "169.254.") {
			t.Errorf("%s reaches link-local addresses: %v", pol.Name, pol.Inputs)
		}
	}
	if a := m.Find(t, "kubernetes:core/v1:ServiceAccount", "agents-ml/agent-orchestrator").StringMapAt(t, "metadata.annotations"); len(a) != 0 {
		t.Errorf("orchestrator annotated without a workload identity: %v", a)
	}
}

// checkGKE asserts every security-relevant property of a GKE platform's mock
// run against what its model declares.
func checkGKE(t *testing.T, p *model.Platform, m *pulumitest.Mocks) {
	t.Helper()
	project := p.Target.Project
	byID := map[string]pulumitest.Resource{}
	for _, r := range m.All() {
		byID[r.ID()] = r
	}

	// Providers: one explicit gcp provider for the target, one kubernetes
	// provider made from the new cluster, and nothing on a default provider.
	region, zone := program.SplitLocation(p.Target.Location)
	gp := m.Find(t, "pulumi:providers:gcp", "gcp")
	gp.WantString(t, "project", project)
	gp.WantString(t, "region", region)
	if zone == "" {
		gp.Absent(t, "zone")
	}
	if n := len(m.OfType("pulumi:providers:gcp")) + len(m.OfType("pulumi:providers:kubernetes")); n != 2 {
		t.Errorf("%d providers, want one gcp and one kubernetes", n)
	}
	kp := m.Find(t, "pulumi:providers:kubernetes", p.Name+"-gke")
	if kp.Parent != "paddock:gcp:Platform::"+p.Name {
		t.Errorf("kubernetes provider parent %s", kp.Parent)
	}
	if raw := kp.Inputs["kubeconfig"]; !raw.ContainsSecrets() {
		t.Errorf("the kubeconfig given to the provider is not a secret")
	}
	kc := kp.StringAt(t, "kubeconfig")
	if !strings.Contains(kc, "command: gke-gcloud-auth-plugin") || !strings.Contains(kc, "server: https://"+pulumitest.MockEndpoint) ||
		regexp.MustCompile(`(?m)^\s*(token|client-key-data|client-certificate-data|password):`).MatchString(kc) {
		t.Errorf("kubeconfig is not exec-auth only:\n%s", kc)
	}
	gcpCount, k8sCount, inCluster := 0, 0, 0
	for _, r := range m.Sorted() {
		switch {
		case !r.Custom || strings.HasPrefix(r.Type, "pulumi:providers:"):
		case strings.HasPrefix(r.Type, "gcp:"):
			gcpCount++
			if r.Provider != "pulumi:providers:gcp::gcp" {
				t.Errorf("%s uses provider %q, not the target's gcp provider", r.ID(), r.Provider)
			}
		case strings.HasPrefix(r.Type, "kubernetes:"):
			k8sCount++
			if r.Provider != kp.ID() {
				t.Errorf("%s uses provider %q, not the new cluster's", r.ID(), r.Provider)
			}
			if underRoot(byID, r, "paddock:index:Platform::"+p.Name) {
				inCluster++
			}
		default:
			t.Errorf("unexpected resource %s", r.ID())
		}
		if strings.Contains(strings.ToLower(r.Type), "key:") || strings.Contains(r.Type, "serviceaccount/key") {
			t.Errorf("%s: a key resource; workload identities never have keys", r.ID())
		}
	}
	if gcpCount < 5 || k8sCount < 20 || inCluster < 20 {
		t.Errorf("%d gcp, %d kubernetes, %d in-cluster resources: too few", gcpCount, k8sCount, inCluster)
	}
	root := m.Find(t, "paddock:index:Platform", p.Name)
	if len(root.Deps) == 0 {
		t.Errorf("the in-cluster layer does not wait for the GCP layer")
	}
	for _, d := range root.Deps {
		if !underRoot(byID, byID[d], "paddock:gcp:Platform::"+p.Name) && d != "paddock:gcp:Platform::"+p.Name {
			t.Errorf("in-cluster root depends on %s, outside the GCP layer", d)
		}
	}

	// The cluster.
	name := p.Target.ClusterName
	c := m.Find(t, "gcp:container/cluster:Cluster", name)
	c.WantString(t, "project", project)
	c.WantBool(t, "privateClusterConfig.enablePrivateNodes", true)
	c.WantString(t, "privateClusterConfig.masterIpv4CidrBlock", gcpinputs.DefaultMasterCIDR)
	var cidrs []string
	for _, b := range c.ObjectsAt(t, "masterAuthorizedNetworksConfig.cidrBlocks") {
		cidrs = append(cidrs, b["cidrBlock"])
	}
	if !reflect.DeepEqual(cidrs, p.Cluster.AuthorizedNetworks) || slices.Contains(cidrs, "0.0.0.0/0") || len(cidrs) == 0 {
		t.Errorf("authorized networks %v, want exactly %v", cidrs, p.Cluster.AuthorizedNetworks)
	}
	c.WantBool(t, "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled", false)
	c.WantString(t, "datapathProvider", "ADVANCED_DATAPATH")
	c.WantString(t, "workloadIdentityConfig.workloadPool", project+".svc.id.goog")
	c.WantBool(t, "enableShieldedNodes", true)
	c.WantString(t, "releaseChannel.channel", strings.ToUpper(p.Cluster.ReleaseChannel))
	if got := c.StringsAt(t, "loggingConfig.enableComponents"); !slices.Contains(got, "APISERVER") || !slices.Contains(got, "SYSTEM_COMPONENTS") || !slices.Contains(got, "WORKLOADS") {
		t.Errorf("control-plane logging %v lacks the API server", got)
	}
	if got := c.StringsAt(t, "monitoringConfig.enableComponents"); len(got) == 0 {
		t.Error("no monitoring components")
	}
	c.WantBool(t, "removeDefaultNodePool", true)
	c.WantBool(t, "enableLegacyAbac", false)
	c.WantBool(t, "masterAuth.clientCertificateConfig.issueClientCertificate", false)
	c.WantString(t, "nodeConfig.workloadMetadataConfig.mode", "GKE_METADATA")

	// The node pools, and the runtime classes scheduled onto them.
	pools := map[string]pulumitest.Resource{}
	for _, np := range p.NodePools {
		r := m.Find(t, "gcp:container/nodePool:NodePool", name+"/"+np.Name)
		pools[np.Name] = r
		r.WantString(t, "nodeConfig.machineType", np.MachineType)
		r.WantString(t, "nodeConfig.workloadMetadataConfig.mode", "GKE_METADATA")
		r.WantBool(t, "nodeConfig.shieldedInstanceConfig.enableSecureBoot", true)
		r.WantNumber(t, "autoscaling.minNodeCount", float64(np.MinNodes))
		r.WantNumber(t, "autoscaling.maxNodeCount", float64(np.MaxNodes))
		for k, v := range np.Labels {
			if r.StringMapAt(t, "nodeConfig.labels")[k] != v {
				t.Errorf("pool %s lacks label %s=%s", np.Name, k, v)
			}
		}
		switch np.Isolation {
		case model.IsolationGVisor:
			r.WantString(t, "nodeConfig.sandboxConfig.sandboxType", "gvisor")
			r.WantString(t, "nodeConfig.imageType", "COS_CONTAINERD")
			// GKE labels and taints gVisor nodes itself: no copy of its own.
			for _, tt := range r.ObjectsAt(t, "nodeConfig.taints") {
				if tt["key"] == gcpinputs.GKESandboxKey {
					t.Errorf("pool %s duplicates GKE's sandbox taint", np.Name)
				}
			}
			if _, ok := r.StringMapAt(t, "nodeConfig.labels")[gcpinputs.GKESandboxKey]; ok {
				t.Errorf("pool %s sets GKE's sandbox label", np.Name)
			}
		case model.IsolationKVM:
			r.WantBool(t, "nodeConfig.advancedMachineFeatures.enableNestedVirtualization", true)
			r.WantString(t, "nodeConfig.imageType", "UBUNTU_CONTAINERD")
			if series := strings.SplitN(np.MachineType, "-", 2)[0]; !slices.Contains([]string{"n1", "n2", "c2", "c3"}, series) {
				t.Errorf("KVM pool %s on series %s", np.Name, series)
			}
			if got := r.StringMapAt(t, "nodeConfig.labels")[gcpinputs.IsolationKey]; got != gcpinputs.IsolationKVM {
				t.Errorf("KVM pool %s label %s=%q", np.Name, gcpinputs.IsolationKey, got)
			}
			found := false
			for _, tt := range r.ObjectsAt(t, "nodeConfig.taints") {
				found = found || tt["key"] == gcpinputs.IsolationKey && tt["value"] == gcpinputs.IsolationKVM && tt["effect"] == "NO_SCHEDULE"
			}
			if !found && !np.Shared {
				t.Errorf("KVM pool %s is not tainted %s=kvm:NoSchedule", np.Name, gcpinputs.IsolationKey)
			}
		}
	}
	for _, rc := range p.RuntimeClasses {
		checkRuntimeClass(t, p, m, rc, pools)
	}

	// Workload identities: a Google service account per identity with exactly
	// the roles named, impersonable only by that one KSA, which is annotated
	// with its email.
	wis := 0
	for _, tn := range p.Tenants {
		for _, wi := range tn.Identity.WorkloadIdentities {
			wis++
			key := tn.Namespace + "/" + wi.ServiceAccount
			gsa := m.Find(t, "gcp:serviceaccount/account:Account", key)
			id := gcpinputs.ServiceAccountID(p.Name, tn.Name, wi.ServiceAccount)
			gsa.WantString(t, "accountId", id)
			gsa.WantString(t, "project", project)
			email := id + "@" + project + ".iam.gserviceaccount.com"
			var roles []string
			for _, b := range m.OfType("gcp:projects/iAMMember:IAMMember") {
				if b.StringAt(t, "member") == "serviceAccount:"+email {
					roles = append(roles, b.StringAt(t, "role"))
				}
			}
			sort.Strings(roles)
			want := append([]string(nil), wi.Roles...)
			sort.Strings(want)
			if !reflect.DeepEqual(roles, want) {
				t.Errorf("%s holds roles %v, want exactly %v", key, roles, want)
			}
			var members []string
			for _, b := range m.OfType("gcp:serviceaccount/iAMMember:IAMMember") {
				if strings.HasSuffix(b.StringAt(t, "serviceAccountId"), "/"+email) {
					members = append(members, b.StringAt(t, "role")+" "+b.StringAt(t, "member"))
				}
			}
			if want := []string{"roles/iam.workloadIdentityUser serviceAccount:" + project + ".svc.id.goog[" + key + "]"}; !reflect.DeepEqual(members, want) {
				t.Errorf("%s impersonable by %v, want exactly %v", key, members, want)
			}
			ksa := m.Find(t, "kubernetes:core/v1:ServiceAccount", key)
			if got := ksa.StringMapAt(t, "metadata.annotations")[gcpinputs.KSAAnnotation]; got != email {
				t.Errorf("KSA %s annotated %q, want the Google service account the GCP layer creates, %q", key, got, email)
			}
		}
	}
	// Google service accounts: the nodes' one, and one per identity.
	if got := len(m.OfType("gcp:serviceaccount/account:Account")); got != wis+1 {
		t.Errorf("%d Google service accounts, want %d", got, wis+1)
	}
	for _, tn := range p.Tenants {
		if tn.Identity.WorkloadIdentity(model.AgentRuntimeServiceAccount) == nil {
			if a := m.Find(t, "kubernetes:core/v1:ServiceAccount", tn.Namespace+"/agent-runtime").StringMapAt(t, "metadata.annotations"); len(a) != 0 {
				t.Errorf("agent-runtime of %s annotated: %v", tn.Name, a)
			}
			if pol := tn.Namespace + "/allow-gke-metadata-server"; hasResource(m, "kubernetes:networking.k8s.io/v1:NetworkPolicy", pol) {
				t.Errorf("%s exists without a workload identity of the agent", pol)
			}
		}
	}

	// Audit sinks: the filter holds the control-plane events the seed names,
	// scoped to this cluster and the tenants' namespaces; the sink's writer
	// identity may write into its destination.
	nsRE := tenantNamespacesRE(p)
	for _, s := range p.AuditSinks {
		sinkName := p.Name + "-" + s.Name
		sink := m.Find(t, "gcp:logging/projectSink:ProjectSink", sinkName)
		sink.WantString(t, "project", project)
		sink.WantBool(t, "uniqueWriterIdentity", true)
		f := sink.StringAt(t, "filter")
		for _, want := range []string{
			`resource.labels.cluster_name="` + name + `"`,
			`sandboxes[.](create|delete|deletecollection)$`,
			`sandboxclaims[.](create|delete|deletecollection)$`,
			`^io[.]k8s[.]authorization[.]rbac[.]v1[.](roles|rolebindings)[.](create|update|patch|delete|deletecollection)$" AND protoPayload.resourceName=~"^rbac[.]authorization[.]k8s[.]io/v1/namespaces/` + nsRE + `/"`,
		} {
			if !strings.Contains(f, want) {
				t.Errorf("sink %s filter lacks %s:\n%s", sinkName, want, f)
			}
		}
		checkFilterMatches(t, f, nsRE)
		var writer pulumitest.Resource
		var role string
		switch s.Kind {
		case model.AuditBigQuery:
			writer, role = m.Find(t, "gcp:bigquery/datasetIamMember:DatasetIamMember", sinkName+"-writer"), "roles/bigquery.dataEditor"
		case model.AuditStorage:
			writer, role = m.Find(t, "gcp:storage/bucketIAMMember:BucketIAMMember", sinkName+"-writer"), "roles/storage.objectCreator"
		case model.AuditPubSub:
			writer, role = m.Find(t, "gcp:pubsub/topicIAMMember:TopicIAMMember", sinkName+"-writer"), "roles/pubsub.publisher"
		}
		writer.WantString(t, "role", role)
		writer.WantString(t, "member", pulumitest.MockSinkWriter(sinkName))
	}
}

func hasResource(m *pulumitest.Mocks, typ, name string) bool {
	for _, r := range m.All() {
		if r.Type == typ && r.Name == name {
			return true
		}
	}
	return false
}

// underRoot reports whether r is (transitively) a child of root.
func underRoot(byID map[string]pulumitest.Resource, r pulumitest.Resource, root string) bool {
	for i := 0; i < 20 && r.Parent != ""; i++ {
		if r.Parent == root {
			return true
		}
		r = byID[r.Parent]
	}
	return false
}

func tenantNamespacesRE(p *model.Platform) string {
	var ns []string
	for _, t := range p.Tenants {
		ns = append(ns, t.Namespace)
	}
	sort.Strings(ns)
	return "(" + strings.Join(ns, "|") + ")"
}

// checkFilterMatches runs the filter's method and resource regexes against
// the audit entries GKE writes for the events the seed names in the first
// tenant namespace, and against entries it must not select.
func checkFilterMatches(t *testing.T, filter, nsRE string) {
	t.Helper()
	ns := strings.SplitN(strings.Trim(nsRE, "()"), "|", 2)[0]
	pairs := regexp.MustCompile(`protoPayload\.methodName=~"([^"]+)" AND protoPayload\.resourceName=~"([^"]+)"`).FindAllStringSubmatch(filter, -1)
	matches := func(method, res string) bool {
		for _, p := range pairs {
			if regexp.MustCompile(p[1]).MatchString(method) && regexp.MustCompile(p[2]).MatchString(res) {
				return true
			}
		}
		return false
	}
	for _, e := range [][2]string{
		{"io.x-k8s.agents.v1beta1.sandboxes.create", "agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/s1"},
		{"io.x-k8s.agents.v1beta1.sandboxes.delete", "agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/s1"},
		{"io.x-k8s.agents.extensions.v1beta1.sandboxclaims.create", "extensions.agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxclaims/c1"},
		{"io.x-k8s.agents.extensions.v1beta1.sandboxclaims.delete", "extensions.agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxclaims/c1"},
		{"io.k8s.authorization.rbac.v1.rolebindings.create", "rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings/b"},
		{"io.k8s.authorization.rbac.v1.roles.patch", "rbac.authorization.k8s.io/v1/namespaces/" + ns + "/roles/r"},
	} {
		if !matches(e[0], e[1]) {
			t.Errorf("the filter does not select %s on %s", e[0], e[1])
		}
	}
	for _, e := range [][2]string{
		{"io.x-k8s.agents.v1beta1.sandboxes.get", "agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/s1"},
		{"io.k8s.authorization.rbac.v1.rolebindings.create", "rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/b"},
	} {
		if matches(e[0], e[1]) {
			t.Errorf("the filter selects %s on %s", e[0], e[1])
		}
	}
}

// checkRuntimeClass: a runtime class lands exactly on the pool that provides
// it. GKE's gvisor class is used, not created; any other class is created
// in-cluster with a node selector that includes the isolation's (so it never
// lands elsewhere) and only labels the GCP layer puts on the pool's nodes (so
// it can land at all, and the autoscaler can scale the pool for it), a
// toleration for every taint the nodes carry, and the Kata pod overhead.
func checkRuntimeClass(t *testing.T, p *model.Platform, m *pulumitest.Mocks, rc model.RuntimeClass, pools map[string]pulumitest.Resource) {
	t.Helper()
	iso := model.HandlerIsolation(rc.Handler)
	if rc.Name == "gvisor" {
		if hasResource(m, "kubernetes:node.k8s.io/v1:RuntimeClass", "gvisor") {
			t.Error("Paddock creates RuntimeClass gvisor, which GKE owns")
		}
		return
	}
	r := m.Find(t, "kubernetes:node.k8s.io/v1:RuntimeClass", rc.Name)
	byID := map[string]pulumitest.Resource{}
	for _, x := range m.All() {
		byID[x.ID()] = x
	}
	if !underRoot(byID, r, "paddock:index:Platform::"+p.Name) {
		t.Errorf("runtime class %s is not the in-cluster layer's (parent %s)", rc.Name, r.Parent)
	}
	r.WantString(t, "handler", rc.Handler)
	pool, ok := pools[rc.NodePool]
	if !ok {
		t.Fatalf("runtime class %s names no registered pool", rc.Name)
	}
	nodeLabels := pool.StringMapAt(t, "nodeConfig.labels")
	var taints []gcpinputs.Toleration
	for _, tt := range pool.ObjectsAt(t, "nodeConfig.taints") {
		taints = append(taints, gcpinputs.Toleration{Key: tt["key"], Value: tt["value"], Effect: tt["effect"]})
	}
	if iso == model.IsolationGVisor { // GKE's own, on every gVisor node
		nodeLabels[gcpinputs.GKESandboxKey] = "gvisor"
		taints = append(taints, gcpinputs.Toleration{Key: gcpinputs.GKESandboxKey, Value: "gvisor", Effect: "NO_SCHEDULE"})
	}
	sel := r.StringMapAt(t, "scheduling.nodeSelector")
	for k, v := range gcpinputs.IsolationScheduling(iso).NodeSelector {
		if sel[k] != v {
			t.Errorf("runtime class %s node selector %v lacks the isolation's %s=%s", rc.Name, sel, k, v)
		}
	}
	for k, v := range sel {
		if nodeLabels[k] != v {
			t.Errorf("runtime class %s selects %s=%s, which no node of pool %s carries (%v)", rc.Name, k, v, rc.NodePool, nodeLabels)
		}
	}
	tols := r.ObjectsAt(t, "scheduling.tolerations")
	for _, taint := range taints {
		ok := false
		for _, tol := range tols {
			ok = ok || tol["key"] == taint.Key && (tol["operator"] == "Exists" || tol["value"] == taint.Value) &&
				(tol["effect"] == "" || gcpinputs.GKETaintEffect(tol["effect"]) == taint.Effect)
		}
		if !ok {
			t.Errorf("runtime class %s does not tolerate %s=%s:%s of pool %s", rc.Name, taint.Key, taint.Value, taint.Effect, rc.NodePool)
		}
	}
	if shim := model.KataShim(rc.Handler); iso == model.IsolationKVM && rc.OverheadCPU == "" {
		t.Errorf("Kata runtime class %s has no overhead", rc.Name)
	} else if cpu, mem, ok := gcpinputs.KataOverhead(shim); ok && iso == model.IsolationKVM {
		r.WantString(t, "overhead.podFixed.cpu", rc.OverheadCPU)
		r.WantString(t, "overhead.podFixed.memory", rc.OverheadMemory)
		if rc.Attrs["overhead"].Line == 0 && (rc.OverheadCPU != cpu || rc.OverheadMemory != mem) {
			t.Errorf("runtime class %s default overhead %s/%s, the GCP layer's is %s/%s", rc.Name, rc.OverheadCPU, rc.OverheadMemory, cpu, mem)
		}
	}
}
