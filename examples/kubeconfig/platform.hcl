# An existing cluster, reached through a kubeconfig, that already runs gVisor
# on a dedicated, tainted node pool. Paddock installs the Agent Sandbox
# controller and the tenants; it does not manage the cluster itself.
#
#   paddock validate examples/kubeconfig --var context=staging

variable "context" {
  type        = string
  default     = "staging"
  description = "The kubeconfig context of the cluster."
}

variable "squads" {
  type        = set(string)
  default     = ["checkout", "search"]
  description = "One tenant per squad."
}

platform {
  name = "agents-staging"
}

target "kubeconfig" {
  context = var.context
  # The cluster runs Cilium, so host-name allow-lists (fqdns) are enforced as
  # CiliumNetworkPolicies. Without an FQDN-aware CNI Paddock refuses fqdns.
  fqdn_policy = "cilium"
}

agent_sandbox {
  version = "v0.5.6"
  # A mirror of the release image, pinned to the same tag.
  image = "registry.example.com/mirror/agent-sandbox-controller:v0.5.6"
}

runtime_class "gvisor" {
  handler = "runsc"

  node_selector = {
    "example.com/pool" = "sandboxes"
  }

  toleration {
    key    = "example.com/pool"
    value  = "sandboxes"
    effect = "NoSchedule"
  }
}

tenant "squad" {
  for_each = var.squads

  identity {
    orchestrator = true

    # The in-pod tool gateway authenticates to the API server with a
    # projected token only it accepts, valid for one hour.
    tool_gateway_token {
      audience   = "tool-gateway"
      expiration = "1h"
    }
  }

  egress {
    # The public package index holds no credential of the squad's: reached
    # directly, by name (Cilium's FQDN policy), not through the gateway.
    fqdns = ["pypi.org", "files.pythonhosted.org"]

    # The squad's internal Git mirror.
    allow {
      cidr  = "10.40.12.0/24"
      ports = [443, 22]
    }
  }

  template "agent" {
    image         = "registry.example.com/agents/runtime:2.3.0"
    runtime_class = "gvisor"

    workspace {
      kind = "ephemeral"
    }
  }

  # The LLM key never enters a sandbox: the egress gateway holds it, injects
  # it into every request to the provider, and is the sandboxes' only route
  # there (http://egress-gateway.<namespace>.svc.cluster.local:8080).
  egress_gateway {
    image = "registry.example.com/platform/paddock-gateway@sha256:4b1c1e7a5f3c6f0d9e2a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e"

    destination "api.example-llm-provider.com" {
      credential {
        secret = "llm-credentials"
        key    = "api-key"
      }
    }

    budgets {
      requests_per_minute = 120
      bytes_per_minute    = "64Mi"
      max_response_size   = "32Mi"
    }
  }

  warm_pool "agent" {
    template = "agent"
  }
}

audit_sink "siem" {
  kind        = "pubsub"
  destination = "projects/example-security/topics/k8s-audit"
  filters     = ["sandbox_lifecycle", "pod_logs", "network_drops", "admission"]
}
