// The warm-pool check (V07): ready sandboxes counted by verify itself, and
// stale ones found.

package verify

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/internal/pools"
)

// checkWarmPools counts each pool's ready sandboxes itself instead of trusting
// status.readyReplicas, which only the controller writes and which stays as it
// was when the controller dies. A sandbox counts when the pool owns it, it is
// not being deleted, its Ready condition is true and its pod exists and is
// Ready (the pod's status comes from the node, not the controller). A pool
// that holds unclaimed sandboxes built from an older template (pools.Classify)
// fails too, whatever its update strategy: under OnReplenish the result says
// which waiver keeps them.
func checkWarmPools(ctx context.Context, v *Verifier) []Result {
	var out []Result
	var rep *policy.Report // judged only for a pool that keeps stale sandboxes
	// A release whose pools do not report the generation their status
	// describes (v0.5.5) cannot be held to it.
	tracksGeneration := agentsandbox.ReportsPoolGeneration(v.p.AgentSandbox.Version)
	// A pod started under a runtime class recreated since is stale however
	// its labels read (pools.Classify); unreadable classes fail each pool.
	classes, classErr := pools.ReadRuntimeClasses(ctx, v.kube)
	for i := range v.p.Tenants {
		t := &v.p.Tenants[i]
		if len(t.WarmPools) == 0 {
			continue
		}
		sandboxes, sbErr := v.dyn.Resource(sandboxesGVR).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
		pods, podErr := v.kube.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{})
		claims, claimErr := v.dyn.Resource(claimsGVR).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
		for j := range t.WarmPools {
			wp := &t.WarmPools[j]
			subject := t.Namespace + "/" + wp.Name
			u, err := v.dyn.Resource(warmPoolsGVR).Namespace(t.Namespace).Get(ctx, wp.Name, metav1.GetOptions{})
			switch {
			case err != nil:
				out = append(out, fail(subject, "%v", err))
				continue
			case sbErr != nil:
				out = append(out, fail(subject, "listing sandboxes: %v", sbErr))
				continue
			case podErr != nil:
				out = append(out, fail(subject, "listing pods: %v", podErr))
				continue
			case claimErr != nil:
				out = append(out, fail(subject, "listing claims: %v", claimErr))
				continue
			case classErr != nil:
				out = append(out, fail(subject, "%v", classErr))
				continue
			}
			ref, _, _ := unstructured.NestedString(u.Object, "spec", "sandboxTemplateRef", "name")
			tpl, err := v.dyn.Resource(agentsandbox.SandboxTemplates).Namespace(t.Namespace).Get(ctx, ref, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				out = append(out, fail(subject, "reading its template %q: %v", ref, err))
				continue
			}
			if err != nil {
				tpl = nil // judged without: V09 reports the missing template
			}
			fresh := pools.Classify(u, tpl, sandboxes.Items, claims.Items, pods.Items, classes)
			var waiver *model.Waiver
			if fresh.Stale > 0 && fresh.UpdateStrategy != model.UpdateRecreate {
				if rep == nil {
					rep = policy.Check(v.p, time.Now())
				}
				waiver = policy.StaleSandboxWaiver(rep, t, wp)
			}
			out = append(out, warmPoolResult(subject, *wp, u, sandboxes.Items, pods.Items, &fresh, waiver, tracksGeneration))
		}
	}
	return out
}

// warmPoolResult judges one pool from its object, the namespace's sandboxes
// and its pods, and fresh, its sandboxes judged against its template;
// waiver is the one that lets it keep stale sandboxes, if any. The pool's
// status must be of its current generation when the release reports one
// (tracksGeneration).
func warmPoolResult(subject string, wp model.WarmPool, pool *unstructured.Unstructured, sandboxes []unstructured.Unstructured, pods []corev1.Pod, fresh *pools.Pool, waiver *model.Waiver, tracksGeneration bool) Result {
	if replicas, found, _ := unstructured.NestedInt64(pool.Object, "spec", "replicas"); found && int32(replicas) != wp.Replicas {
		return fail(subject, "spec.replicas is %d, the spec says %d", replicas, wp.Replicas)
	}
	observed, _, _ := unstructured.NestedInt64(pool.Object, "status", "observedGeneration")
	if tracksGeneration && observed < pool.GetGeneration() {
		return fail(subject, "the controller has not observed the pool's generation %d (status is of generation %d)", pool.GetGeneration(), observed)
	}
	if fresh != nil && fresh.Diverged > 0 {
		first := ""
		for _, s := range fresh.Sandboxes {
			if s.Diverged {
				first = s.Why
				break
			}
		}
		return fail(subject, "%d unclaimed sandbox(es) whose pods run other than the template says, where the controller cannot see it (it would hand them to the next claim): %s (%s); `paddock up` deletes them and the pool refills",
			fresh.Diverged, strings.Join(fresh.DivergedNames(), ", "), first)
	}
	if fresh != nil && fresh.Stale > 0 {
		first := ""
		for _, s := range fresh.Sandboxes {
			if s.State == pools.Stale {
				first = s.Why
				break
			}
		}
		why := fmt.Sprintf("update strategy %s: the controller has not replaced them", fresh.UpdateStrategy)
		if fresh.UpdateStrategy != model.UpdateRecreate {
			why = fmt.Sprintf("update strategy %s keeps them until claims take them", fresh.UpdateStrategy)
			if waiver != nil {
				why += " (waived: " + waiver.Reason + ")"
			}
		}
		return fail(subject, "%d unclaimed sandbox(es) built from an older template: %s (%s); %s",
			fresh.Stale, strings.Join(fresh.StaleNames(), ", "), first, why)
	}
	podReady := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				podReady[p.Name] = true
			}
		}
	}
	owned, ready := 0, 0
	for i := range sandboxes {
		sb := &sandboxes[i]
		if sb.GetDeletionTimestamp() != nil || !ownedBy(sb, "SandboxWarmPool", pool.GetName(), pool.GetUID()) {
			continue
		}
		owned++
		podName := sb.GetName()
		if n := sb.GetAnnotations()[sandboxPodNameAnnotation]; n != "" {
			podName = n
		}
		if pools.ConditionTrue(sb, "Ready") && podReady[podName] {
			ready++
		}
	}
	unjudged := ""
	if fresh != nil && fresh.Problem != "" {
		unjudged = "; not judged against the template: " + fresh.Problem
	}
	reported, _, _ := unstructured.NestedInt64(pool.Object, "status", "readyReplicas")
	if int32(ready) >= wp.Replicas {
		current := ""
		if fresh != nil && fresh.Problem == "" {
			current = ", all of the current template"
		}
		return pass(subject, "%d/%d sandboxes ready with a ready pod%s%s", ready, wp.Replicas, current, unjudged)
	}
	detail := ""
	if reported != int64(ready) {
		detail = fmt.Sprintf(" (its status says %d: the controller has not caught up)", reported)
	}
	return fail(subject, "%d/%d sandboxes ready with a ready pod, %d owned by the pool%s%s", ready, wp.Replicas, owned, detail, unjudged)
}

// sandboxPodNameAnnotation names the pod of a sandbox whose pod is not
// called after it (Agent Sandbox's agents.x-k8s.io/pod-name).
const sandboxPodNameAnnotation = "agents.x-k8s.io/pod-name"

func ownedBy(u *unstructured.Unstructured, kind, name string, uid types.UID) bool {
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == kind && o.Name == name && (uid == "" || o.UID == uid) {
			return true
		}
	}
	return false
}
