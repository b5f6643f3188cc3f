// Package pins exposes the pinned upstream versions of versions.env to Go code,
// so the Makefile, the tools modules and the paddock binary share one source.
package pins

import (
	_ "embed"
	"strings"
)

//go:embed versions.env
var versionsEnv string

var values = parse(versionsEnv)

func parse(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// Get returns a pinned value by its versions.env key ("" if absent).
func Get(key string) string { return values[key] }

// All returns a copy of every pinned value.
func All() map[string]string {
	out := make(map[string]string, len(values))
	for k, v := range values {
		out[k] = v
	}
	return out
}

var (
	Pulumi            = values["PULUMI_VERSION"]
	PulumiKubernetes  = values["PULUMI_KUBERNETES_VERSION"]
	Kubernetes        = values["KUBERNETES_VERSION"]
	Etcd              = values["ETCD_VERSION"]
	Kwok              = values["KWOK_VERSION"]
	AgentSandbox      = values["AGENT_SANDBOX_VERSION"]
	AgentSandboxImage = values["AGENT_SANDBOX_IMAGE"]
	// AgentSandboxPrevious is the release before AgentSandbox, vendored beside it.
	AgentSandboxPrevious = values["AGENT_SANDBOX_PREVIOUS_VERSION"]
	Cilium               = values["CILIUM_VERSION"]
	CoreDNS              = values["COREDNS_VERSION"]
	PulumiGCP            = values["PULUMI_GCP_VERSION"]
	KataDeploy           = values["KATA_DEPLOY_VERSION"]
	KataDeployImage      = values["KATA_DEPLOY_IMAGE"]
	KataDeployDigest     = values["KATA_DEPLOY_DIGEST"]
	// SeaweedFS is the object store (weed's S3 gateway) the s3:// tests run.
	SeaweedFS = values["SEAWEEDFS_VERSION"]
	// Prometheus (module version) and KubeStateMetrics are what
	// `paddock local up --observability` runs.
	Prometheus       = values["PROMETHEUS_VERSION"]
	KubeStateMetrics = values["KUBE_STATE_METRICS_VERSION"]
)

// AgentSandboxImageOf is the controller image of an Agent Sandbox release when
// the spec names none: the pinned image repository, tagged with the release.
func AgentSandboxImageOf(version string) string { return AgentSandboxImage + ":" + version }

// AgentSandboxReleases are the Agent Sandbox releases Paddock vendors and a spec
// may name: the pinned one first, then the previous one.
func AgentSandboxReleases() []string {
	var out []string
	for _, v := range []string{AgentSandbox, AgentSandboxPrevious} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
