package gcp

// Mock tests (pulumi.WithMocks) of every security-relevant property the GCP
// layer requests. See mock_test.go for what mocks can and cannot prove.

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/gcp/kata"
	"github.com/paddock-platform/paddock/components/pulumitest"
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

const (
	tCluster    = "gcp:container/cluster:Cluster"
	tNodePool   = "gcp:container/nodePool:NodePool"
	tAccount    = "gcp:serviceaccount/account:Account"
	tSAKey      = "gcp:serviceaccount/key:Key"
	tProjectIAM = "gcp:projects/iAMMember:IAMMember"
	tSAIAM      = "gcp:serviceaccount/iAMMember:IAMMember"
	tAuditCfg   = "gcp:projects/iAMAuditConfig:IAMAuditConfig"
	tSink       = "gcp:logging/projectSink:ProjectSink"
	tBucket     = "gcp:storage/bucket:Bucket"
	tBucketIAM  = "gcp:storage/bucketIAMMember:BucketIAMMember"
	tDataset    = "gcp:bigquery/dataset:Dataset"
	tDatasetIAM = "gcp:bigquery/datasetIamMember:DatasetIamMember"
	tTopic      = "gcp:pubsub/topic:Topic"
	tTopicIAM   = "gcp:pubsub/topicIAMMember:TopicIAMMember"
	tAlert      = "gcp:monitoring/alertPolicy:AlertPolicy"
	tK8sProv    = "pulumi:providers:kubernetes"
)

func TestMockComponentTokensAndTree(t *testing.T) {
	m, _ := runPlatform(t, kataPlatform())
	for _, want := range []struct{ typ, name, parent string }{
		{"paddock:gcp:Platform", "vmdemo", "pulumi:pulumi:Stack::paddock-test"},
		{"paddock:gcp:Cluster", "vmdemo", "paddock:gcp:Platform::vmdemo"},
		{"paddock:gcp:NodePool", "vmdemo/system", "paddock:gcp:Platform::vmdemo"},
		{"paddock:gcp:NodePool", "vmdemo/kata", "paddock:gcp:Platform::vmdemo"},
		{"paddock:gcp:Kata", "vmdemo-kata", "paddock:gcp:Platform::vmdemo"},
		{"paddock:gcp:WorkloadIdentity", "agents-team-b/agent-orchestrator", "paddock:gcp:Platform::vmdemo"},
		{"paddock:gcp:AuditSink", "vmdemo-bq", "paddock:gcp:Platform::vmdemo"},
		{tCluster, "vmdemo", "paddock:gcp:Cluster::vmdemo"},
		{tNodePool, "vmdemo/kata", "paddock:gcp:NodePool::vmdemo/kata"},
		{"kubernetes:apps/v1:DaemonSet", "kube-system/kata-deploy", "paddock:gcp:Kata::vmdemo-kata"},
	} {
		if r := m.Find(t, want.typ, want.name); r.Parent != want.parent {
			t.Errorf("%s %s: parent %s, want %s", want.typ, want.name, r.Parent, want.parent)
		}
	}
	// Every cloud resource sits under a paddock:gcp component; every
	// Kubernetes object goes to the new cluster's provider.
	for _, r := range m.All() {
		switch {
		case strings.HasPrefix(r.Type, "gcp:"):
			if !strings.HasPrefix(r.Parent, "paddock:gcp:") {
				t.Errorf("%s %s is parented to %s", r.Type, r.Name, r.Parent)
			}
		case strings.HasPrefix(r.Type, "kubernetes:"):
			if r.Provider != tK8sProv+"::vmdemo-gke" {
				t.Errorf("%s %s uses provider %q, want the GKE cluster's", r.Type, r.Name, r.Provider)
			}
			r.WantString(t, "metadata.labels[app.kubernetes.io/managed-by]", "paddock")
			r.WantString(t, "metadata.labels[paddock.dev/platform]", "vmdemo")
		}
	}
}

func TestMockClusterIsHardened(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	c := m.Find(t, tCluster, "demo")
	c.WantString(t, "name", "demo")
	c.WantString(t, "project", "paddock-demo")
	c.WantString(t, "location", "europe-west4")
	c.WantString(t, "datapathProvider", "ADVANCED_DATAPATH")
	c.WantString(t, "networkingMode", "VPC_NATIVE")
	c.WantString(t, "workloadIdentityConfig.workloadPool", "paddock-demo.svc.id.goog")
	c.WantBool(t, "privateClusterConfig.enablePrivateNodes", true)
	c.WantBool(t, "privateClusterConfig.enablePrivateEndpoint", false)
	c.WantString(t, "privateClusterConfig.masterIpv4CidrBlock", gcpinputs.DefaultMasterCIDR)
	c.WantString(t, "masterAuthorizedNetworksConfig.cidrBlocks[0].cidrBlock", "203.0.113.0/24")
	c.WantString(t, "masterAuthorizedNetworksConfig.cidrBlocks[0].displayName", "office")
	c.WantBool(t, "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled", false)
	if n := len(c.Get(t, "masterAuthorizedNetworksConfig.cidrBlocks").ArrayValue()); n != 1 {
		t.Errorf("%d authorized networks, want exactly the declared one", n)
	}
	c.WantBool(t, "enableShieldedNodes", true)
	c.WantBool(t, "enableLegacyAbac", false)
	c.WantBool(t, "masterAuth.clientCertificateConfig.issueClientCertificate", false)
	c.WantString(t, "releaseChannel.channel", "REGULAR")
	logging := c.StringsAt(t, "loggingConfig.enableComponents")
	for _, comp := range []string{"SYSTEM_COMPONENTS", "WORKLOADS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER"} {
		if !slices.Contains(logging, comp) {
			t.Errorf("logging components %v lack %s", logging, comp)
		}
	}
	c.WantBool(t, "removeDefaultNodePool", true)
	c.WantNumber(t, "initialNodeCount", 1)
	c.WantBool(t, "deletionProtection", true)
	c.Absent(t, "enableFqdnNetworkPolicy")
	c.Absent(t, "networkPolicy")
	// The short-lived default pool runs as the node account too, behind
	// Workload Identity.
	c.WantString(t, "nodeConfig.serviceAccount", "demo-nodes@paddock-demo.iam.gserviceaccount.com")
	c.WantString(t, "nodeConfig.workloadMetadataConfig.mode", "GKE_METADATA")
	c.WantString(t, "resourceLabels[managed-by]", "paddock")
	c.WantString(t, "resourceLabels[paddock-platform]", "demo")
	if len(m.OfType(tAuditCfg)) != 0 {
		t.Error("data access audit config created without being asked for")
	}

	k, _ := runPlatform(t, kataPlatform())
	kc := k.Find(t, tCluster, "vmdemo")
	kc.WantBool(t, "enableFqdnNetworkPolicy", true)
	kc.WantString(t, "releaseChannel.channel", "STABLE")
}

func TestMockDataAccessAuditLogs(t *testing.T) {
	p := gvisorPlatform()
	p.Cluster.DataAccessAuditLogs = true
	m, _ := runPlatform(t, p)
	a := m.Find(t, tAuditCfg, "demo-container-data-access")
	a.WantString(t, "service", "container.googleapis.com")
	a.WantString(t, "auditLogConfigs[0].logType", "DATA_READ")
	a.WantString(t, "auditLogConfigs[1].logType", "DATA_WRITE")
}

func TestMockKubeconfigIsSecretAndExecAuth(t *testing.T) {
	m, c := runPlatform(t, gvisorPlatform())
	if !pulumi.IsSecret(c.platform.Kubeconfig) {
		t.Error("the platform's kubeconfig output is not a secret")
	}
	kc := c.kubeconfig
	for _, want := range []string{"server: https://" + pulumitest.MockEndpoint, "certificate-authority-data: " + pulumitest.MockCA,
		"command: gke-gcloud-auth-plugin", "current-context: gke_paddock-demo_europe-west4_demo"} {
		if !strings.Contains(kc, want) {
			t.Errorf("kubeconfig lacks %q:\n%s", want, kc)
		}
	}
	for _, bad := range []string{"token:", "client-key", "client-certificate-data", "password"} {
		if strings.Contains(kc, bad) {
			t.Errorf("kubeconfig carries a static credential (%s)", bad)
		}
	}
	prov := m.Find(t, tK8sProv, "demo-gke")
	v, ok := pulumitest.Lookup(prov.Inputs, "kubeconfig")
	if !ok || !v.ContainsSecrets() {
		t.Errorf("the kubernetes provider's kubeconfig input is not secret: %v", v)
	}
	if got := pulumitest.Unwrap(v); !got.IsString() || got.StringValue() != kc {
		t.Error("the provider does not get the platform's kubeconfig")
	}
	prov.WantBool(t, "enableServerSideApply", true)

	// A private-only control plane is reached on its private endpoint.
	p := gvisorPlatform()
	p.Cluster.PrivateEndpoint = true
	_, pc := runPlatform(t, p)
	if !strings.Contains(pc.kubeconfig, "server: https://"+mockPrivateEndpoint) {
		t.Errorf("private endpoint kubeconfig:\n%s", pc.kubeconfig)
	}
}

func TestMockNodeServiceAccountIsLeastPrivilege(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	sa := m.Find(t, tAccount, "demo-nodes")
	sa.WantString(t, "accountId", "demo-nodes")
	var nodeRoles []string
	for _, r := range m.OfType(tProjectIAM) {
		if r.Get(t, "member").StringValue() == "serviceAccount:demo-nodes@paddock-demo.iam.gserviceaccount.com" {
			nodeRoles = append(nodeRoles, r.Get(t, "role").StringValue())
		}
	}
	if !reflect.DeepEqual(nodeRoles, []string{gcpinputs.NodeServiceAccountRole}) {
		t.Errorf("node service account roles %v, want only %s", nodeRoles, gcpinputs.NodeServiceAccountRole)
	}
	for _, np := range m.OfType(tNodePool) {
		np.WantString(t, "nodeConfig.serviceAccount", "demo-nodes@paddock-demo.iam.gserviceaccount.com")
		if s := np.StringsAt(t, "nodeConfig.oauthScopes"); !reflect.DeepEqual(s, []string{gcpinputs.CloudPlatformScope}) {
			t.Errorf("%s scopes %v", np.Name, s)
		}
		np.WantString(t, "nodeConfig.workloadMetadataConfig.mode", "GKE_METADATA")
		np.WantBool(t, "nodeConfig.shieldedInstanceConfig.enableSecureBoot", true)
		np.WantBool(t, "nodeConfig.shieldedInstanceConfig.enableIntegrityMonitoring", true)
		np.WantString(t, "nodeConfig.metadata[disable-legacy-endpoints]", "true")
		np.WantBool(t, "management.autoRepair", true)
		np.WantBool(t, "management.autoUpgrade", true)
		np.WantString(t, "cluster", "demo")
	}

	// An existing node account is used as given, and none is created.
	p := gvisorPlatform()
	p.Cluster.NodeServiceAccount = "nodes@paddock-demo.iam.gserviceaccount.com"
	e, _ := runPlatform(t, p)
	for _, a := range e.OfType(tAccount) {
		if strings.Contains(a.Name, "nodes") {
			t.Errorf("created %s although a node account was given", a.Name)
		}
	}
	e.Find(t, tNodePool, "demo/gvisor").WantString(t, "nodeConfig.serviceAccount", "nodes@paddock-demo.iam.gserviceaccount.com")
}

func TestMockGVisorPool(t *testing.T) {
	m, c := runPlatform(t, gvisorPlatform())
	np := m.Find(t, tNodePool, "demo/gvisor")
	np.WantString(t, "name", "gvisor")
	np.WantString(t, "nodeConfig.sandboxConfig.sandboxType", "gvisor")
	np.WantString(t, "nodeConfig.imageType", "COS_CONTAINERD")
	np.WantString(t, "nodeConfig.machineType", "e2-standard-4")
	np.WantNumber(t, "autoscaling.minNodeCount", 1)
	np.WantNumber(t, "autoscaling.maxNodeCount", 3)
	np.WantString(t, "nodeConfig.labels[paddock.dev/pool]", "gvisor")
	np.Absent(t, "nodeConfig.advancedMachineFeatures")
	// GKE labels and taints gVisor nodes itself: no duplicate.
	np.Absent(t, "nodeConfig.labels[sandbox.gke.io/runtime]")
	if v, ok := pulumitest.Lookup(np.Inputs, "nodeConfig.taints"); ok && len(pulumitest.Unwrap(v).ArrayValue()) > 0 {
		t.Errorf("gVisor pool sets taints %v: GKE applies sandbox.gke.io/runtime itself", v)
	}
	// The scheduling the RuntimeClass must use is exactly what GKE applies.
	gv := c.platform.NodePools[0].Scheduling
	want := gcpinputs.Scheduling{
		NodeSelector: map[string]string{"sandbox.gke.io/runtime": "gvisor"},
		Tolerations:  []gcpinputs.Toleration{{Key: "sandbox.gke.io/runtime", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"}},
	}
	if !reflect.DeepEqual(gv, want) {
		t.Errorf("gVisor scheduling %+v, want %+v", gv, want)
	}
	rcs := c.platform.RuntimeClasses
	if len(rcs) != 1 || rcs[0].Name != "gvisor" || rcs[0].Handler != "gvisor" || !rcs[0].ManagedByGKE || !reflect.DeepEqual(rcs[0].Scheduling, want) {
		t.Errorf("runtime classes %+v", rcs)
	}
	if !reflect.DeepEqual(c.rcs, []string{"gvisor"}) {
		t.Errorf("runtimeClasses output %v", c.rcs)
	}
	// No Kata, and no RuntimeClass object of Paddock's for gvisor (GKE owns it).
	for _, r := range m.All() {
		if r.Type == "paddock:gcp:Kata" || r.Type == "kubernetes:node.k8s.io/v1:RuntimeClass" || r.Type == "kubernetes:apps/v1:DaemonSet" {
			t.Errorf("gVisor-only platform registers %s %s", r.Type, r.Name)
		}
	}
}

func TestMockSystemPool(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	sys := m.Find(t, tNodePool, "demo/system")
	sys.WantString(t, "name", "system")
	sys.WantString(t, "nodeConfig.imageType", "COS_CONTAINERD")
	sys.Absent(t, "nodeConfig.sandboxConfig")
	sys.Absent(t, "nodeConfig.advancedMachineFeatures")
	if v, ok := pulumitest.Lookup(sys.Inputs, "nodeConfig.taints"); ok && len(pulumitest.Unwrap(v).ArrayValue()) > 0 {
		t.Errorf("system pool is tainted: %v", v)
	}
	sys.WantNumber(t, "autoscaling.minNodeCount", 1)
}

func TestMockKVMPool(t *testing.T) {
	m, c := runPlatform(t, kataPlatform())
	np := m.Find(t, tNodePool, "vmdemo/kata")
	np.WantBool(t, "nodeConfig.advancedMachineFeatures.enableNestedVirtualization", true)
	np.WantNumber(t, "nodeConfig.advancedMachineFeatures.threadsPerCore", 0)
	np.WantString(t, "nodeConfig.imageType", "UBUNTU_CONTAINERD")
	np.WantString(t, "nodeConfig.machineType", "n2-standard-8")
	np.WantNumber(t, "nodeConfig.diskSizeGb", 100)
	np.Absent(t, "nodeConfig.sandboxConfig")
	np.WantString(t, "nodeConfig.labels[paddock.dev/isolation]", "kvm")
	np.WantString(t, "nodeConfig.taints[0].key", "paddock.dev/isolation")
	np.WantString(t, "nodeConfig.taints[0].value", "kvm")
	np.WantString(t, "nodeConfig.taints[0].effect", "NO_SCHEDULE")
	np.WantString(t, "nodeConfig.taints[1].key", "paddock.dev/tenant")
	np.WantNumber(t, "autoscaling.minNodeCount", 0)
	np.WantNumber(t, "autoscaling.maxNodeCount", 4)

	sch := c.platform.NodePools[0].Scheduling
	if sch.NodeSelector["paddock.dev/isolation"] != "kvm" || len(sch.Tolerations) != 2 {
		t.Errorf("KVM scheduling %+v", sch)
	}

	// Disabling SMT is one thread per core.
	p := kataPlatform()
	p.NodePools[0].DisableSMT = true
	s, _ := runPlatform(t, p)
	s.Find(t, tNodePool, "vmdemo/kata").WantNumber(t, "nodeConfig.advancedMachineFeatures.threadsPerCore", 1)
}

func TestMockKataInstall(t *testing.T) {
	m, c := runPlatform(t, kataPlatform())
	sch := c.platform.NodePools[0].Scheduling
	ds := m.Find(t, "kubernetes:apps/v1:DaemonSet", "kube-system/kata-deploy")
	pod := "spec.template.spec."
	ds.WantString(t, pod+"containers[0].image", kata.Image)
	if !strings.Contains(kata.Image, "@sha256:") || !strings.Contains(kata.Image, ":"+kata.Version+"@") {
		t.Errorf("kata-deploy image %s is not pinned by version and digest", kata.Image)
	}
	ds.WantString(t, pod+"containers[0].imagePullPolicy", "IfNotPresent")
	ds.WantString(t, pod+"nodeSelector[paddock.dev/isolation]", "kvm")
	if n := len(ds.Get(t, pod+"nodeSelector").ObjectValue()); n != 1 {
		t.Errorf("kata-deploy node selector has %d keys", n)
	}
	for i, tol := range sch.Tolerations {
		ds.WantString(t, pod+"tolerations["+strconv.Itoa(i)+"].key", tol.Key)
		ds.WantString(t, pod+"tolerations["+strconv.Itoa(i)+"].value", tol.Value)
		ds.WantString(t, pod+"tolerations["+strconv.Itoa(i)+"].effect", tol.Effect)
	}
	if n := len(ds.Get(t, pod+"tolerations").ArrayValue()); n != len(sch.Tolerations) {
		t.Errorf("kata-deploy tolerates %d taints, the pool has %d", n, len(sch.Tolerations))
	}
	ds.WantString(t, pod+"serviceAccountName", kata.ServiceAccount)
	env := map[string]string{}
	for _, e := range ds.Get(t, pod+"containers[0].env").ArrayValue() {
		o := pulumitest.Unwrap(e).ObjectValue()
		if v, ok := o["value"]; ok {
			env[o["name"].StringValue()] = v.StringValue()
		}
	}
	for k, want := range map[string]string{"SHIMS": "qemu clh", "DEFAULT_SHIM": "qemu", "CREATE_RUNTIMECLASSES": "false", "CREATE_DEFAULT_RUNTIMECLASS": "false"} {
		if env[k] != want {
			t.Errorf("kata-deploy env %s = %q, want %q", k, env[k], want)
		}
	}

	// RBAC: nodes get/patch, nothing else.
	cr := m.Find(t, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", kata.ClusterRole)
	rules := cr.Get(t, "rules").ArrayValue()
	if len(rules) != 1 {
		t.Fatalf("kata-deploy ClusterRole has %d rules", len(rules))
	}
	cr.WantString(t, "rules[0].resources[0]", "nodes")
	if v := cr.StringsAt(t, "rules[0].verbs"); !reflect.DeepEqual(v, []string{"get", "patch"}) {
		t.Errorf("kata-deploy verbs %v", v)
	}
	crb := m.Find(t, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", kata.ClusterRole)
	crb.WantString(t, "subjects[0].name", kata.ServiceAccount)
	crb.WantString(t, "subjects[0].namespace", "kube-system")

	// RuntimeClasses: handler, overhead, scheduling onto the pool.
	for _, tc := range []struct{ name, cpu, mem string }{{"kata-qemu", "250m", "320Mi"}, {"kata-clh", "250m", "130Mi"}} {
		rc := m.Find(t, "kubernetes:node.k8s.io/v1:RuntimeClass", tc.name)
		rc.WantString(t, "handler", tc.name)
		rc.WantString(t, "overhead.podFixed.cpu", tc.cpu)
		rc.WantString(t, "overhead.podFixed.memory", tc.mem)
		rc.WantString(t, "scheduling.nodeSelector[paddock.dev/isolation]", "kvm")
		// The shared RuntimeClass tolerates the KVM dedication taint only, not
		// the pool's tenant taint: that one a tenant's template must carry.
		if n := len(rc.Get(t, "scheduling.tolerations").ArrayValue()); n != 1 {
			t.Errorf("%s tolerates %d taints, want only the isolation taint", tc.name, n)
		}
		rc.WantString(t, "scheduling.tolerations[0].key", "paddock.dev/isolation")
		rc.WantString(t, "scheduling.tolerations[0].value", "kvm")
		rc.WantString(t, "scheduling.tolerations[0].effect", "NoSchedule")
	}
	var names []string
	for _, rc := range c.platform.RuntimeClasses {
		names = append(names, rc.Name)
	}
	if !reflect.DeepEqual(names, []string{"kata-qemu", "kata-clh"}) || !reflect.DeepEqual(c.rcs, names) {
		t.Errorf("runtime classes %v / output %v", names, c.rcs)
	}
}

func TestMockWorkloadIdentity(t *testing.T) {
	m, c := runPlatform(t, gvisorPlatform())
	sa := m.Find(t, tAccount, "agents-team-a/tool-gateway")
	sa.WantString(t, "accountId", "demo-team-a-tool-gateway")
	sa.WantString(t, "project", "paddock-demo")
	email := "demo-team-a-tool-gateway@paddock-demo.iam.gserviceaccount.com"

	// Exactly the roles given, on the project, to this account.
	var roles []string
	for _, r := range m.OfType(tProjectIAM) {
		if r.Get(t, "member").StringValue() == "serviceAccount:"+email {
			roles = append(roles, r.Get(t, "role").StringValue())
			r.WantString(t, "project", "paddock-demo")
		}
	}
	slices.Sort(roles)
	if !reflect.DeepEqual(roles, []string{"roles/aiplatform.user", "roles/storage.objectViewer"}) {
		t.Errorf("identity roles %v", roles)
	}
	// Impersonable by exactly one KSA.
	binds := m.OfType(tSAIAM)
	if len(binds) != 1 {
		t.Fatalf("%d service account IAM members, want 1", len(binds))
	}
	binds[0].WantString(t, "role", "roles/iam.workloadIdentityUser")
	binds[0].WantString(t, "member", "serviceAccount:paddock-demo.svc.id.goog[agents-team-a/tool-gateway]")
	binds[0].WantString(t, "serviceAccountId", "projects/paddock-demo/serviceAccounts/"+email)

	// The annotation the in-cluster layer puts on the KSA.
	if c.identities["agents-team-a/tool-gateway"] != email {
		t.Errorf("identities output %v", c.identities)
	}
	if ann := c.ksaAnnotations["agents-team-a/tool-gateway"]; !reflect.DeepEqual(ann, map[string]string{"iam.gke.io/gcp-service-account": email}) {
		t.Errorf("KSA annotations %v", ann)
	}
}

func TestMockNoKeysNoStaticCredentials(t *testing.T) {
	for _, args := range []PlatformArgs{gvisorPlatform(), kataPlatform()} {
		m, _ := runPlatform(t, args)
		if keys := m.OfType(tSAKey); len(keys) > 0 {
			t.Errorf("%s: service account keys created: %v", args.Name, keys)
		}
		for _, r := range m.All() {
			if strings.Contains(strings.ToLower(r.Type), "key") || strings.Contains(strings.ToLower(r.Type), "hmac") {
				t.Errorf("%s: credential-like resource %s %s", args.Name, r.Type, r.Name)
			}
		}
		m.Find(t, tCluster, args.Name).WantBool(t, "masterAuth.clientCertificateConfig.issueClientCertificate", false)
		// No IAM grant is broader than what was asked for.
		for _, r := range append(m.OfType(tProjectIAM), m.OfType(tSAIAM)...) {
			switch role := r.Get(t, "role").StringValue(); role {
			case "roles/owner", "roles/editor", "roles/iam.serviceAccountKeyAdmin", "roles/iam.serviceAccountTokenCreator":
				t.Errorf("%s: %s grants %s", args.Name, r.Name, role)
			}
		}
	}
}

func TestMockAuditSinkStorage(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	b := m.Find(t, tBucket, "demo-audit")
	b.WantString(t, "name", "paddock-demo-audit")
	b.WantString(t, "location", "EU")
	b.WantBool(t, "uniformBucketLevelAccess", true)
	b.WantString(t, "publicAccessPrevention", "enforced")
	b.WantNumber(t, "retentionPolicy.retentionPeriod", 365*24*3600)
	b.WantBool(t, "retentionPolicy.isLocked", false)
	b.WantBool(t, "forceDestroy", false)

	s := m.Find(t, tSink, "demo-audit")
	s.WantString(t, "destination", "storage.googleapis.com/paddock-demo-audit")
	s.WantBool(t, "uniqueWriterIdentity", true)
	filter, err := gcpinputs.AuditFilter(gcpinputs.AuditFilterArgs{Project: "paddock-demo", Location: "europe-west4", ClusterName: "demo",
		Namespaces: []string{"agents-team-a"}, Events: gcpinputs.DefaultAuditEvents()})
	if err != nil {
		t.Fatal(err)
	}
	s.WantString(t, "filter", filter)

	g := m.Find(t, tBucketIAM, "demo-audit-writer")
	g.WantString(t, "bucket", "paddock-demo-audit")
	g.WantString(t, "role", "roles/storage.objectCreator")
	g.WantString(t, "member", pulumitest.MockSinkWriter("demo-audit"))
}

func TestMockAuditSinkBigQueryAndPubSub(t *testing.T) {
	m, _ := runPlatform(t, kataPlatform())
	d := m.Find(t, tDataset, "vmdemo-bq")
	d.WantString(t, "datasetId", "paddock_audit")
	d.WantBool(t, "deleteContentsOnDestroy", false)
	d.WantNumber(t, "defaultTableExpirationMs", 400*24*3600*1000)
	s := m.Find(t, tSink, "vmdemo-bq")
	s.WantString(t, "destination", "bigquery.googleapis.com/projects/paddock-demo/datasets/paddock_audit")
	s.WantBool(t, "uniqueWriterIdentity", true)
	s.WantBool(t, "bigqueryOptions.usePartitionedTables", true)
	g := m.Find(t, tDatasetIAM, "vmdemo-bq-writer")
	g.WantString(t, "datasetId", "paddock_audit")
	g.WantString(t, "role", "roles/bigquery.dataEditor")
	g.WantString(t, "member", pulumitest.MockSinkWriter("vmdemo-bq"))

	tp := m.Find(t, tTopic, "vmdemo-stream")
	tp.WantString(t, "name", "paddock-audit")
	tp.WantString(t, "messageRetentionDuration", "604800s")
	ps := m.Find(t, tSink, "vmdemo-stream")
	ps.WantString(t, "destination", "pubsub.googleapis.com/projects/paddock-demo/topics/paddock-audit")
	ps.WantBool(t, "uniqueWriterIdentity", true)
	if f := ps.Get(t, "filter").StringValue(); !strings.Contains(f, "policy-action") || !strings.Contains(f, "k8s_container") {
		t.Errorf("every-event filter lacks drops or pod logs:\n%s", f)
	}
	pg := m.Find(t, tTopicIAM, "vmdemo-stream-writer")
	pg.WantString(t, "topic", "paddock-audit")
	pg.WantString(t, "role", "roles/pubsub.publisher")
	pg.WantString(t, "member", pulumitest.MockSinkWriter("vmdemo-stream"))

	// network_drops switches Dataplane V2 deny logging on, in the cluster.
	nl := m.Find(t, "kubernetes:networking.gke.io/v1alpha1:NetworkLogging", "default")
	nl.WantBool(t, "spec.cluster.deny.log", true)
	nl.WantBool(t, "spec.cluster.allow.log", false)
	g2, _ := runPlatform(t, gvisorPlatform())
	if len(g2.OfType("kubernetes:networking.gke.io/v1alpha1:NetworkLogging")) != 0 {
		t.Error("NetworkLogging registered without a network_drops sink")
	}
}

func TestMockAlerts(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	q := m.Find(t, tAlert, "demo-alerts-quota-saturation")
	q.WantString(t, "conditions[0].conditionMatchedLog.filter",
		gcpinputs.QuotaExceededFilter("paddock-demo", "europe-west4", "demo", []string{"agents-team-a"}))

	q.WantString(t, "alertStrategy.notificationRateLimit.period", "300s")
	l := m.Find(t, tAlert, "demo-alerts-sandbox-lifetime")
	l.WantString(t, "conditions[0].conditionThreshold.filter", gcpinputs.SandboxUptimeFilter("europe-west4", "demo", []string{"agents-team-a"}))
	l.WantString(t, "conditions[0].conditionThreshold.comparison", "COMPARISON_GT")
	l.WantNumber(t, "conditions[0].conditionThreshold.thresholdValue", 5*3600)
	k, _ := runPlatform(t, kataPlatform())
	if n := len(k.OfType(tAlert)); n != 0 {
		t.Errorf("%d alert policies without alerts configured", n)
	}
}

func TestMockRejectsInvalidArgs(t *testing.T) {
	p := kataPlatform()
	p.NodePools[0].MachineType = "e2-standard-8"
	m, _, err := tryPlatform(p)
	if err == nil || !strings.Contains(err.Error(), "node_pool.kata.machine_type") || !strings.Contains(err.Error(), "GCP-010") {
		t.Fatalf("E2 KVM pool: err = %v", err)
	}
	if len(m.All()) != 0 {
		t.Errorf("resources registered before validation: %s", m.List())
	}
}
