package gcpinputs

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestGVisorSchedulingMatchesWhatGKEApplies(t *testing.T) {
	np := NodePoolArgs{Name: "gvisor", Isolation: IsolationGVisor, Labels: map[string]string{"team": "a"}}
	if got := np.PaddockTaints(); len(got) != 0 {
		t.Errorf("gVisor pool sets taints %v; GKE applies sandbox.gke.io/runtime itself, none may be duplicated", got)
	}
	if _, ok := np.PaddockLabels()[GKESandboxKey]; ok {
		t.Errorf("gVisor pool sets %s itself; GKE does", GKESandboxKey)
	}
	want := Scheduling{
		NodeSelector: map[string]string{"sandbox.gke.io/runtime": "gvisor"},
		Tolerations:  []Toleration{{Key: "sandbox.gke.io/runtime", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"}},
	}
	if got := np.Scheduling(); !reflect.DeepEqual(got, want) {
		t.Errorf("Scheduling() = %+v, want %+v", got, want)
	}
}

func TestKVMPoolIsLabelledTaintedAndScheduled(t *testing.T) {
	np := NodePoolArgs{Name: "kata", Isolation: IsolationKVM, Taints: []Taint{{Key: "x", Value: "y", Effect: EffectNoExecute}}}
	if np.PaddockLabels()[IsolationKey] != IsolationKVM {
		t.Errorf("labels %v lack %s=kvm", np.PaddockLabels(), IsolationKey)
	}
	taints := np.PaddockTaints()
	if len(taints) != 2 || taints[0] != (Taint{Key: IsolationKey, Value: "kvm", Effect: "NoSchedule"}) {
		t.Errorf("taints = %v", taints)
	}
	s := np.Scheduling()
	if s.NodeSelector[IsolationKey] != "kvm" || len(s.NodeSelector) != 1 {
		t.Errorf("node selector %v", s.NodeSelector)
	}
	if len(s.Tolerations) != 2 || s.Tolerations[1].Key != "x" || s.Tolerations[1].Effect != EffectNoExecute {
		t.Errorf("tolerations %v must cover every taint", s.Tolerations)
	}
	np.Shared = true
	if len(np.PaddockTaints()) != 1 {
		t.Errorf("shared pool keeps the dedication taint: %v", np.PaddockTaints())
	}
}

func TestRuntimeClassSchedulingIgnoresPoolExtraTaints(t *testing.T) {
	g := NodePoolArgs{Isolation: IsolationGVisor}
	if !reflect.DeepEqual(IsolationScheduling(IsolationGVisor), g.Scheduling()) {
		t.Errorf("gvisor RuntimeClass scheduling %+v differs from a plain gVisor pool's %+v", IsolationScheduling(IsolationGVisor), g.Scheduling())
	}
	k := NodePoolArgs{Isolation: IsolationKVM, Taints: []Taint{{Key: "paddock.dev/tenant", Value: "team-b", Effect: EffectNoSchedule}}}
	rc := KataArgs{Scheduling: MergeScheduling([]NodePoolArgs{k})}.KataRuntimeClasses()[0]
	if len(rc.Scheduling.Tolerations) != 1 || rc.Scheduling.Tolerations[0].Key != IsolationKey {
		t.Errorf("kata RuntimeClass tolerates %v: a tenant's dedication taint must not be tolerated by a shared RuntimeClass", rc.Scheduling.Tolerations)
	}
	if len(k.Scheduling().Tolerations) != 2 {
		t.Errorf("the pool's own scheduling must tolerate all its taints: %v", k.Scheduling().Tolerations)
	}
}

func TestMergeSchedulingUnionsTolerations(t *testing.T) {
	a := NodePoolArgs{Isolation: IsolationKVM}
	b := NodePoolArgs{Isolation: IsolationKVM, Taints: []Taint{{Key: "k", Value: "v", Effect: EffectNoSchedule}}}
	s := MergeScheduling([]NodePoolArgs{a, b})
	if len(s.Tolerations) != 2 {
		t.Errorf("tolerations %v: want the dedication taint once and k=v", s.Tolerations)
	}
}

func TestDefaultImageTypes(t *testing.T) {
	if DefaultImageType(IsolationKVM) != ImageUbuntuContainerd || DefaultImageType(IsolationGVisor) != ImageCOSContainerd {
		t.Fatal("wrong default image types")
	}
	if got := (NodePoolArgs{Isolation: IsolationKVM, ImageType: "ubuntu_containerd"}).WithDefaults().ImageType; got != ImageUbuntuContainerd {
		t.Errorf("image type not normalised: %s", got)
	}
}

func TestWithDefaults(t *testing.T) {
	p := PlatformArgs{
		Name:    "demo",
		Cluster: ClusterArgs{Project: "proj", Location: "europe-west4"},
		NodePools: []NodePoolArgs{
			{Name: "gvisor", Isolation: IsolationGVisor, MachineType: "e2-standard-4", MinNodes: 1, MaxNodes: 3},
			{Name: "kata", Isolation: IsolationKVM, MachineType: "n2-standard-4", MinNodes: 1, MaxNodes: 3},
		},
		WorkloadIdentities: []WorkloadIdentityArgs{{Tenant: "team-a", Namespace: "agents-team-a", KSA: "agent-runtime", Roles: []string{"roles/storage.objectViewer"}}},
		AuditSinks:         []AuditSinkArgs{{Name: "audit", Kind: AuditStorage, Destination: "proj-audit"}},
		Alerts:             &AlertArgs{QuotaSaturation: true},
	}
	d := p.WithDefaults()
	if d.Cluster.Name != "demo" || d.Cluster.ReleaseChannel != ChannelRegular || d.Cluster.MasterCIDR != DefaultMasterCIDR {
		t.Errorf("cluster defaults: %+v", d.Cluster)
	}
	if d.SystemPool.Name != DefaultSystemPoolName || d.SystemPool.Isolation != IsolationNone || d.SystemPool.ImageType != ImageCOSContainerd {
		t.Errorf("system pool: %+v", d.SystemPool)
	}
	if d.NodePools[1].ImageType != ImageUbuntuContainerd {
		t.Errorf("kvm image: %s", d.NodePools[1].ImageType)
	}
	wi := d.WorkloadIdentities[0]
	if wi.Project != "proj" || wi.AccountID == "" || len(wi.AccountID) > 30 {
		t.Errorf("identity defaults: %+v", wi)
	}
	s := d.AuditSinks[0]
	if s.Project != "proj" || s.Location != DefaultAuditLocation || s.RetentionDays != DefaultAuditRetentionDays ||
		s.Filter.ClusterName != "demo" || s.Filter.Location != "europe-west4" || !reflect.DeepEqual(s.Filter.Events, DefaultAuditEvents()) {
		t.Errorf("sink defaults: %+v", s)
	}
	if d.Alerts.ClusterName != "demo" || d.Alerts.Project != "proj" {
		t.Errorf("alert defaults: %+v", d.Alerts)
	}
	// The input is not modified.
	if p.NodePools[1].ImageType != "" || p.Cluster.Name != "" {
		t.Error("WithDefaults modified its receiver")
	}
	rcs := p.RuntimeClasses()
	var names []string
	for _, rc := range rcs {
		names = append(names, rc.Name+"/"+rc.Handler)
	}
	if strings.Join(names, ",") != "gvisor/gvisor,kata-qemu/kata-qemu,kata-clh/kata-clh" {
		t.Errorf("runtime classes %v", names)
	}
	if !rcs[0].ManagedByGKE || rcs[1].ManagedByGKE {
		t.Error("only gvisor is managed by GKE")
	}
	if rcs[1].OverheadMemory != "320Mi" || rcs[2].OverheadMemory != "130Mi" || rcs[1].OverheadCPU != "250m" {
		t.Errorf("kata overhead: %+v", rcs[1:])
	}
	if rcs[1].Scheduling.NodeSelector[IsolationKey] != IsolationKVM {
		t.Errorf("kata scheduling: %+v", rcs[1].Scheduling)
	}
}

var saID = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)

func TestServiceAccountID(t *testing.T) {
	for _, parts := range [][]string{
		{"demo", "team-a", "agent-runtime"},
		{"a"},
		{""},
		{"9lives", "x"},
		{"Very_Long.Platform.Name", "an-even-longer-tenant-name", "orchestrator"},
		{"demo", "--", "ksa"},
	} {
		id := ServiceAccountID(parts...)
		if !saID.MatchString(id) {
			t.Errorf("ServiceAccountID(%q) = %q: not a valid account id", parts, id)
		}
	}
	if ServiceAccountID("demo", "team-a", "agent-runtime") != "demo-team-a-agent-runtime" {
		t.Errorf("short ids stay readable: %s", ServiceAccountID("demo", "team-a", "agent-runtime"))
	}
	a := ServiceAccountID("platform-with-long-name", "tenant-one", "ksa")
	b := ServiceAccountID("platform-with-long-name", "tenant-two", "ksa")
	if a == b {
		t.Errorf("distinct inputs collide: %s", a)
	}
}

func TestWorkloadIdentityMember(t *testing.T) {
	if got := WorkloadIdentityMember("proj", "agents-team-a", "tool"); got != "serviceAccount:proj.svc.id.goog[agents-team-a/tool]" {
		t.Errorf("member = %s", got)
	}
}

func TestSinkDestinationsAndRoles(t *testing.T) {
	for _, tc := range []struct{ kind, dest, role string }{
		{AuditBigQuery, "bigquery.googleapis.com/projects/p/datasets/d", "roles/bigquery.dataEditor"},
		{AuditStorage, "storage.googleapis.com/d", "roles/storage.objectCreator"},
		{AuditPubSub, "pubsub.googleapis.com/projects/p/topics/d", "roles/pubsub.publisher"},
	} {
		got, err := SinkDestination(AuditSinkArgs{Project: "p", Kind: tc.kind, Destination: "d"})
		if err != nil || got != tc.dest {
			t.Errorf("%s: destination %q, %v", tc.kind, got, err)
		}
		if SinkWriterRole(tc.kind) != tc.role {
			t.Errorf("%s: role %s", tc.kind, SinkWriterRole(tc.kind))
		}
	}
	if _, err := SinkDestination(AuditSinkArgs{Kind: "s3"}); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestKubeconfigUsesExecAuthOnly(t *testing.T) {
	kc := Kubeconfig("gke_p_l_c", "203.0.113.10", "Q0E=")
	for _, want := range []string{"server: https://203.0.113.10", "certificate-authority-data: Q0E=", "command: gke-gcloud-auth-plugin",
		"apiVersion: client.authentication.k8s.io/v1beta1", "current-context: gke_p_l_c", "provideClusterInfo: true"} {
		if !strings.Contains(kc, want) {
			t.Errorf("kubeconfig lacks %q:\n%s", want, kc)
		}
	}
	for _, bad := range []string{"token:", "client-key", "client-certificate", "password", "auth-provider"} {
		if strings.Contains(kc, bad) {
			t.Errorf("kubeconfig carries a static credential (%s)", bad)
		}
	}
}

func TestAuditFilterSeedEvents(t *testing.T) {
	f, err := AuditFilter(AuditFilterArgs{Project: "proj", Location: "europe-west4", ClusterName: "demo",
		Namespaces: []string{"agents-b", "agents-a", "agents-a"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`logName="projects/proj/logs/cloudaudit.googleapis.com%2Factivity"`,
		`resource.type="k8s_cluster"`,
		`resource.labels.location="europe-west4" AND resource.labels.cluster_name="demo"`,
		`protoPayload.methodName=~"^io[.]x-k8s[.]agents[.]v[^.]+[.]sandboxes[.](create|delete|deletecollection)$"`,
		`protoPayload.methodName=~"^io[.]x-k8s[.]agents[.]extensions[.]v[^.]+[.]sandboxclaims[.](create|delete|deletecollection)$"`,
		`protoPayload.resourceName=~"^agents[.]x-k8s[.]io/v[^/]+/namespaces/(agents-a|agents-b)/"`,
		`protoPayload.methodName=~"^io[.]k8s[.]authorization[.]rbac[.]v1[.](roles|rolebindings)[.](create|update|patch|delete|deletecollection)$" AND protoPayload.resourceName=~"^rbac[.]authorization[.]k8s[.]io/v1/namespaces/(agents-a|agents-b)/"`,
		`(clusterroles|clusterrolebindings)`,
	} {
		if !strings.Contains(f, want) {
			t.Errorf("filter lacks %s\n%s", want, f)
		}
	}
	for _, unwanted := range []string{"k8s_container", "policy-action", "status.code"} {
		if strings.Contains(f, unwanted) {
			t.Errorf("default filter includes %s", unwanted)
		}
	}
	if strings.Contains(f, `\`) {
		t.Errorf("filter carries backslashes:\n%s", f)
	}
	again, _ := AuditFilter(AuditFilterArgs{Project: "proj", Location: "europe-west4", ClusterName: "demo",
		Namespaces: []string{"agents-a", "agents-b"}})
	if again != f {
		t.Error("filter not deterministic under namespace order and duplicates")
	}
}

// The regexes in the filter are RE2 (Cloud Logging's dialect, and Go's): check
// they accept exactly the audit entries they are meant for.
func TestAuditFilterRegexesMatchGKEMethodNames(t *testing.T) {
	f, err := AuditFilter(AuditFilterArgs{Project: "p", Location: "l", ClusterName: "c", Namespaces: []string{"agents-a"}})
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(methodName|resourceName)=~"([^"]+)"`)
	var methods, resources []*regexp.Regexp
	for _, m := range re.FindAllStringSubmatch(f, -1) {
		r := regexp.MustCompile(m[2])
		if m[1] == "methodName" {
			methods = append(methods, r)
		} else {
			resources = append(resources, r)
		}
	}
	matches := func(list []*regexp.Regexp, s string) bool {
		for _, r := range list {
			if r.MatchString(s) {
				return true
			}
		}
		return false
	}
	for _, m := range []string{
		"io.x-k8s.agents.v1beta1.sandboxes.create", "io.x-k8s.agents.v1alpha1.sandboxes.delete",
		"io.x-k8s.agents.extensions.v1beta1.sandboxclaims.create", "io.x-k8s.agents.extensions.v1beta1.sandboxclaims.deletecollection",
		"io.x-k8s.agents.extensions.v1beta1.sandboxtemplates.patch",
		"io.k8s.authorization.rbac.v1.rolebindings.create", "io.k8s.authorization.rbac.v1.roles.delete",
		"io.k8s.authorization.rbac.v1.clusterrolebindings.update",
	} {
		if !matches(methods, m) {
			t.Errorf("method %s not matched", m)
		}
	}
	for _, m := range []string{
		"io.x-k8s.agents.v1beta1.sandboxes.get", "io.x-k8s.agents.v1beta1.sandboxes.update",
		"io.x-k8s.agents.extensions.v1beta1.sandboxclaims.list", "io.k8s.authorization.rbac.v1.roles.get",
		"io.k8s.core.v1.pods.create", "io.x-k8s.agentsx.v1.sandboxes.create",
	} {
		if matches(methods, m) {
			t.Errorf("method %s matched", m)
		}
	}
	for _, r := range []string{
		"agents.x-k8s.io/v1beta1/namespaces/agents-a/sandboxes/s1",
		"extensions.agents.x-k8s.io/v1beta1/namespaces/agents-a/sandboxclaims/c1",
		"rbac.authorization.k8s.io/v1/namespaces/agents-a/rolebindings/rb",
	} {
		if !matches(resources, r) {
			t.Errorf("resource %s not matched", r)
		}
	}
	for _, r := range []string{
		"agents.x-k8s.io/v1beta1/namespaces/kube-system/sandboxes/s1",
		"rbac.authorization.k8s.io/v1/namespaces/agents-ab/roles/r",
		"rbac.authorization.k8s.io/v1/namespaces/other/roles/r",
	} {
		if matches(resources, r) {
			t.Errorf("resource %s matched: the filter must stay inside the tenant namespaces", r)
		}
	}
}

func TestAuditFilterAllEvents(t *testing.T) {
	f, err := AuditFilter(AuditFilterArgs{Project: "p", Location: "l", ClusterName: "c", Namespaces: []string{"n"}, Events: AuditEvents()})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`resource.type="k8s_container"`, `logName="projects/p/logs/stdout"`, `resource.labels.namespace_name=~"^(n)$"`,
		`logName="projects/p/logs/policy-action"`, `jsonPayload.disposition="deny"`,
		`protoPayload.status.code=7`,
	} {
		if !strings.Contains(f, want) {
			t.Errorf("filter lacks %s\n%s", want, f)
		}
	}
	if c := strings.Count(f, "\nOR\n"); c != 2 {
		t.Errorf("want 3 top-level clauses (audit, pod logs, drops), got %d", c+1)
	}
}

func TestAuditFilterErrors(t *testing.T) {
	if _, err := AuditFilter(AuditFilterArgs{Project: "p", Location: "l", ClusterName: "c", Events: []string{"everything"}}); err == nil {
		t.Error("unknown event accepted")
	}
	if _, err := AuditFilter(AuditFilterArgs{Project: "p", Location: "l", ClusterName: "c", Events: []string{}}); err == nil {
		t.Error("empty event list accepted")
	}
	if _, err := AuditFilter(AuditFilterArgs{Location: "l", ClusterName: "c"}); err == nil {
		t.Error("missing project accepted")
	}
	f, err := AuditFilter(AuditFilterArgs{Project: "p", Location: "l", ClusterName: "c"})
	if err != nil || !strings.Contains(f, "/namespaces/[^/]+/") {
		t.Errorf("no namespaces should match every namespace: %v\n%s", err, f)
	}
}

func TestAlertFilters(t *testing.T) {
	q := QuotaExceededFilter("p", "l", "c", []string{"agents-a"})
	if !strings.Contains(q, `protoPayload.status.message:"exceeded quota"`) || !strings.Contains(q, `/namespaces/(agents-a)/`) {
		t.Errorf("quota filter: %s", q)
	}
	u := SandboxUptimeFilter("l", "c", nil)
	if !strings.Contains(u, `metric.type="kubernetes.io/container/uptime"`) || !strings.Contains(u, `full_match(".*")`) {
		t.Errorf("uptime filter: %s", u)
	}
}

func TestParseArtifactRegistryImage(t *testing.T) {
	for image, want := range map[string]string{
		"us-docker.pkg.dev/paddock-example-prod/agents/runtime:1.4.2":            "us-docker.pkg.dev/paddock-example-prod/agents",
		"europe-west4-docker.pkg.dev/p-1234/repo/a/b/c@sha256:" + strings64("f"): "europe-west4-docker.pkg.dev/p-1234/repo",
		"us-docker.pkg.dev/example.com/scoped-project/repo/img:1":                "us-docker.pkg.dev/example.com/scoped-project/repo",
		"python:3.12-slim":                     "",
		"docker.io/library/python:3.12":        "",
		"gcr.io/paddock/x:1":                   "",
		"us-docker.pkg.dev/project-only":       "", // no repository, no image
		"us-docker.pkg.dev/project/repo":       "", // a repository is not an image
		"evil.example/us-docker.pkg.dev/p/r/i": "",
		"us-maven.pkg.dev/p/r/i":               "",
	} {
		r, ok := ParseArtifactRegistryImage(image)
		if got := map[bool]string{true: r.String(), false: ""}[ok]; got != want {
			t.Errorf("ParseArtifactRegistryImage(%q) = %q, want %q", image, got, want)
		}
	}
	r, _ := ParseArtifactRegistryImage("us-docker.pkg.dev/example.com/scoped-project/repo/img:1")
	if r.Project != "example.com:scoped-project" || r.Location != "us" || r.Repository != "repo" {
		t.Errorf("domain-scoped project: %+v", r)
	}
}

func strings64(c string) string { return strings.Repeat(c, 64) }
