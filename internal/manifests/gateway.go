package manifests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/gateway"
	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// A tenant's egress gateway (issue 38): its configuration (ConfigMap), its
// own ServiceAccount with read access to exactly the credentials' Secrets,
// a Deployment hardened like a sandbox, its Service, and the two
// NetworkPolicies of the gateway pods (gateway.go's part of the fence; the
// sandboxes' rule to the gateway is in egressRules).
//
// How the policies compose. NetworkPolicies only add: a pod may send what
// any policy selecting it allows. The namespace's default-deny selects every
// pod, the gateway's too, so the gateway starts from nothing. Then:
//   - the gateway's own egress policy selects only the gateway pods
//     (GatewayPodLabels, bound to the gateway's service account by the
//     tenant's identity guardrails, so no sandbox can wear it) and allows the
//     cluster resolver and the public internet on the destinations' ports;
//   - the sandboxes' holes (allow-egress, the proxy, the metadata server, the
//     rule to the gateway) select every pod except the gateway's
//     (sandboxSelector), so the gateway gets none of them;
//   - allow-dns still selects every pod: the gateway needs the resolver too;
//   - only the gateway's ingress policy allows anything in, and only from the
//     sandboxes (pods the Agent Sandbox controller labels with their
//     template), on the gateway's port.
// On a Cilium target whose FQDN policy carries the tenant's DNS rule, the
// gateway's plain DNS rule widens DNS for the gateway pods alone (Cilium
// merges per endpoint), which it needs to resolve its destinations.

// Names of the gateway's objects (all "egress-gateway", in the tenant's
// namespace) and of its NetworkPolicies.
const (
	GatewayName          = model.GatewayServiceAccount
	GatewayEgressPolicy  = "egress-gateway-egress"
	GatewayIngressPolicy = "egress-gateway-ingress"
	// AllowGatewayPolicy lets the sandboxes reach the gateway.
	AllowGatewayPolicy = "allow-egress-gateway"
	// GatewayConfigKey is the ConfigMap key of the gateway's configuration,
	// GatewayCAKey that of its CA bundle.
	GatewayConfigKey = "config.json"
	GatewayCAKey     = "ca.pem"
	// GatewayConfigDir and GatewayCredentialsDir are where the gateway
	// container finds its configuration and the credentials' Secrets (one
	// directory per Secret, one file per key).
	GatewayConfigDir      = "/etc/paddock-gateway"
	GatewayCredentialsDir = "/var/run/paddock-gateway/credentials"
	// GatewayBinary is the gateway's path in its image.
	GatewayBinary = "/paddock-gateway"
	// GatewayUID is the user the gateway runs as (never root).
	GatewayUID int64 = 65532
	// GatewayTokenDir is where the gateway's service-account token is
	// mounted (where in-cluster clients read it), GatewayTokenSeconds how
	// long each token the kubelet projects there is valid.
	GatewayTokenDir           = "/var/run/secrets/kubernetes.io/serviceaccount"
	GatewayTokenSeconds int64 = 3600
	// GatewayAPIServerPolicy lets the gateway pods reach the API server
	// (a CiliumNetworkPolicy; see GatewayAPIServerRule).
	GatewayAPIServerPolicy = "egress-gateway-apiserver"
	// GatewayConfigHashAnnotation carries the configuration's hash on the
	// pod template, so a new configuration rolls the pods.
	GatewayConfigHashAnnotation = "paddock.dev/gateway-config-sha256"
	// OriginGateway is the origin of the sandboxes' rule to the gateway.
	OriginGateway = "egress_gateway"
)

// GatewayPodLabels select the gateway's pods. The value is the gateway's
// service account: the identity guardrails let only a pod running as it
// carry the label.
func GatewayPodLabels() map[string]string {
	return map[string]string{IdentityLabel: model.GatewayServiceAccount}
}

// GatewayURL is where the tenant's sandboxes reach the gateway.
func GatewayURL(t model.Tenant) string {
	return fmt.Sprintf("http://%s.%s.svc.%s:%d", GatewayName, t.Namespace, ClusterDomain, model.GatewayListenPort)
}

// sandboxSelector selects the pods of t that the sandboxes' holes apply
// to: every pod, or with a gateway every pod but the gateway's.
func sandboxSelector(t model.Tenant) metav1.LabelSelector {
	if t.EgressGateway == nil {
		return metav1.LabelSelector{}
	}
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: IdentityLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{model.GatewayServiceAccount},
	}}}
}

// gatewayRule is the sandboxes' egress rule to the gateway pods, on the
// gateway's port; ok is false without a gateway.
func gatewayRule(t model.Tenant) (originRule, bool) {
	g := t.EgressGateway
	if g == nil {
		return originRule{}, false
	}
	return originRule{networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: GatewayPodLabels()}}},
		Ports: []networkingv1.NetworkPolicyPort{port("TCP", model.GatewayListenPort)},
	}, Origin{Field: OriginGateway, Src: orSrc(g.Src, t.Src)}}, true
}

// credentialFile is where the gateway reads key of Secret secret.
func credentialFile(secret, key string) string {
	return path.Join(GatewayCredentialsDir, secret, key)
}

// GatewayConfig is the gateway's configuration for tenant t, in the
// gateway's own type (defaults applied, validated by the gateway's own
// rules). nil without a gateway.
func GatewayConfig(p *model.Platform, t model.Tenant) (*gateway.Config, error) {
	g := t.EgressGateway
	if g == nil {
		return nil, nil
	}
	cfg := &gateway.Config{
		Listen: fmt.Sprintf(":%d", model.GatewayListenPort),
		Budgets: gateway.Budgets{
			RequestsPerMinute: g.Budgets.RequestsPerMinute, BytesPerMinute: g.Budgets.BytesPerMinute,
			ConcurrentRequests: g.Budgets.ConcurrentRequests, Connections: g.Budgets.Connections,
			MaxRequestBytes: g.Budgets.MaxRequestBytes, MaxResponseBytes: g.Budgets.MaxResponseBytes,
		},
		Identify:   gateway.Identify{Mode: gateway.IdentifyPodAddress},
		AllowCIDRs: slices.Clone(g.AllowCIDRs),
	}
	if g.CABundle != "" {
		cfg.CABundleFile = path.Join(GatewayConfigDir, GatewayCAKey)
	}
	for _, d := range g.Destinations {
		gd := gateway.Destination{Host: d.Host, Port: int(d.Port)}
		if c := d.Credential; c != nil {
			gd.Credential = &gateway.Credential{Header: c.Header, Format: c.Format, KeyFile: credentialFile(c.Secret, c.Key)}
		}
		cfg.Destinations = append(cfg.Destinations, gd)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tenant %s egress gateway: %w", t.Name, err)
	}
	return cfg, nil
}

// GatewayObjects are the gateway's workload objects: ServiceAccount, Role
// and RoleBinding, ConfigMap,
// Deployment and Service. None without a gateway; its NetworkPolicies are
// among the tenant's egress objects (EgressObjects).
func GatewayObjects(p *model.Platform, t model.Tenant) ([]*unstructured.Unstructured, error) {
	if t.EgressGateway == nil {
		return nil, nil
	}
	cfg, err := GatewayConfig(p, t)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(GatewayName, t.Namespace, p.Labels(t.Name)),
		Data:       map[string]string{GatewayConfigKey: buf.String()},
	}
	if t.EgressGateway.CABundle != "" {
		cm.Data[GatewayCAKey] = t.EgressGateway.CABundle
	}
	dep, err := gatewayDeployment(p, t, cm)
	if err != nil {
		return nil, err
	}
	sa, role, rb := gatewayIdentity(p, t)
	return typedList(sa, role, rb, cm, dep, gatewayService(p, t))
}

// gatewayIdentity is the gateway's ServiceAccount (its token not
// automounted: the Deployment mounts it explicitly, see gatewayAPIToken), a
// Role and its binding. The Role lets the gateway read, in the tenant's
// namespace only, the pods and Sandboxes it names callers from (get, list,
// watch) and, when a destination has a credential, get exactly those
// Secrets (resourceNames). The kubelet mounts the Secrets into the gateway
// pod alone; the Role states the one identity meant to read them.
func gatewayIdentity(p *model.Platform, t model.Tenant) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	no := false
	l := p.Labels(t.Name)
	sa := &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   meta(GatewayName, t.Namespace, l),
		AutomountServiceAccountToken: &no,
	}
	read := []string{"get", "list", "watch"}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
		{APIGroups: []string{agentsandbox.Sandboxes.Group}, Resources: []string{agentsandbox.Sandboxes.Resource}, Verbs: read},
	}
	if secrets := t.GatewayCredentialSecrets(); len(secrets) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: secrets, Verbs: []string{"get"}})
	}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: meta(GatewayName, t.Namespace, l),
		Rules:      rules,
	}
	rb := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: meta(GatewayName, t.Namespace, l),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: GatewayName},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: GatewayName, Namespace: t.Namespace}},
	}
	return sa, role, rb
}

// gatewayAPIToken is the gateway's own service-account token, mounted where
// in-cluster clients look for it: a projected token for the API server's
// audience, rotated by the kubelet, valid an hour (GatewayTokenSeconds), with
// the cluster's CA and the namespace. Exactly what automounting would give,
// written out so the pod spec says what the gateway holds.
func gatewayAPIToken() (corev1.Volume, corev1.VolumeMount) {
	exp := GatewayTokenSeconds
	mode := int32(0o440)
	v := corev1.Volume{Name: "api-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}}}
	return v, corev1.VolumeMount{Name: v.Name, MountPath: GatewayTokenDir, ReadOnly: true}
}

// gatewayRuntimeClass is the runtime class the gateway runs under: the
// first the tenant's templates use, else the platform's first; "" when the
// platform has none.
func gatewayRuntimeClass(p *model.Platform, t model.Tenant) string {
	for _, tpl := range t.Templates {
		if tpl.RuntimeClass != "" {
			return tpl.RuntimeClass
		}
	}
	if len(p.RuntimeClasses) > 0 {
		return p.RuntimeClasses[0].Name
	}
	return ""
}

// gatewayResources are the gateway container's requests and limits.
func gatewayResources() (corev1.ResourceRequirements, error) {
	return resources(model.Resources{
		RequestsCPU: model.GatewayRequestsCPU, RequestsMemory: model.GatewayRequestsMemory,
		RequestsEphemeralStorage: model.GatewayRequestsEphemeralStorage,
		LimitsCPU:                model.GatewayLimitsCPU, LimitsMemory: model.GatewayLimitsMemory,
		LimitsEphemeralStorage: model.GatewayLimitsEphemeralStorage,
	})
}

// gatewayDeployment runs the gateway hardened like a sandbox: non-root,
// read-only root, every capability dropped, seccomp RuntimeDefault, no
// privilege escalation, limits set, on the sandboxes' runtime class. Its
// own service-account token is mounted (gatewayAPIToken): it watches the
// namespace's pods and Sandboxes to name its callers. Each credential's
// Secret is mounted read-only, only the keys the configuration names.
func gatewayDeployment(p *model.Platform, t model.Tenant, cm *corev1.ConfigMap) (*appsv1.Deployment, error) {
	g := t.EgressGateway
	res, err := gatewayResources()
	if err != nil {
		return nil, err
	}
	no, yes := false, true
	uid := GatewayUID
	seccomp := seccompProfile(model.SeccompRuntimeDefault)
	cfgMode, secretMode := int32(0o444), int32(0o440)
	volumes := []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, DefaultMode: &cfgMode,
	}}}}
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: GatewayConfigDir, ReadOnly: true}}
	tokVol, tokMount := gatewayAPIToken()
	volumes, mounts = append(volumes, tokVol), append(mounts, tokMount)
	keys := map[string][]string{}
	for _, d := range g.Destinations {
		if c := d.Credential; c != nil && !slices.Contains(keys[c.Secret], c.Key) {
			keys[c.Secret] = append(keys[c.Secret], c.Key)
		}
	}
	for i, s := range t.GatewayCredentialSecrets() {
		name := fmt.Sprintf("credential-%d", i)
		src := &corev1.SecretVolumeSource{SecretName: s, DefaultMode: &secretMode, Optional: &no}
		ks := keys[s]
		slices.Sort(ks)
		for _, k := range ks {
			src.Items = append(src.Items, corev1.KeyToPath{Key: k, Path: k})
		}
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: src}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path.Join(GatewayCredentialsDir, s), ReadOnly: true})
	}
	probe := func(delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(model.GatewayListenPort)}},
			InitialDelaySeconds: delay, PeriodSeconds: 10, TimeoutSeconds: 2, FailureThreshold: 3,
		}
	}
	container := corev1.Container{
		Name:    "gateway",
		Image:   g.Image,
		Command: []string{GatewayBinary, "-config", path.Join(GatewayConfigDir, GatewayConfigKey), "-namespace", t.Namespace},
		Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: model.GatewayListenPort, Protocol: corev1.ProtocolTCP}},
		SecurityContext: &corev1.SecurityContext{
			Privileged:               &no,
			AllowPrivilegeEscalation: &no,
			ReadOnlyRootFilesystem:   &yes,
			RunAsNonRoot:             &yes,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           seccomp,
		},
		Resources:      res,
		VolumeMounts:   mounts,
		ReadinessProbe: probe(1),
		LivenessProbe:  probe(10),
	}
	if p.Target.Kind == model.TargetLocal {
		// Imported into the node, never pulled.
		container.ImagePullPolicy = corev1.PullNever
	}
	sum := sha256.Sum256([]byte(cm.Data[GatewayConfigKey] + "\x00" + cm.Data[GatewayCAKey]))
	podLabels := merge(p.Labels(t.Name), GatewayPodLabels())
	var runtimeClass *string
	if rc := gatewayRuntimeClass(p, t); rc != "" {
		runtimeClass = &rc
	}
	replicas := g.Replicas
	grace := int64(30)
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(GatewayName, t.Namespace, p.Labels(t.Name)),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: GatewayPodLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      podLabels,
					Annotations: map[string]string{GatewayConfigHashAnnotation: hex.EncodeToString(sum[:])},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName:            GatewayName,
					AutomountServiceAccountToken:  &no,
					EnableServiceLinks:            &no,
					RuntimeClassName:              runtimeClass,
					TerminationGracePeriodSeconds: &grace,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
						SeccompProfile: seccomp,
					},
					Containers: []corev1.Container{container},
					Volumes:    volumes,
				},
			},
		},
	}
	return dep, nil
}

// gatewayService is the gateway's ClusterIP Service.
func gatewayService(p *model.Platform, t model.Tenant) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(GatewayName, t.Namespace, p.Labels(t.Name)),
		Spec: corev1.ServiceSpec{
			Selector: GatewayPodLabels(),
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: model.GatewayListenPort,
				TargetPort: intstr.FromInt32(model.GatewayListenPort),
			}},
		},
	}
}

// gatewayNeverRanges are what the gateway's egress policy never opens:
// private, CGNAT, loopback and link-local (the metadata server) space. The
// gateway refuses them itself too; the policy holds if it did not.
var (
	gatewayNeverV4 = []string{"10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"}
	gatewayNeverV6 = []string{"::1/128", "fc00::/7", "fe80::/10"}
)

// gatewayPolicies are the gateway pods' own NetworkPolicies: egress to the
// cluster resolver and to public addresses on the destinations' ports (and
// the allow_cidrs of a local test), ingress from the sandboxes on the
// gateway's port. None without a gateway, or when the tenant waives
// default-deny (then nothing is fenced).
func gatewayPolicies(p *model.Platform, t model.Tenant) ([]*networkingv1.NetworkPolicy, error) {
	g := t.EgressGateway
	if g == nil || t.Egress.Unrestricted {
		return nil, nil
	}
	var ports []networkingv1.NetworkPolicyPort
	var seen []int32
	for _, d := range g.Destinations {
		if !slices.Contains(seen, d.Port) {
			seen = append(seen, d.Port)
		}
	}
	slices.Sort(seen)
	for _, n := range seen {
		ports = append(ports, port("TCP", n))
	}
	peers := []networkingv1.NetworkPolicyPeer{
		{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: gatewayNeverV4}},
		{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: gatewayNeverV6}},
	}
	for _, c := range g.AllowCIDRs {
		pfx, err := model.ParseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("tenant %s egress gateway allow_cidrs: %w", t.Name, err)
		}
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: pfx.Masked().String()}})
	}
	sel := metav1.LabelSelector{MatchLabels: GatewayPodLabels()}
	rules := []networkingv1.NetworkPolicyEgressRule{DNSEgressRule(), {To: peers, Ports: ports}}
	if r, ok := gatewayGKEControlPlaneRule(p); ok {
		rules = append(rules, r)
	}
	egress := netpol(p, t, GatewayEgressPolicy, networkingv1.NetworkPolicySpec{
		PodSelector: sel,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress:      rules,
	})
	ingress := netpol(p, t, GatewayIngressPolicy, networkingv1.NetworkPolicySpec{
		PodSelector: sel,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: sandboxv1beta1.SandboxTemplateRefHashLabel, Operator: metav1.LabelSelectorOpExists,
			}}}}},
			Ports: []networkingv1.NetworkPolicyPort{port("TCP", model.GatewayListenPort)},
		}},
	})
	return []*networkingv1.NetworkPolicy{egress, ingress}, nil
}

// gatewayGKEControlPlaneRule opens, on target gke, the private control
// plane endpoint (the cluster's master CIDR, which Paddock's cluster always
// uses, on 443) to the gateway pods: the gateway reads its namespace's pods
// and Sandboxes, and a private cluster's API server is at an address the
// world rule excludes. Dataplane V2 judges it by the endpoint's address.
func gatewayGKEControlPlaneRule(p *model.Platform) (networkingv1.NetworkPolicyEgressRule, bool) {
	if p.Target.Kind != model.TargetGKE {
		return networkingv1.NetworkPolicyEgressRule{}, false
	}
	return networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: gcpinputs.DefaultMasterCIDR}}},
		Ports: []networkingv1.NetworkPolicyPort{port("TCP", 443)},
	}, true
}

// GatewayAPIServerPorts are the ports the gateway may reach the API server
// on: the kubernetes Service's backend port, which network policy sees
// (443 on GKE and on Paddock's local node, 6443 where kubeadm set it up).
var GatewayAPIServerPorts = []int32{443, 6443}

// GatewayAPIServerRule is the gateway pods' hole to the API server, as a
// CiliumNetworkPolicy: the kube-apiserver entity (Cilium's name for the
// kubernetes Service's endpoints, wherever they are) on GatewayAPIServerPorts.
// A NetworkPolicy cannot name the API server, and the gateway's own egress
// policy opens no private or node address. nil without a gateway, when
// nothing is fenced, or on a target whose CNI is not Cilium (there the API
// server is reached through the gateway's world rule on a public endpoint
// only).
func GatewayAPIServerRule(p *model.Platform, t model.Tenant) *unstructured.Unstructured {
	if t.EgressGateway == nil || t.Egress.Unrestricted || p.Target.FQDNPolicy != model.FQDNPolicyCilium {
		return nil
	}
	sel := map[string]any{}
	for k, v := range GatewayPodLabels() {
		sel[k] = v
	}
	var ports []any
	for _, n := range GatewayAPIServerPorts {
		ports = append(ports, map[string]any{"port": fmt.Sprint(n), "protocol": "TCP"})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CiliumNetworkPolicies.GroupVersion().String(),
		"kind":       "CiliumNetworkPolicy",
		"metadata":   map[string]any{"name": GatewayAPIServerPolicy, "namespace": t.Namespace, "labels": labelsAny(p, t)},
		"spec": map[string]any{
			"endpointSelector": map[string]any{"matchLabels": sel},
			"egress": []any{map[string]any{
				"toEntities": []any{"kube-apiserver"},
				"toPorts":    []any{map[string]any{"ports": ports}},
			}},
		},
	}}
}
