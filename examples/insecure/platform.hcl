# DELIBERATELY INSECURE. Never provision this spec.
#
# It loosens every control Paddock checks from a spec, so that every static
# policy rule fires at least once (policy tests assert it): each argument that
# trips a rule is marked with the rule's ID. It also shows what `paddock
# validate` reports:
#
#   paddock validate examples/insecure
#
# Two rules cannot fire from any spec: PDK-107 (two tenants in one namespace)
# and PDK-405 (a warm pool of another tenant's template). The spec language
# refuses both (see examples/invalid/references).

platform {
  name = "insecure"
}

target "gke" {
  project  = "insecure-demo-project"
  location = "europe-west1"
}

cluster {
  private_nodes       = false         # PDK-702 (waived below, expiring soon: PDK-004)
  authorized_networks = ["0.0.0.0/1"] # PDK-703 (0.0.0.0/0 itself the GCP layer refuses: GCP-003)
  dataplane_v2        = false         # PDK-704
  workload_identity   = false         # PDK-705
}

node_pool "shared" {
  isolation = "kvm"
  dedicated = false # PDK-701
}

agent_sandbox {
  version = "v0.5.6"
  image   = "registry.k8s.io/agent-sandbox/agent-sandbox-controller:latest" # PDK-401, PDK-402
}

# PDK-302 (runc is no sandbox), PDK-106 (no node selector or toleration),
# PDK-309 (no node pool provides it).
runtime_class "runc" {
  handler = "runc"
}

tenant "team-a" {
  namespace    = "default"  # PDK-102
  pod_security = "baseline" # PDK-101

  quota {
    enabled = false # PDK-103
  }

  limit_range {
    enabled = false # PDK-105
  }

  identity {
    orchestrator = false # PDK-202

    # PDK-207: the sandboxes' own identity gets cloud roles. (And since the
    # cluster turns Workload Identity off, the GCP layer refuses it: GCP-005.)
    workload_identity "agent" {
      roles = ["roles/storage.admin"]
    }

    tool_gateway_token {
      expiration = "12h" # PDK-602
    }
  }

  egress {
    # PDK-501. Without a policy of Paddock's, the Agent Sandbox controller
    # gives the sandboxes its own default: the public internet on every port
    # (PDK-502, PDK-504, PDK-505 point here too).
    default_deny = false
  }

  claims {
    ttl             = "none"   # PDK-406
    max_ttl         = "none"   # PDK-406
    shutdown_policy = "Retain" # PDK-407
  }

  # No runtime_class: PDK-301.
  template "python" {
    image = "python" # PDK-404

    run_as_user                = 0
    run_as_non_root            = false                      # PDK-303
    seccomp_profile            = "Unconfined"               # PDK-304
    allow_privilege_escalation = true                       # PDK-305
    privileged                 = true                       # PDK-305
    read_only_root             = false                      # PDK-306 (its waiver below has expired: PDK-001)
    add_capabilities           = ["SYS_ADMIN", "NET_ADMIN"] # PDK-307
    automount_token            = true                       # PDK-201

    resources {
      unbounded = ["cpu", "memory", "ephemeral_storage"] # PDK-308
    }

    env = {
      OPENAI_API_KEY = "sk-not-a-real-key-just-an-example" # PDK-203
    }

    secret_env "KUBECONFIG" { # PDK-204
      secret = "admin-kubeconfig"
      key    = "config"
    }

    secret_env "LLM_API_KEY" {
      secret   = "llm-credentials"
      key      = "api-key"
      optional = true # PDK-601
    }
  }

  template "shell" {
    image         = "busybox:1.36"
    runtime_class = "runc"
  }
}

# A customer's name the team must not disclose: sensitive, so every report
# redacts it. But a namespace named after it shows in every `kubectl get
# namespaces`, event and audit record, where nothing redacts it.
variable "customer" {
  type      = string
  default   = "initech"
  sensitive = true
}

tenant "team-b" {
  namespace = "team-b-${var.customer}" # PDK-610 (no waiver can silence it)

  quota {
    pods = 1 # PDK-104: the pool below needs 5
  }

  egress {
    # PDK-502 (port 80), PDK-503 (metadata address), PDK-504 (whole
    # internet), PDK-505 (DNS to an outside resolver).
    allow {
      cidr  = "0.0.0.0/0"
      ports = [80, 443, 53]
    }

    # PDK-502, PDK-503: a proxy "outside the cluster" at the metadata address.
    proxy {
      url  = "http://169.254.169.254:80"
      cidr = "169.254.169.254/32"
    }
  }

  # PDK-507: the allow above reaches api.anthropic.com on 443 directly.
  egress_gateway {
    image = "registry.example.com/paddock-gateway@sha256:0000000000000000000000000000000000000000000000000000000000000000"

    destination "api.anthropic.com" {
      credential {
        secret = "anthropic-key"
        header = "x-api-key"
      }
    }
  }

  template "shell" {
    image         = "busybox:1.36"
    runtime_class = "runc"

    secret_env "ANTHROPIC_API_KEY" { # PDK-611: the gateway's own credential
      secret = "anthropic-key"
      key    = "key"
    }

    secret_env "GITHUB_TOKEN" { # PDK-612: a key the gateway could hold
      secret = "github-token"
      key    = "token"
    }
  }

  warm_pool "shell" {
    template        = "shell"
    replicas        = 5
    update_strategy = "OnReplenish" # PDK-410: stale sandboxes stay in the pool
  }
}

audit_sink "everything" {
  kind             = "bigquery"
  destination      = "insecure-demo-project.audit"
  filters          = ["admission"] # PDK-603 (no sandbox_lifecycle), PDK-604 (no network_drops), PDK-606 (no pod_logs)
  include_payloads = true          # PDK-605
}

waiver {
  rule    = "PDK-306"
  reason  = "The agent framework writes to /usr/lib at start-up."
  expires = "2020-01-31" # PDK-001: expired, so PDK-306 still fires
}

waiver {
  rule   = "PDK-3O6" # PDK-002: a letter O, not a zero
  reason = "Typo in the rule ID."
}

waiver {
  rule   = "PDK-506" # PDK-002: verified live, nothing to waive in a spec
  reason = "We trust the CNI."
}

waiver {
  rule   = "PDK-307"
  scope  = "tenant.team-c" # PDK-003: no such object, the waiver silences nothing
  reason = "Team C needs NET_ADMIN."
}

waiver {
  rule    = "PDK-702"
  reason  = "Public nodes until Cloud NAT is set up."
  expires = "2026-12-10" # PDK-004 in the tests, which check as of 2026-12-01
}
