//go:build gke

// Real-GKE end-to-end test of the GCP layer (terratest). Unlike every other
// test in this package it creates real resources in a real GCP project: a
// private GKE cluster with a system, a gVisor and a KVM pool, Kata, a workload
// identity and a Pub/Sub audit sink, then checks them with gcloud and kubectl
// and destroys everything. It costs money and takes 30-60 minutes.
//
// It is compiled only with -tags gke, and then it never skips: if the project,
// the credentials or the tools are missing it fails and says what is missing.
// See docs/gcp.md ("End-to-end test on real GKE").
//
//	PADDOCK_GKE_PROJECT=my-project PADDOCK_GKE_AUTHORIZED_CIDR=203.0.113.7/32 \
//	  go test -tags gke -run TestGKEEndToEnd -timeout 120m -v ./components/gcp/
package gcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	"github.com/gruntwork-io/terratest/modules/random"
	"github.com/gruntwork-io/terratest/modules/retry"
	"github.com/gruntwork-io/terratest/modules/shell"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

// gkeEnv is what the test needs from its runner.
type gkeEnv struct {
	project, location, authorizedCIDR string
	network, subnetwork               string
	pulumiRoot                        string // dir with bin/pulumi; "" = pulumi on PATH
	keep                              bool   // PADDOCK_GKE_KEEP=1 leaves the stack up for debugging
}

// requireGKE fails the test (never skips) unless everything the real run
// needs is present.
func requireGKE(t *testing.T) gkeEnv {
	t.Helper()
	e := gkeEnv{
		project:        os.Getenv("PADDOCK_GKE_PROJECT"),
		location:       os.Getenv("PADDOCK_GKE_LOCATION"),
		authorizedCIDR: os.Getenv("PADDOCK_GKE_AUTHORIZED_CIDR"),
		network:        os.Getenv("PADDOCK_GKE_NETWORK"),
		subnetwork:     os.Getenv("PADDOCK_GKE_SUBNETWORK"),
		pulumiRoot:     os.Getenv("PADDOCK_PULUMI_ROOT"),
		keep:           os.Getenv("PADDOCK_GKE_KEEP") == "1",
	}
	if e.location == "" {
		e.location = "us-central1-a"
	}
	var missing []string
	if e.project == "" {
		missing = append(missing, "PADDOCK_GKE_PROJECT (the GCP project to create the cluster in)")
	}
	if e.authorizedCIDR == "" {
		missing = append(missing, "PADDOCK_GKE_AUTHORIZED_CIDR (this runner's egress CIDR: the control plane admits only authorized networks)")
	}
	if !hasCredentials() {
		missing = append(missing, "Google credentials (GOOGLE_APPLICATION_CREDENTIALS, or `gcloud auth application-default login`)")
	}
	for _, tool := range []string{"gcloud", "kubectl", "gke-gcloud-auth-plugin"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" on PATH")
		}
	}
	if e.pulumiRoot != "" {
		if _, err := os.Stat(filepath.Join(e.pulumiRoot, "bin", "pulumi")); err != nil {
			missing = append(missing, "PADDOCK_PULUMI_ROOT/bin/pulumi ("+err.Error()+")")
		}
	} else if _, err := exec.LookPath("pulumi"); err != nil {
		missing = append(missing, "the pulumi CLI (on PATH, or PADDOCK_PULUMI_ROOT=DIR with DIR/bin/pulumi)")
	}
	if len(missing) > 0 {
		t.Fatalf("the real-GKE end-to-end test was built with -tags gke but cannot run; it never skips, so it fails.\nMissing:\n  - %s\nSee docs/gcp.md.",
			strings.Join(missing, "\n  - "))
	}
	return e
}

func hasCredentials() bool {
	if f := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); f != "" {
		_, err := os.Stat(f)
		return err == nil
	}
	dir := os.Getenv("CLOUDSDK_CONFIG")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config", "gcloud")
	}
	_, err := os.Stat(filepath.Join(dir, "application_default_credentials.json"))
	return err == nil
}

// e2ePlatform is what the test deploys: both isolations, one identity, one
// sink. Pools are kept at one node each.
func e2ePlatform(e gkeEnv, name, namespace string) PlatformArgs {
	return PlatformArgs{
		Name: name,
		Cluster: ClusterArgs{
			Project: e.project, Location: e.location, Network: e.network, Subnetwork: e.subnetwork,
			AuthorizedNetworks: []gcpinputs.AuthorizedNetwork{{CIDR: e.authorizedCIDR, DisplayName: "e2e-runner"}},
			FQDNNetworkPolicy:  true,
			AllowDeletion:      true,
		},
		NodePools: []NodePoolArgs{
			{Name: "gvisor", Isolation: gcpinputs.IsolationGVisor, MachineType: "e2-standard-4", MinNodes: 1, MaxNodes: 1},
			{Name: "kata", Isolation: gcpinputs.IsolationKVM, MachineType: "n2-standard-4", MinNodes: 1, MaxNodes: 1},
		},
		WorkloadIdentities: []WorkloadIdentityArgs{{
			Tenant: "e2e", Namespace: namespace, KSA: "cloud-reader", Roles: []string{"roles/monitoring.viewer"},
		}},
		AuditSinks: []AuditSinkArgs{{
			Name: name + "-audit", Kind: gcpinputs.AuditPubSub, Destination: name + "-audit", RetentionDays: 1,
			Filter: gcpinputs.AuditFilterArgs{Namespaces: []string{namespace}},
		}},
	}
}

func TestGKEEndToEnd(t *testing.T) {
	e := requireGKE(t)
	ctx := context.Background()
	id := strings.ToLower(random.UniqueId())
	name := "pdk-e2e-" + id
	namespace := "agents-e2e"
	args := e2ePlatform(e, name, namespace)

	// The stack: inline program, local state in a temp dir.
	state := t.TempDir()
	envVars := map[string]string{
		"PULUMI_BACKEND_URL":       "file://" + state,
		"PULUMI_CONFIG_PASSPHRASE": "paddock-gke-e2e-" + id,
		"PULUMI_SKIP_UPDATE_CHECK": "true",
	}
	opts := []auto.LocalWorkspaceOption{
		auto.Project(workspace.Project{Name: tokens.PackageName("paddock-gke-e2e"), Runtime: workspace.NewProjectRuntimeInfo("go", nil)}),
		auto.EnvVars(envVars),
		auto.SecretsProvider("passphrase"),
	}
	if e.pulumiRoot != "" {
		cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: e.pulumiRoot, SkipVersionCheck: true})
		if err != nil {
			t.Fatalf("pulumi CLI in %s: %v", e.pulumiRoot, err)
		}
		opts = append(opts, auto.Pulumi(cmd))
	}
	program := func(ctx *pulumi.Context) error {
		p, err := NewPlatform(ctx, name, &args)
		if err != nil {
			return err
		}
		ctx.Export("kubeconfig", p.Kubeconfig)
		ctx.Export("identities", p.Identities)
		ctx.Export("sinkWriter", p.AuditSinks[0].WriterIdentity)
		return nil
	}
	stack, err := auto.UpsertStackInlineSource(ctx, "e2e-"+id, "paddock-gke-e2e", program, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := stack.SetConfig(ctx, "gcp:project", auto.ConfigValue{Value: e.project}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if e.keep {
			t.Logf("PADDOCK_GKE_KEEP=1: stack e2e-%s left up (state in %s)", id, state)
			return
		}
		// Always destroy, whatever failed: a leaked cluster costs money.
		if _, err := stack.Destroy(ctx, optdestroy.ProgressStreams(os.Stdout)); err != nil {
			t.Errorf("DESTROY FAILED, clean up by hand: cluster %s in %s/%s, pubsub topic %s-audit, log sink %s-audit, service accounts %s-*: %v",
				name, e.project, e.location, name, name, name, err)
		}
	}()
	up, err := stack.Up(ctx, optup.ProgressStreams(os.Stdout))
	if err != nil {
		t.Fatalf("pulumi up: %v", err)
	}
	// A second preview must find nothing to change: no perpetual diff (node
	// config, threads per core, labels) that would replace pools on every up.
	if _, err := stack.Preview(ctx, optpreview.ExpectNoChanges()); err != nil {
		t.Errorf("preview after up is not empty (perpetual diff): %v", err)
	}
	kubeconfig, _ := up.Outputs["kubeconfig"].Value.(string)
	if !up.Outputs["kubeconfig"].Secret {
		t.Error("kubeconfig stack output is not secret")
	}
	ids, _ := up.Outputs["identities"].Value.(map[string]any)
	gsa, _ := ids[namespace+"/cloud-reader"].(string)
	sinkWriter, _ := up.Outputs["sinkWriter"].Value.(string)
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcPath, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	kube := k8s.NewKubectlOptions("", kcPath, namespace)
	d := args.WithDefaults()

	t.Run("cluster", func(t *testing.T) { checkCluster(t, e, d) })
	t.Run("kubeconfig", func(t *testing.T) {
		for _, bad := range []string{"token:", "client-key", "password"} {
			if strings.Contains(kubeconfig, bad) {
				t.Errorf("kubeconfig carries a static credential (%s)", bad)
			}
		}
	})
	t.Run("nodes", func(t *testing.T) { checkNodes(t, kube) })
	t.Run("runtime-classes", func(t *testing.T) { checkRuntimeClasses(t, kube) })
	t.Run("kata-deploy", func(t *testing.T) { checkKataDeploy(t, kube) })
	setUpTenant(t, kube, namespace, gsa)
	t.Run("gvisor-pod", func(t *testing.T) { checkGVisorPod(t, kube) })
	t.Run("kata-pod", func(t *testing.T) { checkKataPod(t, kube) })
	t.Run("workload-identity", func(t *testing.T) { checkWorkloadIdentity(t, e, kube, gsa) })
	t.Run("audit-sink", func(t *testing.T) { checkAuditSink(t, e, d, kube, sinkWriter) })
}

func gcloudJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	s := shell.RunCommandAndGetStdOut(t, shell.Command{Command: "gcloud", Args: append(args, "--format=json")})
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("gcloud %s: %v\n%s", strings.Join(args, " "), err, s)
	}
}

func checkCluster(t *testing.T, e gkeEnv, d PlatformArgs) {
	var c struct {
		NetworkConfig                  struct{ DatapathProvider string }
		WorkloadIdentityConfig         struct{ WorkloadPool string }
		PrivateClusterConfig           struct{ EnablePrivateNodes bool }
		ShieldedNodes                  struct{ Enabled bool }
		LegacyAbac                     struct{ Enabled bool }
		MasterAuth                     struct{ ClientCertificate string }
		MasterAuthorizedNetworksConfig struct {
			Enabled    bool
			CidrBlocks []struct{ CidrBlock string }
		}
		LoggingConfig struct {
			ComponentConfig struct{ EnableComponents []string }
		}
		ReleaseChannel struct{ Channel string }
		NodePools      []struct{ Name string }
	}
	gcloudJSON(t, &c, "container", "clusters", "describe", d.Cluster.Name, "--location", e.location, "--project", e.project)
	if c.NetworkConfig.DatapathProvider != "ADVANCED_DATAPATH" {
		t.Errorf("datapath %q", c.NetworkConfig.DatapathProvider)
	}
	if c.WorkloadIdentityConfig.WorkloadPool != e.project+".svc.id.goog" {
		t.Errorf("workload pool %q", c.WorkloadIdentityConfig.WorkloadPool)
	}
	if !c.PrivateClusterConfig.EnablePrivateNodes || !c.ShieldedNodes.Enabled || c.LegacyAbac.Enabled || c.MasterAuth.ClientCertificate != "" {
		t.Errorf("private nodes %v, shielded %v, legacy ABAC %v, client certificate issued %v",
			c.PrivateClusterConfig.EnablePrivateNodes, c.ShieldedNodes.Enabled, c.LegacyAbac.Enabled, c.MasterAuth.ClientCertificate != "")
	}
	if !c.MasterAuthorizedNetworksConfig.Enabled || len(c.MasterAuthorizedNetworksConfig.CidrBlocks) != 1 ||
		c.MasterAuthorizedNetworksConfig.CidrBlocks[0].CidrBlock != e.authorizedCIDR {
		t.Errorf("authorized networks %+v", c.MasterAuthorizedNetworksConfig)
	}
	for _, comp := range []string{"APISERVER", "CONTROLLER_MANAGER", "SCHEDULER"} {
		if !contains(c.LoggingConfig.ComponentConfig.EnableComponents, comp) {
			t.Errorf("logging components %v lack %s", c.LoggingConfig.ComponentConfig.EnableComponents, comp)
		}
	}
	var pools []string
	for _, p := range c.NodePools {
		pools = append(pools, p.Name)
	}
	for _, want := range []string{"system", "gvisor", "kata"} {
		if !contains(pools, want) {
			t.Errorf("node pools %v lack %s", pools, want)
		}
	}
	if contains(pools, "default-pool") {
		t.Errorf("the default node pool was not removed: %v", pools)
	}
}

type nodeList struct {
	Items []struct {
		Metadata struct {
			Name   string
			Labels map[string]string
		}
		Spec struct {
			Taints []struct{ Key, Value, Effect string }
		}
		Status struct {
			NodeInfo struct{ KernelVersion string }
		}
	}
}

func nodes(t *testing.T, kube *k8s.KubectlOptions, selector string) nodeList {
	t.Helper()
	var l nodeList
	out, err := k8s.RunKubectlAndGetOutputE(t, kube, "get", "nodes", "-l", selector, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func hasTaint(taints []struct{ Key, Value, Effect string }, key, value, effect string) bool {
	for _, tt := range taints {
		if tt.Key == key && tt.Value == value && tt.Effect == effect {
			return true
		}
	}
	return false
}

func checkNodes(t *testing.T, kube *k8s.KubectlOptions) {
	g := nodes(t, kube, "sandbox.gke.io/runtime=gvisor")
	if len(g.Items) == 0 {
		t.Error("no gVisor node")
	}
	for _, n := range g.Items {
		if !hasTaint(n.Spec.Taints, gcpinputs.GKESandboxKey, "gvisor", "NoSchedule") {
			t.Errorf("gVisor node %s lacks GKE's taint: %+v", n.Metadata.Name, n.Spec.Taints)
		}
		count := 0
		for _, tt := range n.Spec.Taints {
			if tt.Key == gcpinputs.GKESandboxKey {
				count++
			}
		}
		if count != 1 {
			t.Errorf("gVisor node %s carries the sandbox taint %d times", n.Metadata.Name, count)
		}
	}
	k := nodes(t, kube, "paddock.dev/isolation=kvm")
	if len(k.Items) == 0 {
		t.Error("no KVM node")
	}
	for _, n := range k.Items {
		if !hasTaint(n.Spec.Taints, gcpinputs.IsolationKey, "kvm", "NoSchedule") {
			t.Errorf("KVM node %s lacks the dedication taint: %+v", n.Metadata.Name, n.Spec.Taints)
		}
	}
	s := nodes(t, kube, "cloud.google.com/gke-nodepool=system")
	for _, n := range s.Items {
		for _, tt := range n.Spec.Taints {
			if tt.Effect == "NoSchedule" || tt.Effect == "NoExecute" {
				t.Errorf("system node %s is tainted %+v", n.Metadata.Name, tt)
			}
		}
	}
}

func checkRuntimeClasses(t *testing.T, kube *k8s.KubectlOptions) {
	type rc struct {
		Handler    string
		Scheduling struct {
			NodeSelector map[string]string
			Tolerations  []struct{ Key, Operator, Value, Effect string }
		}
	}
	get := func(name string) rc {
		var r rc
		out, err := k8s.RunKubectlAndGetOutputE(t, kube, "get", "runtimeclass", name, "-o", "json")
		if err != nil {
			t.Fatalf("RuntimeClass %s: %v", name, err)
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// GKE's own gvisor RuntimeClass must schedule exactly as Paddock exports.
	g := get(gcpinputs.GVisorRuntimeClass)
	want := gcpinputs.IsolationScheduling(gcpinputs.IsolationGVisor)
	if g.Handler != gcpinputs.GVisorHandler || !reflect.DeepEqual(g.Scheduling.NodeSelector, want.NodeSelector) ||
		len(g.Scheduling.Tolerations) != 1 || g.Scheduling.Tolerations[0].Key != want.Tolerations[0].Key {
		t.Errorf("GKE's gvisor RuntimeClass %+v differs from what Paddock exports %+v", g, want)
	}
	for _, name := range []string{"kata-qemu", "kata-clh"} {
		r := get(name)
		if r.Handler != name || r.Scheduling.NodeSelector[gcpinputs.IsolationKey] != gcpinputs.IsolationKVM {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

func checkKataDeploy(t *testing.T, kube *k8s.KubectlOptions) {
	sys := k8s.NewKubectlOptions(kube.ContextName, kube.ConfigPath, "kube-system")
	retry.DoWithRetry(t, "kata-deploy ready (needs Cloud NAT to pull from quay.io)", 60, 15*time.Second, func() (string, error) {
		out, err := k8s.RunKubectlAndGetOutputE(t, sys, "get", "daemonset", "kata-deploy", "-o",
			"jsonpath={.status.desiredNumberScheduled}/{.status.numberReady}")
		if err != nil {
			return "", err
		}
		parts := strings.Split(out, "/")
		if len(parts) != 2 || parts[0] == "0" || parts[0] != parts[1] {
			return "", fmt.Errorf("kata-deploy ready %s", out)
		}
		return out, nil
	})
	kvm := nodes(t, kube, "paddock.dev/isolation=kvm")
	pods, err := k8s.RunKubectlAndGetOutputE(t, sys, "get", "pods", "-l", "name=kata-deploy", "-o", "jsonpath={.items[*].spec.nodeName}")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range strings.Fields(pods) {
		found := false
		for _, k := range kvm.Items {
			found = found || k.Metadata.Name == n
		}
		if !found {
			t.Errorf("kata-deploy runs on %s, which is not a KVM node", n)
		}
	}
}

const busybox = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"

// setUpTenant plays the in-cluster layer's part: the tenant namespace, the
// KSA annotated for workload identity, and an RBAC change the audit sink must
// see.
func setUpTenant(t *testing.T, kube *k8s.KubectlOptions, namespace, gsa string) {
	k8s.KubectlApplyFromString(t, kube, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
  labels: {pod-security.kubernetes.io/enforce: restricted, app.kubernetes.io/managed-by: paddock}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: cloud-reader
  namespace: %[1]s
  annotations: {%[3]s: %[2]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: e2e-audit-probe, namespace: %[1]s}
rules: [{apiGroups: [""], resources: ["configmaps"], verbs: ["get"]}]
`, namespace, gsa, gcpinputs.KSAAnnotation))
}

func runPod(t *testing.T, kube *k8s.KubectlOptions, name, runtimeClass, sa string) {
	t.Helper()
	sa = strings.TrimSpace(sa)
	saLine := "automountServiceAccountToken: false"
	if sa != "" {
		saLine = "serviceAccountName: " + sa
	}
	k8s.KubectlApplyFromString(t, kube, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  runtimeClassName: %s
  %s
  securityContext: {runAsNonRoot: true, runAsUser: 10001, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, readOnlyRootFilesystem: true}
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 500m, memory: 256Mi}}
`, name, runtimeClass, saLine, busybox))
	k8s.WaitUntilPodAvailable(t, kube, name, 60, 10*time.Second)
}

func podNode(t *testing.T, kube *k8s.KubectlOptions, pod string) string {
	out, err := k8s.RunKubectlAndGetOutputE(t, kube, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName}")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkGVisorPod(t *testing.T, kube *k8s.KubectlOptions) {
	runPod(t, kube, "e2e-gvisor", gcpinputs.GVisorRuntimeClass, "")
	node := podNode(t, kube, "e2e-gvisor")
	found := false
	for _, n := range nodes(t, kube, "sandbox.gke.io/runtime=gvisor").Items {
		found = found || n.Metadata.Name == node
	}
	if !found {
		t.Errorf("gVisor pod runs on %s, not a gVisor node", node)
	}
	var hostKernel string
	for _, n := range nodes(t, kube, "sandbox.gke.io/runtime=gvisor").Items {
		if n.Metadata.Name == node {
			hostKernel = n.Status.NodeInfo.KernelVersion
		}
	}
	guest, err := k8s.RunKubectlAndGetOutputE(t, kube, "exec", "e2e-gvisor", "--", "uname", "-r")
	if err != nil || hostKernel == "" || strings.TrimSpace(guest) == hostKernel {
		t.Errorf("the gVisor pod sees the node's kernel %q (guest %q, %v): not sandboxed", hostKernel, guest, err)
	}
	if dmesg, err := k8s.RunKubectlAndGetOutputE(t, kube, "exec", "e2e-gvisor", "--", "dmesg"); err == nil {
		t.Logf("dmesg in the gVisor sandbox:\n%s", dmesg)
	}
}

func checkKataPod(t *testing.T, kube *k8s.KubectlOptions) {
	runPod(t, kube, "e2e-kata", "kata-qemu", "")
	node := podNode(t, kube, "e2e-kata")
	var hostKernel string
	for _, n := range nodes(t, kube, "paddock.dev/isolation=kvm").Items {
		if n.Metadata.Name == node {
			hostKernel = n.Status.NodeInfo.KernelVersion
		}
	}
	if hostKernel == "" {
		t.Fatalf("Kata pod runs on %s, not a KVM node", node)
	}
	guest, err := k8s.RunKubectlAndGetOutputE(t, kube, "exec", "e2e-kata", "--", "uname", "-r")
	if err != nil || strings.TrimSpace(guest) == hostKernel {
		t.Errorf("the Kata pod shares the node's kernel %s (guest %q, %v): not a VM", hostKernel, guest, err)
	}
}

func checkWorkloadIdentity(t *testing.T, e gkeEnv, kube *k8s.KubectlOptions, gsa string) {
	if gsa == "" {
		t.Fatal("no identity output")
	}
	runPod(t, kube, "e2e-wi", gcpinputs.GVisorRuntimeClass, "cloud-reader")
	email := retry.DoWithRetry(t, "metadata server returns the GSA", 12, 10*time.Second, func() (string, error) {
		return k8s.RunKubectlAndGetOutputE(t, kube, "exec", "e2e-wi", "--", "wget", "-qO-", "--header", "Metadata-Flavor: Google",
			"http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/email")
	})
	if strings.TrimSpace(email) != gsa {
		t.Errorf("pod identity %q, want %q", email, gsa)
	}
	keys := shell.RunCommandAndGetStdOut(t, shell.Command{Command: "gcloud", Args: []string{"iam", "service-accounts", "keys", "list",
		"--iam-account", gsa, "--managed-by", "user", "--project", e.project, "--format", "value(name)"}})
	if strings.TrimSpace(keys) != "" {
		t.Errorf("user-managed keys exist for %s: %s", gsa, keys)
	}
}

func checkAuditSink(t *testing.T, e gkeEnv, d PlatformArgs, kube *k8s.KubectlOptions, writer string) {
	s := d.AuditSinks[0]
	var sink struct {
		Destination, Filter, WriterIdentity string
	}
	gcloudJSON(t, &sink, "logging", "sinks", "describe", s.Name, "--project", e.project)
	if sink.WriterIdentity != writer || writer == "" {
		t.Errorf("sink writer %q, stack says %q", sink.WriterIdentity, writer)
	}
	var policy struct {
		Bindings []struct {
			Role    string
			Members []string
		}
	}
	gcloudJSON(t, &policy, "pubsub", "topics", "get-iam-policy", s.Destination, "--project", e.project)
	granted := false
	for _, b := range policy.Bindings {
		granted = granted || (b.Role == "roles/pubsub.publisher" && contains(b.Members, writer))
	}
	if !granted {
		t.Errorf("writer %s is not a publisher on %s: %+v", writer, s.Destination, policy)
	}
	// The sink's filter must select the real audit entry of the Role the test
	// created in the tenant namespace.
	filter, err := gcpinputs.AuditFilter(s.Filter)
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
	retry.DoWithRetry(t, "audit entry of the RBAC change matches the sink filter", 30, 20*time.Second, func() (string, error) {
		var entries []map[string]any
		out, err := shell.RunCommandAndGetStdOutE(t, shell.Command{Command: "gcloud", Args: []string{"logging", "read",
			"(" + filter + ") AND timestamp>=\"" + since + "\"", "--project", e.project, "--limit", "5", "--format", "json"}})
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			return "", err
		}
		if len(entries) == 0 {
			return "", fmt.Errorf("no entry yet")
		}
		return fmt.Sprint(len(entries)), nil
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
