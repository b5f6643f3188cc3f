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
	"github.com/paddock-platform/paddock/components/gcp/spec"
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
		if r := m.find(t, want.typ, want.name); r.parent != want.parent {
			t.Errorf("%s %s: parent %s, want %s", want.typ, want.name, r.parent, want.parent)
		}
	}
	// Every cloud resource sits under a paddock:gcp component; every
	// Kubernetes object goes to the new cluster's provider.
	for _, r := range m.all {
		switch {
		case strings.HasPrefix(r.typ, "gcp:"):
			if !strings.HasPrefix(r.parent, "paddock:gcp:") {
				t.Errorf("%s %s is parented to %s", r.typ, r.name, r.parent)
			}
		case strings.HasPrefix(r.typ, "kubernetes:"):
			if r.provider != tK8sProv+"::vmdemo-gke" {
				t.Errorf("%s %s uses provider %q, want the GKE cluster's", r.typ, r.name, r.provider)
			}
			wantString(t, r, "metadata.labels[app.kubernetes.io/managed-by]", "paddock")
			wantString(t, r, "metadata.labels[paddock.dev/platform]", "vmdemo")
		}
	}
}

func TestMockClusterIsHardened(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	c := m.find(t, tCluster, "demo")
	wantString(t, c, "name", "demo")
	wantString(t, c, "project", "paddock-demo")
	wantString(t, c, "location", "europe-west4")
	wantString(t, c, "datapathProvider", "ADVANCED_DATAPATH")
	wantString(t, c, "networkingMode", "VPC_NATIVE")
	wantString(t, c, "workloadIdentityConfig.workloadPool", "paddock-demo.svc.id.goog")
	wantBool(t, c, "privateClusterConfig.enablePrivateNodes", true)
	wantBool(t, c, "privateClusterConfig.enablePrivateEndpoint", false)
	wantString(t, c, "privateClusterConfig.masterIpv4CidrBlock", spec.DefaultMasterCIDR)
	wantString(t, c, "masterAuthorizedNetworksConfig.cidrBlocks[0].cidrBlock", "203.0.113.0/24")
	wantString(t, c, "masterAuthorizedNetworksConfig.cidrBlocks[0].displayName", "office")
	wantBool(t, c, "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled", false)
	if n := len(get(t, c, "masterAuthorizedNetworksConfig.cidrBlocks").ArrayValue()); n != 1 {
		t.Errorf("%d authorized networks, want exactly the declared one", n)
	}
	wantBool(t, c, "enableShieldedNodes", true)
	wantBool(t, c, "enableLegacyAbac", false)
	wantBool(t, c, "masterAuth.clientCertificateConfig.issueClientCertificate", false)
	wantString(t, c, "releaseChannel.channel", "REGULAR")
	logging := stringsAt(t, c, "loggingConfig.enableComponents")
	for _, comp := range []string{"SYSTEM_COMPONENTS", "WORKLOADS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER"} {
		if !slices.Contains(logging, comp) {
			t.Errorf("logging components %v lack %s", logging, comp)
		}
	}
	wantBool(t, c, "removeDefaultNodePool", true)
	wantNumber(t, c, "initialNodeCount", 1)
	wantBool(t, c, "deletionProtection", true)
	absent(t, c, "enableFqdnNetworkPolicy")
	absent(t, c, "networkPolicy")
	// The short-lived default pool runs as the node account too, behind
	// Workload Identity.
	wantString(t, c, "nodeConfig.serviceAccount", "demo-nodes@paddock-demo.iam.gserviceaccount.com")
	wantString(t, c, "nodeConfig.workloadMetadataConfig.mode", "GKE_METADATA")
	wantString(t, c, "resourceLabels[managed-by]", "paddock")
	wantString(t, c, "resourceLabels[paddock-platform]", "demo")
	if len(m.ofType(tAuditCfg)) != 0 {
		t.Error("data access audit config created without being asked for")
	}

	k, _ := runPlatform(t, kataPlatform())
	kc := k.find(t, tCluster, "vmdemo")
	wantBool(t, kc, "enableFqdnNetworkPolicy", true)
	wantString(t, kc, "releaseChannel.channel", "STABLE")
}

func TestMockDataAccessAuditLogs(t *testing.T) {
	p := gvisorPlatform()
	p.Cluster.DataAccessAuditLogs = true
	m, _ := runPlatform(t, p)
	a := m.find(t, tAuditCfg, "demo-container-data-access")
	wantString(t, a, "service", "container.googleapis.com")
	wantString(t, a, "auditLogConfigs[0].logType", "DATA_READ")
	wantString(t, a, "auditLogConfigs[1].logType", "DATA_WRITE")
}

func TestMockKubeconfigIsSecretAndExecAuth(t *testing.T) {
	m, c := runPlatform(t, gvisorPlatform())
	if !pulumi.IsSecret(c.platform.Kubeconfig) {
		t.Error("the platform's kubeconfig output is not a secret")
	}
	kc := c.kubeconfig
	for _, want := range []string{"server: https://" + mockEndpoint, "certificate-authority-data: " + mockCA,
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
	prov := m.find(t, tK8sProv, "demo-gke")
	v, ok := lookup(prov.inputs, "kubeconfig")
	if !ok || !v.ContainsSecrets() {
		t.Errorf("the kubernetes provider's kubeconfig input is not secret: %v", v)
	}
	if got := unwrap(v); !got.IsString() || got.StringValue() != kc {
		t.Error("the provider does not get the platform's kubeconfig")
	}
	wantBool(t, prov, "enableServerSideApply", true)

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
	sa := m.find(t, tAccount, "demo-nodes")
	wantString(t, sa, "accountId", "demo-nodes")
	var nodeRoles []string
	for _, r := range m.ofType(tProjectIAM) {
		if get(t, r, "member").StringValue() == "serviceAccount:demo-nodes@paddock-demo.iam.gserviceaccount.com" {
			nodeRoles = append(nodeRoles, get(t, r, "role").StringValue())
		}
	}
	if !reflect.DeepEqual(nodeRoles, []string{spec.NodeServiceAccountRole}) {
		t.Errorf("node service account roles %v, want only %s", nodeRoles, spec.NodeServiceAccountRole)
	}
	for _, np := range m.ofType(tNodePool) {
		wantString(t, np, "nodeConfig.serviceAccount", "demo-nodes@paddock-demo.iam.gserviceaccount.com")
		if s := stringsAt(t, np, "nodeConfig.oauthScopes"); !reflect.DeepEqual(s, []string{spec.CloudPlatformScope}) {
			t.Errorf("%s scopes %v", np.name, s)
		}
		wantString(t, np, "nodeConfig.workloadMetadataConfig.mode", "GKE_METADATA")
		wantBool(t, np, "nodeConfig.shieldedInstanceConfig.enableSecureBoot", true)
		wantBool(t, np, "nodeConfig.shieldedInstanceConfig.enableIntegrityMonitoring", true)
		wantString(t, np, "nodeConfig.metadata[disable-legacy-endpoints]", "true")
		wantBool(t, np, "management.autoRepair", true)
		wantBool(t, np, "management.autoUpgrade", true)
		wantString(t, np, "cluster", "demo")
	}

	// An existing node account is used as given, and none is created.
	p := gvisorPlatform()
	p.Cluster.NodeServiceAccount = "nodes@paddock-demo.iam.gserviceaccount.com"
	e, _ := runPlatform(t, p)
	for _, a := range e.ofType(tAccount) {
		if strings.Contains(a.name, "nodes") {
			t.Errorf("created %s although a node account was given", a.name)
		}
	}
	wantString(t, e.find(t, tNodePool, "demo/gvisor"), "nodeConfig.serviceAccount", "nodes@paddock-demo.iam.gserviceaccount.com")
}

func TestMockGVisorPool(t *testing.T) {
	m, c := runPlatform(t, gvisorPlatform())
	np := m.find(t, tNodePool, "demo/gvisor")
	wantString(t, np, "name", "gvisor")
	wantString(t, np, "nodeConfig.sandboxConfig.sandboxType", "gvisor")
	wantString(t, np, "nodeConfig.imageType", "COS_CONTAINERD")
	wantString(t, np, "nodeConfig.machineType", "e2-standard-4")
	wantNumber(t, np, "autoscaling.minNodeCount", 1)
	wantNumber(t, np, "autoscaling.maxNodeCount", 3)
	wantString(t, np, "nodeConfig.labels[paddock.dev/pool]", "gvisor")
	absent(t, np, "nodeConfig.advancedMachineFeatures")
	// GKE labels and taints gVisor nodes itself: no duplicate.
	absent(t, np, "nodeConfig.labels[sandbox.gke.io/runtime]")
	if v, ok := lookup(np.inputs, "nodeConfig.taints"); ok && len(unwrap(v).ArrayValue()) > 0 {
		t.Errorf("gVisor pool sets taints %v: GKE applies sandbox.gke.io/runtime itself", v)
	}
	// The scheduling the RuntimeClass must use is exactly what GKE applies.
	gv := c.platform.NodePools[0].Scheduling
	want := spec.Scheduling{
		NodeSelector: map[string]string{"sandbox.gke.io/runtime": "gvisor"},
		Tolerations:  []spec.Toleration{{Key: "sandbox.gke.io/runtime", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"}},
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
	for _, r := range m.all {
		if r.typ == "paddock:gcp:Kata" || r.typ == "kubernetes:node.k8s.io/v1:RuntimeClass" || r.typ == "kubernetes:apps/v1:DaemonSet" {
			t.Errorf("gVisor-only platform registers %s %s", r.typ, r.name)
		}
	}
}

func TestMockSystemPool(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	sys := m.find(t, tNodePool, "demo/system")
	wantString(t, sys, "name", "system")
	wantString(t, sys, "nodeConfig.imageType", "COS_CONTAINERD")
	absent(t, sys, "nodeConfig.sandboxConfig")
	absent(t, sys, "nodeConfig.advancedMachineFeatures")
	if v, ok := lookup(sys.inputs, "nodeConfig.taints"); ok && len(unwrap(v).ArrayValue()) > 0 {
		t.Errorf("system pool is tainted: %v", v)
	}
	wantNumber(t, sys, "autoscaling.minNodeCount", 1)
}

func TestMockKVMPool(t *testing.T) {
	m, c := runPlatform(t, kataPlatform())
	np := m.find(t, tNodePool, "vmdemo/kata")
	wantBool(t, np, "nodeConfig.advancedMachineFeatures.enableNestedVirtualization", true)
	wantNumber(t, np, "nodeConfig.advancedMachineFeatures.threadsPerCore", 0)
	wantString(t, np, "nodeConfig.imageType", "UBUNTU_CONTAINERD")
	wantString(t, np, "nodeConfig.machineType", "n2-standard-8")
	wantNumber(t, np, "nodeConfig.diskSizeGb", 100)
	absent(t, np, "nodeConfig.sandboxConfig")
	wantString(t, np, "nodeConfig.labels[paddock.dev/isolation]", "kvm")
	wantString(t, np, "nodeConfig.taints[0].key", "paddock.dev/isolation")
	wantString(t, np, "nodeConfig.taints[0].value", "kvm")
	wantString(t, np, "nodeConfig.taints[0].effect", "NO_SCHEDULE")
	wantString(t, np, "nodeConfig.taints[1].key", "paddock.dev/tenant")
	wantNumber(t, np, "autoscaling.minNodeCount", 0)
	wantNumber(t, np, "autoscaling.maxNodeCount", 4)

	sch := c.platform.NodePools[0].Scheduling
	if sch.NodeSelector["paddock.dev/isolation"] != "kvm" || len(sch.Tolerations) != 2 {
		t.Errorf("KVM scheduling %+v", sch)
	}

	// Disabling SMT is one thread per core.
	p := kataPlatform()
	p.NodePools[0].DisableSMT = true
	s, _ := runPlatform(t, p)
	wantNumber(t, s.find(t, tNodePool, "vmdemo/kata"), "nodeConfig.advancedMachineFeatures.threadsPerCore", 1)
}

func TestMockKataInstall(t *testing.T) {
	m, c := runPlatform(t, kataPlatform())
	sch := c.platform.NodePools[0].Scheduling
	ds := m.find(t, "kubernetes:apps/v1:DaemonSet", "kube-system/kata-deploy")
	pod := "spec.template.spec."
	wantString(t, ds, pod+"containers[0].image", kata.Image)
	if !strings.Contains(kata.Image, "@sha256:") || !strings.Contains(kata.Image, ":"+kata.Version+"@") {
		t.Errorf("kata-deploy image %s is not pinned by version and digest", kata.Image)
	}
	wantString(t, ds, pod+"containers[0].imagePullPolicy", "IfNotPresent")
	wantString(t, ds, pod+"nodeSelector[paddock.dev/isolation]", "kvm")
	if n := len(get(t, ds, pod+"nodeSelector").ObjectValue()); n != 1 {
		t.Errorf("kata-deploy node selector has %d keys", n)
	}
	for i, tol := range sch.Tolerations {
		wantString(t, ds, pod+"tolerations["+strconv.Itoa(i)+"].key", tol.Key)
		wantString(t, ds, pod+"tolerations["+strconv.Itoa(i)+"].value", tol.Value)
		wantString(t, ds, pod+"tolerations["+strconv.Itoa(i)+"].effect", tol.Effect)
	}
	if n := len(get(t, ds, pod+"tolerations").ArrayValue()); n != len(sch.Tolerations) {
		t.Errorf("kata-deploy tolerates %d taints, the pool has %d", n, len(sch.Tolerations))
	}
	wantString(t, ds, pod+"serviceAccountName", kata.ServiceAccount)
	env := map[string]string{}
	for _, e := range get(t, ds, pod+"containers[0].env").ArrayValue() {
		o := unwrap(e).ObjectValue()
		if v, ok := o["value"]; ok {
			env[o["name"].StringValue()] = v.StringValue()
		}
	}
	for k, want := range map[string]string{"SHIMS_X86_64": "qemu clh", "DEFAULT_SHIM_X86_64": "qemu", "CREATE_RUNTIMECLASSES": "false", "CREATE_DEFAULT_RUNTIMECLASS": "false"} {
		if env[k] != want {
			t.Errorf("kata-deploy env %s = %q, want %q", k, env[k], want)
		}
	}

	// RBAC: nodes get/patch, nothing else.
	cr := m.find(t, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", kata.ClusterRole)
	rules := get(t, cr, "rules").ArrayValue()
	if len(rules) != 1 {
		t.Fatalf("kata-deploy ClusterRole has %d rules", len(rules))
	}
	wantString(t, cr, "rules[0].resources[0]", "nodes")
	if v := stringsAt(t, cr, "rules[0].verbs"); !reflect.DeepEqual(v, []string{"get", "patch"}) {
		t.Errorf("kata-deploy verbs %v", v)
	}
	crb := m.find(t, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", kata.ClusterRole)
	wantString(t, crb, "subjects[0].name", kata.ServiceAccount)
	wantString(t, crb, "subjects[0].namespace", "kube-system")

	// RuntimeClasses: handler, overhead, scheduling onto the pool.
	for _, tc := range []struct{ name, cpu, mem string }{{"kata-qemu", "250m", "320Mi"}, {"kata-clh", "250m", "130Mi"}} {
		rc := m.find(t, "kubernetes:node.k8s.io/v1:RuntimeClass", tc.name)
		wantString(t, rc, "handler", tc.name)
		wantString(t, rc, "overhead.podFixed.cpu", tc.cpu)
		wantString(t, rc, "overhead.podFixed.memory", tc.mem)
		wantString(t, rc, "scheduling.nodeSelector[paddock.dev/isolation]", "kvm")
		// The shared RuntimeClass tolerates the KVM dedication taint only, not
		// the pool's tenant taint: that one a tenant's template must carry.
		if n := len(get(t, rc, "scheduling.tolerations").ArrayValue()); n != 1 {
			t.Errorf("%s tolerates %d taints, want only the isolation taint", tc.name, n)
		}
		wantString(t, rc, "scheduling.tolerations[0].key", "paddock.dev/isolation")
		wantString(t, rc, "scheduling.tolerations[0].value", "kvm")
		wantString(t, rc, "scheduling.tolerations[0].effect", "NoSchedule")
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
	sa := m.find(t, tAccount, "agents-team-a/tool-gateway")
	wantString(t, sa, "accountId", "demo-team-a-tool-gateway")
	wantString(t, sa, "project", "paddock-demo")
	email := "demo-team-a-tool-gateway@paddock-demo.iam.gserviceaccount.com"

	// Exactly the roles given, on the project, to this account.
	var roles []string
	for _, r := range m.ofType(tProjectIAM) {
		if get(t, r, "member").StringValue() == "serviceAccount:"+email {
			roles = append(roles, get(t, r, "role").StringValue())
			wantString(t, r, "project", "paddock-demo")
		}
	}
	slices.Sort(roles)
	if !reflect.DeepEqual(roles, []string{"roles/aiplatform.user", "roles/storage.objectViewer"}) {
		t.Errorf("identity roles %v", roles)
	}
	// Impersonable by exactly one KSA.
	binds := m.ofType(tSAIAM)
	if len(binds) != 1 {
		t.Fatalf("%d service account IAM members, want 1", len(binds))
	}
	wantString(t, binds[0], "role", "roles/iam.workloadIdentityUser")
	wantString(t, binds[0], "member", "serviceAccount:paddock-demo.svc.id.goog[agents-team-a/tool-gateway]")
	wantString(t, binds[0], "serviceAccountId", "projects/paddock-demo/serviceAccounts/"+email)

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
		if keys := m.ofType(tSAKey); len(keys) > 0 {
			t.Errorf("%s: service account keys created: %v", args.Name, keys)
		}
		for _, r := range m.all {
			if strings.Contains(strings.ToLower(r.typ), "key") || strings.Contains(strings.ToLower(r.typ), "hmac") {
				t.Errorf("%s: credential-like resource %s %s", args.Name, r.typ, r.name)
			}
		}
		wantBool(t, m.find(t, tCluster, args.Name), "masterAuth.clientCertificateConfig.issueClientCertificate", false)
		// No IAM grant is broader than what was asked for.
		for _, r := range append(m.ofType(tProjectIAM), m.ofType(tSAIAM)...) {
			switch role := get(t, r, "role").StringValue(); role {
			case "roles/owner", "roles/editor", "roles/iam.serviceAccountKeyAdmin", "roles/iam.serviceAccountTokenCreator":
				t.Errorf("%s: %s grants %s", args.Name, r.name, role)
			}
		}
	}
}

func TestMockAuditSinkStorage(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	b := m.find(t, tBucket, "demo-audit")
	wantString(t, b, "name", "paddock-demo-audit")
	wantString(t, b, "location", "EU")
	wantBool(t, b, "uniformBucketLevelAccess", true)
	wantString(t, b, "publicAccessPrevention", "enforced")
	wantNumber(t, b, "retentionPolicy.retentionPeriod", 365*24*3600)
	wantBool(t, b, "retentionPolicy.isLocked", false)
	wantBool(t, b, "forceDestroy", false)

	s := m.find(t, tSink, "demo-audit")
	wantString(t, s, "destination", "storage.googleapis.com/paddock-demo-audit")
	wantBool(t, s, "uniqueWriterIdentity", true)
	filter, err := spec.AuditFilter(spec.AuditFilterArgs{Project: "paddock-demo", Location: "europe-west4", ClusterName: "demo",
		Namespaces: []string{"agents-team-a"}, Events: spec.DefaultAuditEvents()})
	if err != nil {
		t.Fatal(err)
	}
	wantString(t, s, "filter", filter)

	g := m.find(t, tBucketIAM, "demo-audit-writer")
	wantString(t, g, "bucket", "paddock-demo-audit")
	wantString(t, g, "role", "roles/storage.objectCreator")
	wantString(t, g, "member", mockSinkWriter("demo-audit"))
}

func TestMockAuditSinkBigQueryAndPubSub(t *testing.T) {
	m, _ := runPlatform(t, kataPlatform())
	d := m.find(t, tDataset, "vmdemo-bq")
	wantString(t, d, "datasetId", "paddock_audit")
	wantBool(t, d, "deleteContentsOnDestroy", false)
	wantNumber(t, d, "defaultTableExpirationMs", 400*24*3600*1000)
	s := m.find(t, tSink, "vmdemo-bq")
	wantString(t, s, "destination", "bigquery.googleapis.com/projects/paddock-demo/datasets/paddock_audit")
	wantBool(t, s, "uniqueWriterIdentity", true)
	wantBool(t, s, "bigqueryOptions.usePartitionedTables", true)
	g := m.find(t, tDatasetIAM, "vmdemo-bq-writer")
	wantString(t, g, "datasetId", "paddock_audit")
	wantString(t, g, "role", "roles/bigquery.dataEditor")
	wantString(t, g, "member", mockSinkWriter("vmdemo-bq"))

	tp := m.find(t, tTopic, "vmdemo-stream")
	wantString(t, tp, "name", "paddock-audit")
	wantString(t, tp, "messageRetentionDuration", "604800s")
	ps := m.find(t, tSink, "vmdemo-stream")
	wantString(t, ps, "destination", "pubsub.googleapis.com/projects/paddock-demo/topics/paddock-audit")
	wantBool(t, ps, "uniqueWriterIdentity", true)
	if f := get(t, ps, "filter").StringValue(); !strings.Contains(f, "policy-action") || !strings.Contains(f, "k8s_container") {
		t.Errorf("every-event filter lacks drops or pod logs:\n%s", f)
	}
	pg := m.find(t, tTopicIAM, "vmdemo-stream-writer")
	wantString(t, pg, "topic", "paddock-audit")
	wantString(t, pg, "role", "roles/pubsub.publisher")
	wantString(t, pg, "member", mockSinkWriter("vmdemo-stream"))

	// network_drops switches Dataplane V2 deny logging on, in the cluster.
	nl := m.find(t, "kubernetes:networking.gke.io/v1alpha1:NetworkLogging", "default")
	wantBool(t, nl, "spec.cluster.deny.log", true)
	wantBool(t, nl, "spec.cluster.allow.log", false)
	g2, _ := runPlatform(t, gvisorPlatform())
	if len(g2.ofType("kubernetes:networking.gke.io/v1alpha1:NetworkLogging")) != 0 {
		t.Error("NetworkLogging registered without a network_drops sink")
	}
}

func TestMockAlerts(t *testing.T) {
	m, _ := runPlatform(t, gvisorPlatform())
	q := m.find(t, tAlert, "demo-alerts-quota-saturation")
	wantString(t, q, "conditions[0].conditionMatchedLog.filter",
		spec.QuotaExceededFilter("paddock-demo", "europe-west4", "demo", []string{"agents-team-a"}))
	wantString(t, q, "alertStrategy.notificationRateLimit.period", "300s")
	l := m.find(t, tAlert, "demo-alerts-sandbox-lifetime")
	wantString(t, l, "conditions[0].conditionThreshold.filter", spec.SandboxUptimeFilter("europe-west4", "demo", []string{"agents-team-a"}))
	wantString(t, l, "conditions[0].conditionThreshold.comparison", "COMPARISON_GT")
	wantNumber(t, l, "conditions[0].conditionThreshold.thresholdValue", 5*3600)
	k, _ := runPlatform(t, kataPlatform())
	if n := len(k.ofType(tAlert)); n != 0 {
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
	if len(m.all) != 0 {
		t.Errorf("resources registered before validation: %s", m.list())
	}
}
