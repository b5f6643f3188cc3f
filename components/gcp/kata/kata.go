// Package kata installs Kata Containers on a cluster's KVM node pools: the
// pinned kata-deploy DaemonSet (which installs the Kata runtime into each KVM
// node's containerd) with its RBAC, and the RuntimeClasses kata-<shim> with
// pod overhead and scheduling onto those pools only. Objects are typed
// k8s.io/api values registered with the kubernetes provider the caller passes
// down (pulumi.Providers / pulumi.Provider).
package kata

import (
	"fmt"
	"maps"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/paddock-platform/paddock/components/internal/k8sres"
	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/pins"
)

// The pinned kata-deploy release. The pin lives in internal/pins/versions.env
// (KATA_DEPLOY_VERSION, KATA_DEPLOY_IMAGE, KATA_DEPLOY_DIGEST) with every
// other version; Image pulls it by tag and digest.
var (
	Version = pins.KataDeploy
	Image   = pins.KataDeployImage + ":" + pins.KataDeploy + "@" + pins.KataDeployDigest
)

// ImageOf is the kata-deploy image the install pulls: the mirror args name,
// or the pinned Image.
func ImageOf(args gcpinputs.KataArgs) string {
	if args.Image != "" {
		return args.Image
	}
	return Image
}

// Names of the objects kata-deploy runs as.
const (
	Namespace      = "kube-system"
	DaemonSet      = "kata-deploy"
	ServiceAccount = "kata-deploy-sa"
	ClusterRole    = "paddock-kata-deploy"
)

// Objects are every object of the install, in creation order: RBAC, the
// DaemonSet, the RuntimeClasses (none when args.ExternalRuntimeClasses).
func Objects(args gcpinputs.KataArgs) []runtime.Object {
	image := ImageOf(args)
	labels := merge(args.Labels, map[string]string{"app.kubernetes.io/name": "kata-deploy", "app.kubernetes.io/version": Version})
	shims := args.KataShims()
	yes := true
	one := intstr.FromInt32(1)

	objs := []runtime.Object{
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Namespace: Namespace, Labels: labels},
		},
		// kata-deploy labels its node (katacontainers.io/kata-runtime=true) once
		// the runtime is installed: get and patch nodes, nothing else. The
		// RuntimeClasses are Paddock's, so it gets no runtimeclasses rights.
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: ClusterRole, Labels: labels},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: ClusterRole, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: ServiceAccount, Namespace: Namespace}},
		},
		&appsv1.DaemonSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
			ObjectMeta: metav1.ObjectMeta{Name: DaemonSet, Namespace: Namespace, Labels: labels},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": DaemonSet}},
				UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
					Type:          appsv1.RollingUpdateDaemonSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one},
				},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: merge(labels, map[string]string{"name": DaemonSet})},
					Spec: corev1.PodSpec{
						ServiceAccountName: ServiceAccount,
						// kata-deploy edits the host's containerd config and restarts
						// containerd through the host's systemd: it needs the host's
						// PID namespace, its root and privilege. That is why it runs
						// on the KVM pool only.
						HostPID:           true,
						NodeSelector:      args.Scheduling.NodeSelector,
						Tolerations:       tolerations(args.Scheduling.Tolerations),
						PriorityClassName: "system-node-critical",
						Containers: []corev1.Container{{
							Name:            "kube-kata",
							Image:           image,
							ImagePullPolicy: corev1.PullIfNotPresent,
							Command:         []string{"bash", "-c", "/opt/kata-artifacts/scripts/kata-deploy.sh install"},
							Env: []corev1.EnvVar{
								{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
								{Name: "DEBUG", Value: "false"},
								// The names the pinned release reads (3.20.0: SHIMS and
								// DEFAULT_SHIM; the per-architecture SHIMS_X86_64 came in
								// 3.22.0). An unknown name is ignored and every shim gets
								// installed; testdata/kata-deploy-env.txt pins the list.
								{Name: "SHIMS", Value: strings.Join(shims, " ")},
								{Name: "DEFAULT_SHIM", Value: defaultShim(shims)},
								{Name: "CREATE_RUNTIMECLASSES", Value: "false"},
								{Name: "CREATE_DEFAULT_RUNTIMECLASS", Value: "false"},
							},
							SecurityContext: &corev1.SecurityContext{Privileged: &yes},
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
							}},
							VolumeMounts: []corev1.VolumeMount{
								{Name: "containerd-conf", MountPath: "/etc/containerd/"},
								{Name: "host", MountPath: "/host/"},
							},
						}},
						Volumes: []corev1.Volume{
							{Name: "containerd-conf", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/containerd/"}}},
							{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
						},
					},
				},
			},
		},
	}
	if args.ExternalRuntimeClasses {
		return objs
	}
	for _, rc := range args.KataRuntimeClasses() {
		objs = append(objs, RuntimeClass(rc, args.Labels))
	}
	return objs
}

// RuntimeClass is one kata-<shim> RuntimeClass: its handler, its pod overhead
// and the scheduling that keeps its pods on the KVM pools.
func RuntimeClass(rc gcpinputs.RuntimeClass, labels map[string]string) *nodev1.RuntimeClass {
	obj := &nodev1.RuntimeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: rc.Name, Labels: labels},
		Handler:    rc.Handler,
		Scheduling: &nodev1.Scheduling{NodeSelector: rc.Scheduling.NodeSelector, Tolerations: tolerations(rc.Scheduling.Tolerations)},
	}
	if rc.OverheadCPU != "" || rc.OverheadMemory != "" {
		obj.Overhead = &nodev1.Overhead{PodFixed: corev1.ResourceList{}}
		if rc.OverheadCPU != "" {
			obj.Overhead.PodFixed[corev1.ResourceCPU] = resource.MustParse(rc.OverheadCPU)
		}
		if rc.OverheadMemory != "" {
			obj.Overhead.PodFixed[corev1.ResourceMemory] = resource.MustParse(rc.OverheadMemory)
		}
	}
	return obj
}

func defaultShim(shims []string) string {
	for _, s := range shims {
		if s == gcpinputs.DefaultKataShim {
			return s
		}
	}
	return shims[0]
}

func tolerations(ts []gcpinputs.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range ts {
		out = append(out, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return out
}

// merge is the union of ms; later maps win.
func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// Install is the Kata Containers install on the KVM pools.
type Install struct {
	pulumi.ResourceState

	Version        pulumi.StringOutput      `pulumi:"version"`
	Image          pulumi.StringOutput      `pulumi:"image"`
	RuntimeClasses pulumi.StringArrayOutput `pulumi:"runtimeClasses"`

	// Ready are the registered objects: what waits for Kata depends on them,
	// not on the component, whose expansion into children races with their
	// registration in the Go SDK.
	Ready []pulumi.Resource
}

// NewInstall registers kata-deploy and the Kata RuntimeClasses. The kubernetes
// provider of the target cluster must come in through opts.
func NewInstall(ctx *pulumi.Context, name string, args *gcpinputs.KataArgs, opts ...pulumi.ResourceOption) (*Install, error) {
	k := &Install{}
	if err := ctx.RegisterComponentResource("paddock:gcp:Kata", name, k, opts...); err != nil {
		return nil, err
	}
	if len(args.Scheduling.NodeSelector) == 0 {
		return nil, fmt.Errorf("kata %s: no scheduling onto a KVM pool: kata-deploy would run on every node", name)
	}
	var deps []pulumi.Resource
	for _, obj := range Objects(*args) {
		opts := []pulumi.ResourceOption{pulumi.Parent(k)}
		if _, isDS := obj.(*appsv1.DaemonSet); isDS {
			opts = append(opts, pulumi.DependsOn(deps))
		}
		r, err := k8sres.Register(ctx, obj, opts...)
		if err != nil {
			return nil, err
		}
		deps = append(deps, r)
	}
	k.Ready = deps
	image := ImageOf(*args)
	var names pulumi.StringArray
	if !args.ExternalRuntimeClasses {
		for _, rc := range args.KataRuntimeClasses() {
			names = append(names, pulumi.String(rc.Name))
		}
	}
	k.Version = pulumi.String(Version).ToStringOutput()
	k.Image = pulumi.String(image).ToStringOutput()
	k.RuntimeClasses = names.ToStringArrayOutput()
	return k, ctx.RegisterResourceOutputs(k, pulumi.Map{"version": k.Version, "image": k.Image, "runtimeClasses": k.RuntimeClasses})
}
