# A GKE platform whose agents themselves call a cloud API: the agent runtime
# identity gets a workload identity (a waived PDK-207), so its sandboxes get
# exactly one more egress hole, TCP 80 to the GKE metadata server.

platform {
  name = "agents-vertex"
}

target "gke" {
  project  = "paddock-example-ai"
  location = "us-central1"
}

cluster {
  authorized_networks = ["192.0.2.0/24"]
}

node_pool "sandboxes" {
  isolation = "gvisor"
}

agent_sandbox {
  version = "v0.5.6"
}

runtime_class "gvisor" {
  handler   = "gvisor"
  node_pool = "sandboxes"
}

tenant "ml" {
  identity {
    workload_identity "agent" {
      roles = ["roles/aiplatform.user"]
    }
  }

  template "agent" {
    image         = "us-docker.pkg.dev/paddock-example-ai/agents/runtime:2.0.1"
    runtime_class = "gvisor"
  }
}

audit_sink "stream" {
  kind        = "pubsub"
  destination = "projects/paddock-example-ai/topics/agent-audit"
}

waiver {
  rule   = "PDK-207"
  scope  = "tenant.ml"
  reason = "The agent calls Vertex AI with its own identity; the role is the only one it holds."
}
