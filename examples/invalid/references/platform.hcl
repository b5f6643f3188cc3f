# Broken references and values Kubernetes would reject. All of them are
# reported in one run.
platform {
  name = "References"
}

target "local" {}

agent_sandbox {
  version = "0.5.6"
}

runtime_class "gvisor" {
  handler = "runsc"
  toleration {
    key      = "sandbox.gke.io/runtime"
    operator = "Exists"
    value    = "gvisor"
    effect   = "NoSchedul"
  }
}

tenant "team-a" {
  template "python" {
    image         = "python:3.12-slim"
    runtime_class = "gvsor"
    run_as_user   = 0
    resources {
      requests = { cpu = "2", memory = "1 Gi" }
      limits   = { cpu = "1" }
    }
  }

  warm_pool "python" {
    template = "pyton"
    replicas = 500
  }

  warm_pool "node" {
    template = "node"
  }
}

tenant "team-b" {
  namespace = "agents-team-a"

  template "node" {
    image = "node:22-slim"
  }
}

waiver {
  rule    = "PDK-001"
  expires = "31/12/2026"
}
