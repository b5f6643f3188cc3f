package agentsandbox

import (
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extensionsv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// The Agent Sandbox resources Paddock installs, reads and probes, taken from
// the upstream API packages' group/version (the module Paddock pins), so no
// other package types a group, version or resource name by hand.
var (
	// Sandboxes are the core resource (agents.x-k8s.io).
	Sandboxes = sandboxv1beta1.GroupVersion.WithResource("sandboxes")
	// SandboxClaims, SandboxTemplates and SandboxWarmPools are the extensions
	// (extensions.agents.x-k8s.io).
	SandboxClaims    = extensionsv1beta1.GroupVersion.WithResource("sandboxclaims")
	SandboxTemplates = extensionsv1beta1.GroupVersion.WithResource("sandboxtemplates")
	SandboxWarmPools = extensionsv1beta1.GroupVersion.WithResource("sandboxwarmpools")
)

// CRDs are the names of the four CustomResourceDefinitions the release
// installs (core + extensions), in the order the controller needs them.
var CRDs = []string{
	Sandboxes.GroupResource().String(),
	SandboxClaims.GroupResource().String(),
	SandboxTemplates.GroupResource().String(),
	SandboxWarmPools.GroupResource().String(),
}

// PodName is the name of a Sandbox's pod: the controller's pod-name
// annotation when set (a sandbox that adopted a warm pod), else the
// sandbox's own name, as the controller itself resolves it.
func PodName(sandboxName string, annotations map[string]string) string {
	if n := annotations[sandboxv1beta1.SandboxPodNameAnnotation]; n != "" {
		return n
	}
	return sandboxName
}
