// Package objects turns the model into the Kubernetes objects Paddock owns, as
// plain typed values (k8s.io/api and the Agent Sandbox v1beta1 API types, so a
// wrong field fails to compile). It knows nothing of Pulumi: the components
// register exactly these objects, and `render` writes exactly these objects.
package objects

import (
	"fmt"
	"strings"

	"github.com/paddock-platform/paddock/model"
	"github.com/paddock-platform/paddock/pins"
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

// Pod Security Standards labels: enforce, audit and warn all at restricted, each
// pinned to the Kubernetes minor Paddock is tested against so a cluster upgrade
// cannot silently change what "restricted" means.
const (
	PSSLevel = "restricted"
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

// PSSLabels are the namespace labels that make the API server enforce restricted.
func PSSLabels() map[string]string {
	m := map[string]string{}
	for _, mode := range []string{"enforce", "audit", "warn"} {
		m["pod-security.kubernetes.io/"+mode] = PSSLevel
		m["pod-security.kubernetes.io/"+mode+"-version"] = PSSVersion()
	}
	return m
}

func meta(name, namespace string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// Namespace is the tenant's fence.
func Namespace(p *model.Platform, t model.Tenant) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: meta(t.Namespace, "", merge(p.Labels(t.Name), PSSLabels())),
	}
}

// AgentRuntimeServiceAccount is the identity sandbox pods run as: no token is
// mounted and nothing is ever bound to it.
func AgentRuntimeServiceAccount(p *model.Platform, t model.Tenant) *corev1.ServiceAccount {
	no := false
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   meta(model.AgentRuntimeServiceAccount, t.Namespace, p.Labels(t.Name)),
		AutomountServiceAccountToken: &no,
	}
}

// RuntimeClass exposes a sandbox runtime with the scheduling that keeps its pods on
// the nodes that provide it.
func RuntimeClass(p *model.Platform, rc model.RuntimeClass) *nodev1.RuntimeClass {
	obj := &nodev1.RuntimeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass"},
		ObjectMeta: meta(rc.Name, "", p.Labels("")),
		Handler:    rc.Handler,
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

// SandboxTemplate is the hardened template. The security context is fixed here and
// not configurable: non-root, seccomp RuntimeDefault, no privilege escalation,
// read-only root filesystem, every capability dropped, no service account token.
func SandboxTemplate(p *model.Platform, t model.Tenant, tpl model.Template) (*extv1beta1.SandboxTemplate, error) {
	res, err := resources(tpl.Resources)
	if err != nil {
		return nil, fmt.Errorf("template %s/%s: %w", t.Name, tpl.Name, err)
	}
	tmpSize, err := resource.ParseQuantity(tpl.TmpSize)
	if err != nil {
		return nil, fmt.Errorf("template %s/%s: tmp size %q: %w", t.Name, tpl.Name, tpl.TmpSize, err)
	}
	yes, no := true, false
	uid := tpl.RunAsUser
	var runtimeClass *string
	if tpl.RuntimeClass != "" {
		rc := tpl.RuntimeClass
		runtimeClass = &rc
	}
	labels := p.Labels(t.Name)
	spec := corev1.PodSpec{
		ServiceAccountName:           model.AgentRuntimeServiceAccount,
		AutomountServiceAccountToken: &no,
		RuntimeClassName:             runtimeClass,
		RestartPolicy:                corev1.RestartPolicyNever,
		EnableServiceLinks:           &no,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   &yes,
			RunAsUser:      &uid,
			RunAsGroup:     &uid,
			FSGroup:        &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:    "agent",
			Image:   tpl.Image,
			Command: tpl.Command,
			Args:    tpl.Args,
			SecurityContext: &corev1.SecurityContext{
				Privileged:               &no,
				AllowPrivilegeEscalation: &no,
				ReadOnlyRootFilesystem:   &yes,
				RunAsNonRoot:             &yes,
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Resources:    res,
			VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		}},
		Volumes: []corev1.Volume{{
			Name:         "tmp",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &tmpSize}},
		}},
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
			},
			NetworkPolicyManagement: extv1beta1.NetworkPolicyManagementManaged,
		},
	}, nil
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
