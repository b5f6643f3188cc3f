locals {
  # Every team runs the same reviewed agent runtime image.
  agent_image = "us-docker.pkg.dev/paddock-example-prod/agents/runtime:1.4.2"
}

# One tenant per entry of var.teams, named by its key (each.key).
tenant "team" {
  for_each = var.teams

  namespace = "agents-${each.key}"

  # The orchestrator (never the sandboxes) reads task inputs from Cloud
  # Storage: Paddock creates a Google service account with exactly this role,
  # lets only agents-<team>/agent-orchestrator impersonate it through GKE
  # Workload Identity, and annotates that Kubernetes service account. No key
  # file exists anywhere.
  identity {
    workload_identity "orchestrator" {
      roles = ["roles/storage.objectViewer"]
    }
  }

  egress {
    dns   = true
    fqdns = each.value.fqdns
  }

  template "agent" {
    image         = local.agent_image
    runtime_class = "gvisor"

    resources {
      requests = { cpu = "500m", memory = "1Gi", ephemeral_storage = "1Gi" }
      limits   = { cpu = "2", memory = "2Gi", ephemeral_storage = "4Gi" }
    }

    # The agent's working directory: gone with the pod.
    workspace {
      kind = "ephemeral"
      size = "5Gi"
    }

    # Fails closed: no Secret, no sandbox.
    secret_env "LLM_API_KEY" {
      secret = var.llm_secret
      key    = "api-key"
    }
  }

  warm_pool "agent" {
    template = "agent"
    replicas = each.value.replicas
  }
}
