# Paddock walking skeleton: one hardened agent sandbox platform on the embedded
# local cluster.
#
#   paddock local up               # start the local cluster (a real node running gVisor where the machine allows)
#   paddock validate examples/local
#   paddock up examples/local      # provision this spec
#
# Every *.hcl file in this directory is part of the same spec, so a larger
# platform can be split by concern (runtimes.hcl, one file per tenant, ...).
# Anything left out takes Paddock's hardened default; the comments below say
# which. Loosening a default takes an explicit argument, which `paddock
# validate` reports as a policy finding.

# The platform's name labels every object Paddock creates
# (paddock.dev/platform=local-demo), so status, drift checks and teardown can
# find them. It must be a DNS label: lower case letters, digits and '-'.
platform {
  name = "local-demo"
}

# Where the in-cluster layer goes. "local" is the embedded cluster started by
# `paddock local up`. See examples/kubeconfig for an existing cluster and
# examples/gke-gvisor for a GKE cluster Paddock creates.
target "local" {}

# The Kubernetes Agent Sandbox controller (sigs.k8s.io/agent-sandbox) provides
# the Sandbox, SandboxTemplate, SandboxWarmPool and SandboxClaim resources.
# Always pin an exact release and read its notes before changing it. The
# controller image defaults to the pinned image of that release; set `image`
# only to pull it from a mirror (keep the same tag), and `digest` to pin it by
# content.
agent_sandbox {
  version = "v0.5.6"
}

# A runtime class gives sandboxes a kernel boundary of their own: with gVisor
# (handler "runsc") a container escape lands in a user-space kernel, not on the
# host. The handler must match the runtime name configured in containerd on
# the nodes.
#
# The node selector and toleration pin sandbox pods onto the node pool that
# actually has gVisor: nodes labelled sandbox.gke.io/runtime=gvisor and tainted
# sandbox.gke.io/runtime=gvisor:NoSchedule, so nothing else lands there by
# accident. These are the label and taint GKE Sandbox puts on its gVisor node
# pools; on another cluster, use whatever your gVisor nodes carry.
runtime_class "gvisor" {
  handler = "runsc"

  node_selector = {
    "sandbox.gke.io/runtime" = "gvisor"
  }

  toleration {
    key      = "sandbox.gke.io/runtime"
    operator = "Equal" # the default; "Exists" tolerates any value of the key
    value    = "gvisor"
    effect   = "NoSchedule"
  }
}

# A tenant is one trust boundary: its own namespace (Pod Security "restricted"),
# quota, identities, network posture, templates and warm pools. Give each team,
# or each product handling different data, a tenant of its own.
tenant "team-a" {
  # namespace = "agents-team-a"   # the default: "agents-<tenant name>"

  # Defaults, shown for reference:
  # quota {                       # the namespace's ResourceQuota
  #   pods = 20, cpu = "8", memory = "16Gi", ephemeral_storage = "20Gi", pvcs = 20, storage = "100Gi"
  # }
  # identity {
  #   orchestrator = true         # agent-orchestrator: may manage claims, read sandboxes, nothing else
  # }
  # egress {                      # ingress is always denied
  #   dns = true                  # the cluster resolver only; everything else is denied
  #   # fqdns = ["api.example-llm-provider.com"]
  # }
  # claims {
  #   ttl             = "10m"     # finished claims are reaped after 10 minutes
  #   max_ttl         = "4h"      # no session outlives 4 hours (claims must set spec.lifecycle.shutdownTime)
  #   shutdown_policy = "Delete"  # an expired claim deletes its sandbox
  # }

  # A template is a hardened SandboxTemplate: non-root, seccomp
  # RuntimeDefault, no privilege escalation, a read-only root filesystem,
  # every capability dropped and no service account token.
  template "agent" {
    # Stand-in workload: replace with your agent runtime image and entrypoint.
    # Nothing on the local stack can pull from a registry: its node builds
    # this busybox image from Debian's busybox-static and imports it, and
    # `paddock up` refuses an image the node does not have. The shell is
    # PID 1 here, and PID 1 ignores signals it does not handle, so the trap
    # lets the sandbox stop at once when it is deleted.
    image   = "localhost/paddock/busybox:v1"
    command = ["/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]

    # Run under gVisor (the runtime_class above). Leaving it out runs
    # generated code on the host kernel, which policy reports (PDK-301).
    runtime_class = "gvisor"

    # Defaults, shown for reference:
    # run_as_user = 10001     # any non-zero UID; root is never allowed
    # tmp_size    = "512Mi"   # size of the writable /tmp (the root is read-only)
    # resources {
    #   requests = { cpu = "250m", memory = "512Mi", ephemeral_storage = "1Gi" }
    #   limits   = { cpu = "1", memory = "1Gi", ephemeral_storage = "2Gi" }
    # }
  }

  # A warm pool keeps pre-created sandboxes of one template ready, so a session
  # starts in seconds. A claimed sandbox serves one session and is then
  # deleted, never returned; the pool refills with fresh ones. A pool only
  # serves its own tenant's template: pools never cross trust boundaries.
  warm_pool "agent" {
    template = "agent"
    replicas = 2 # default 1; at most 100
  }
}

# Every exception to a policy rule is written down, with its reason, and shows
# in every report. Run `paddock validate --rules` for the list of rules.
waiver {
  rule   = "PDK-603"
  reason = "The local demo cluster is throwaway and holds no real data or credentials; real targets ship audit records to an audit_sink."
}
