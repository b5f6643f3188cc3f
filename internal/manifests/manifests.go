// Package manifests turns the model into the Kubernetes objects Paddock owns, as
// plain typed values (k8s.io/api and the Agent Sandbox v1beta1 API types, so a
// wrong field fails to compile). It knows nothing of Pulumi: the components
// register exactly these objects, and `render` writes exactly these objects.
package manifests

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// Pod Security Standards labels. Enforce is the tenant's level (restricted
// unless the spec loosens it to baseline, which policy flags); audit and warn
// stay at restricted whatever is enforced, so a loosened namespace still
// records and shows every pod restricted would refuse. Each is pinned to the
// Kubernetes minor Paddock is tested against, so a cluster upgrade cannot
// silently change what a level means.
const (
	PSSLevel = model.PodSecurityRestricted
)

// PSSVersion is the pinned Pod Security Standards version ("v1.35").
func PSSVersion() string {
	v := strings.TrimPrefix(pins.Kubernetes, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return "latest"
	}
	return "v" + parts[0] + "." + parts[1]
}

// PSSLabels are the namespace labels that make the API server enforce
// level ("" means restricted) and audit and warn at restricted.
func PSSLabels(level string) map[string]string {
	if level == "" {
		level = PSSLevel
	}
	m := map[string]string{}
	for _, mode := range []string{"enforce", "audit", "warn"} {
		l := PSSLevel
		if mode == "enforce" {
			l = level
		}
		m["pod-security.kubernetes.io/"+mode] = l
		m["pod-security.kubernetes.io/"+mode+"-version"] = PSSVersion()
	}
	return m
}

func meta(name, namespace string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
}

// merge is the union of ms; later maps win.
func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// Namespace is the tenant's fence.
func Namespace(p *model.Platform, t model.Tenant) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: meta(t.Namespace, "", merge(p.Labels(t.Name), PSSLabels(t.PodSecurity))),
	}
}

// AgentRuntimeServiceAccount is the identity sandbox pods run as: no token is
// mounted and nothing is ever bound to it. On GKE, a workload identity of the
// agent (a waived PDK-207) annotates it.
func AgentRuntimeServiceAccount(p *model.Platform, t model.Tenant) *corev1.ServiceAccount {
	no := false
	m := meta(model.AgentRuntimeServiceAccount, t.Namespace, p.Labels(t.Name))
	m.Annotations = WorkloadIdentityAnnotations(p, t, model.AgentRuntimeServiceAccount)
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   m,
		AutomountServiceAccountToken: &no,
	}
}

// WorkloadIdentityAnnotations are the annotations of the tenant's Kubernetes
// service account ksa: iam.gke.io/gcp-service-account naming the Google
// service account the GCP layer creates for it (TargetGKE, when the tenant
// gives ksa a workload identity), nil otherwise. The email is derived, not
// read back from GCP: the same id the GCP layer gives the account
// (spec.ServiceAccountID of platform, tenant and KSA), in the target's project.
func WorkloadIdentityAnnotations(p *model.Platform, t model.Tenant, ksa string) map[string]string {
	if p.Target.Kind != model.TargetGKE || t.Identity.WorkloadIdentity(ksa) == nil {
		return nil
	}
	id := gcpinputs.ServiceAccountID(p.Name, t.Name, ksa)
	return map[string]string{gcpinputs.KSAAnnotation: gcpinputs.ServiceAccountEmail(id, p.Target.Project)}
}

// GKEManagedRuntimeClass is the RuntimeClass GKE Sandbox creates itself on a
// cluster with a gVisor node pool. Paddock references it and never fights it.
const GKEManagedRuntimeClass = "gvisor"

// ManagesRuntimeClass reports whether Paddock creates rc on p's target (on GKE
// the gvisor class belongs to GKE).
func ManagesRuntimeClass(p *model.Platform, rc model.RuntimeClass) bool {
	return !(p.Target.Kind == model.TargetGKE && rc.Name == GKEManagedRuntimeClass)
}

// RuntimeClass exposes a sandbox runtime with the scheduling that keeps its pods on
// the nodes that provide it.
func RuntimeClass(p *model.Platform, rc model.RuntimeClass) *nodev1.RuntimeClass {
	obj := &nodev1.RuntimeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass"},
		ObjectMeta: meta(rc.Name, "", p.Labels("")),
		Handler:    rc.Handler,
	}
	if rc.OverheadCPU != "" || rc.OverheadMemory != "" {
		// VM runtimes (Kata) cost memory and CPU per pod beyond the containers';
		// the scheduler and quota must count it.
		fixed := corev1.ResourceList{}
		if q, err := resource.ParseQuantity(rc.OverheadCPU); err == nil && rc.OverheadCPU != "" {
			fixed[corev1.ResourceCPU] = q
		}
		if q, err := resource.ParseQuantity(rc.OverheadMemory); err == nil && rc.OverheadMemory != "" {
			fixed[corev1.ResourceMemory] = q
		}
		obj.Overhead = &nodev1.Overhead{PodFixed: fixed}
	}
	if len(rc.NodeSelector) > 0 || len(rc.Tolerations) > 0 {
		obj.Scheduling = &nodev1.Scheduling{NodeSelector: rc.NodeSelector}
		for _, t := range rc.Tolerations {
			obj.Scheduling.Tolerations = append(obj.Scheduling.Tolerations, corev1.Toleration{
				Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect),
			})
		}
	}
	return obj
}

// SandboxTemplate is the hardened template: non-root, seccomp RuntimeDefault, no
// privilege escalation, read-only root filesystem, every capability dropped, no
// service-account token, limits on CPU, memory and ephemeral storage, secrets
// that fail closed. Each control is loosened only by an explicit model field,
// which policy reports (and blocks unless waived).
func SandboxTemplate(p *model.Platform, t model.Tenant, tpl model.Template) (*extv1beta1.SandboxTemplate, error) {
	where := fmt.Sprintf("template %s/%s", t.Name, tpl.Name)
	res, err := resources(tpl.Resources)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	tmpSize, err := resource.ParseQuantity(tpl.TmpSize)
	if err != nil {
		return nil, fmt.Errorf("%s: tmp size %q: %w", where, tpl.TmpSize, err)
	}
	no := false
	uid := tpl.RunAsUser
	var runtimeClass *string
	if tpl.RuntimeClass != "" {
		rc := tpl.RuntimeClass
		runtimeClass = &rc
	}
	nonRoot := !tpl.AllowRoot
	escalate := tpl.AllowPrivilegeEscalation
	privileged := tpl.Privileged
	readOnlyRoot := !tpl.WritableRootFilesystem
	automount := tpl.AutomountServiceAccountToken
	caps := &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	for _, c := range tpl.AddCapabilities {
		caps.Add = append(caps.Add, corev1.Capability(c))
	}
	seccomp := seccompProfile(tpl.Seccomp)

	container := corev1.Container{
		Name:    "agent",
		Image:   tpl.Image,
		Command: tpl.Command,
		Args:    tpl.Args,
		SecurityContext: &corev1.SecurityContext{
			Privileged:               &privileged,
			AllowPrivilegeEscalation: &escalate,
			ReadOnlyRootFilesystem:   &readOnlyRoot,
			RunAsNonRoot:             &nonRoot,
			Capabilities:             caps,
			SeccompProfile:           seccomp,
		},
		Resources:    res,
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
	}
	volumes := []corev1.Volume{{
		Name:         "tmp",
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &tmpSize}},
	}}
	envNames := make([]string, 0, len(tpl.Env))
	for k := range tpl.Env {
		envNames = append(envNames, k)
	}
	sort.Strings(envNames)
	for _, k := range envNames {
		container.Env = append(container.Env, corev1.EnvVar{Name: k, Value: tpl.Env[k]})
	}
	for _, se := range tpl.SecretEnv {
		// Fail closed: without the Secret the pod does not start.
		optional := se.Optional
		container.Env = append(container.Env, corev1.EnvVar{Name: se.Name, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: se.Secret}, Key: se.Key, Optional: &optional},
		}})
	}
	if px := t.Egress.Proxy; px != nil && px.URL != "" {
		for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY"} {
			container.Env = append(container.Env, corev1.EnvVar{Name: k, Value: px.URL})
		}
	}
	var claims []sandboxv1beta1.PersistentVolumeClaimTemplate
	if ws := tpl.Workspace; ws != nil {
		size, err := resource.ParseQuantity(ws.Size)
		if err != nil {
			return nil, fmt.Errorf("%s: workspace size %q: %w", where, ws.Size, err)
		}
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "workspace", MountPath: ws.MountPath})
		if ws.Kind == model.WorkspacePersistent {
			pvc := sandboxv1beta1.PersistentVolumeClaimTemplate{
				EmbeddedObjectMetadata: sandboxv1beta1.EmbeddedObjectMetadata{Name: "workspace"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
				},
			}
			if ws.StorageClass != "" {
				sc := ws.StorageClass
				pvc.Spec.StorageClassName = &sc
			}
			claims = append(claims, pvc)
		} else {
			volumes = append(volumes, corev1.Volume{Name: "workspace",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}}})
		}
	}
	if tok := t.Identity.ToolGatewayToken; tok != nil {
		// A projected, audience-bound, short-lived token: only the tool gateway
		// accepts it, and a stolen copy expires.
		exp := int64(tok.Expiration.Seconds())
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "tool-token", MountPath: tok.MountPath, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "tool-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: tok.Audience, ExpirationSeconds: &exp, Path: "token",
			}}},
		}}})
	}

	labels := p.Labels(t.Name)
	spec := corev1.PodSpec{
		ServiceAccountName:           model.AgentRuntimeServiceAccount,
		AutomountServiceAccountToken: &automount,
		RuntimeClassName:             runtimeClass,
		RestartPolicy:                corev1.RestartPolicyNever,
		EnableServiceLinks:           &no,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   &nonRoot,
			RunAsUser:      &uid,
			RunAsGroup:     &uid,
			FSGroup:        &uid,
			SeccompProfile: seccomp,
		},
		Containers: []corev1.Container{container},
		Volumes:    volumes,
	}
	netpol, mgmt, _, err := templateNetworkPolicy(p, t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &extv1beta1.SandboxTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxTemplate"},
		ObjectMeta: meta(tpl.Name, t.Namespace, labels),
		Spec: extv1beta1.SandboxTemplateSpec{
			SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
				PodTemplate: sandboxv1beta1.PodTemplate{
					ObjectMeta: sandboxv1beta1.PodMetadata{Labels: labels},
					Spec:       spec,
				},
				VolumeClaimTemplates: claims,
			},
			NetworkPolicy:           netpol,
			NetworkPolicyManagement: mgmt,
		},
	}, nil
}

func seccompProfile(s string) *corev1.SeccompProfile {
	switch {
	case s == "" || s == model.SeccompRuntimeDefault:
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	case s == model.SeccompUnconfined:
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	case strings.HasPrefix(s, "Localhost/"):
		prof := strings.TrimPrefix(s, "Localhost/")
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &prof}
	}
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
}

// templateNetworkPolicy is the controller-managed policy of the template's
// sandboxes, mirroring the namespace's egress holes (belt and braces: it
// survives namespace policy edits). No ingress rule: nothing dials a sandbox.
// origins are those of its egress rules, by index; without a policy of its own
// (default_deny = false) the controller applies ControllerDefaultEgress, and
// origins are those of its rules.
func templateNetworkPolicy(p *model.Platform, t model.Tenant) (*extv1beta1.NetworkPolicySpec, extv1beta1.NetworkPolicyManagement, []Origin, error) {
	if t.Egress.Unrestricted {
		// The controller's secure default (public internet only; RFC 1918 and
		// metadata blocked) is the least it gets.
		at := Origin{Field: OriginDefaultDeny, Src: t.Egress.Attrs.At("default_deny", orSrc(t.Egress.Src, t.Src))}
		origins := make([]Origin, len(ControllerDefaultEgress()))
		for i := range origins {
			origins[i] = at
		}
		return nil, extv1beta1.NetworkPolicyManagementManaged, origins, nil
	}
	tr, err := egressRules(p, t)
	if err != nil {
		return nil, "", nil, err
	}
	np := &extv1beta1.NetworkPolicySpec{}
	var origins []Origin
	add := func(r originRule) {
		np.Egress = append(np.Egress, r.rule)
		origins = append(origins, r.origin)
	}
	if tr.dns != nil {
		add(*tr.dns)
	}
	for _, h := range tr.holes {
		add(h)
	}
	if tr.metadata != nil {
		add(*tr.metadata)
	}
	if tr.proxy != nil {
		add(*tr.proxy)
	}
	if tr.gateway != nil {
		add(*tr.gateway)
	}
	return np, extv1beta1.NetworkPolicyManagementManaged, origins, nil
}

func resources(r model.Resources) (corev1.ResourceRequirements, error) {
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, q := range []struct {
		list corev1.ResourceList
		name corev1.ResourceName
		val  string
	}{
		{out.Requests, corev1.ResourceCPU, r.RequestsCPU},
		{out.Requests, corev1.ResourceMemory, r.RequestsMemory},
		{out.Requests, corev1.ResourceEphemeralStorage, r.RequestsEphemeralStorage},
		{out.Limits, corev1.ResourceCPU, r.LimitsCPU},
		{out.Limits, corev1.ResourceMemory, r.LimitsMemory},
		{out.Limits, corev1.ResourceEphemeralStorage, r.LimitsEphemeralStorage},
	} {
		if q.val == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.val)
		if err != nil {
			return out, fmt.Errorf("%s %q: %w", q.name, q.val, err)
		}
		q.list[q.name] = v
	}
	return out, nil
}

// WarmPoolReadyAnnotations make the provider wait until the pool has its replicas
// Ready, so `up` finishes only when sessions can start warm.
func WarmPoolReadyAnnotations(replicas int32) map[string]string {
	if replicas <= 0 {
		return nil
	}
	return map[string]string{
		"pulumi.com/waitFor":        fmt.Sprintf("jsonpath={.status.readyReplicas}=%d", replicas),
		"pulumi.com/timeoutSeconds": "300",
	}
}

// WarmPool keeps pre-created sandboxes of one template of the same tenant.
func WarmPool(p *model.Platform, t model.Tenant, wp model.WarmPool) *extv1beta1.SandboxWarmPool {
	replicas := wp.Replicas
	m := meta(wp.Name, t.Namespace, p.Labels(t.Name))
	m.Annotations = WarmPoolReadyAnnotations(replicas)
	return &extv1beta1.SandboxWarmPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxWarmPool"},
		ObjectMeta: m,
		Spec: extv1beta1.SandboxWarmPoolSpec{
			Replicas:    &replicas,
			TemplateRef: extv1beta1.SandboxTemplateRef{Name: wp.Template},
			// Always explicit: left out, the CRD defaults it to OnReplenish,
			// which keeps stale sandboxes in the pool.
			UpdateStrategy: &extv1beta1.SandboxWarmPoolUpdateStrategy{Type: extv1beta1.SandboxWarmPoolUpdateStrategyType(wp.Strategy())},
		},
	}
}

// ToUnstructured converts a typed object (with TypeMeta set) into its wire form,
// dropping the empty creationTimestamp and status the converter emits.
func ToUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	if spec, ok := u.Object["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(u.Object, "spec")
	}
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return nil, fmt.Errorf("object %T has no apiVersion/kind", obj)
	}
	return u, nil
}

// GVK of an unstructured object, for callers that register or print it.
func GVK(u *unstructured.Unstructured) schema.GroupVersionKind { return u.GroupVersionKind() }
