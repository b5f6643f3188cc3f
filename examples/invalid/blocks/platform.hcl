# Broken on purpose: mistakes in the blocks of a GKE platform.

platform {
  name = "blocks"
}

target "gke" {
  project = "My Project"
}

cluster {
  release_channel = "regualr"
}

node_pool "kata" {
  isolation    = "kvm"
  machine_type = "N2-standard-4"
}

agent_sandbox {
  version = "v0.5.6"
  digest  = "sha256:1234"
}

runtime_class "gvisor" {
  handler   = "gvisor"
  node_pool = "kata"
}

runtime_class "kata" {
  handler   = "kata-qemu"
  node_pool = "kat"
}

tenant "team-a" {
  egress {
    fqdns = ["https://api.example.com/v1"]

    allow {
      cidr = "10.0.0.0/8"
    }

    proxy {
      url = "http://squid:3128"
    }
  }

  claims {
    ttl = "10 min"
  }

  identity {
    workload_identity "orchestrator" {
      roles = ["roles/editor"]
    }

    workload_identity "agent-runtime" {
      roles = ["storage.objectViewer"]
    }
  }

  template "agent" {
    image           = "python:3.12-slim"
    runtime_class   = "gvisor"
    seccomp_profile = "runtime/default"

    workspace {
      size = "10Gi"
    }

    secret_env "llm-key" {
      secret = "llm-credentials"
      key    = "api-key"
    }
  }

  warm_pool "agent" {
    template        = "agent"
    update_strategy = "RollingUpdate"
  }
}

audit_sink "archive" {
  kind        = "storage"
  destination = "my-audit-bucket"
}

waiver {
  rule   = "PDK-306"
  reason = "The framework writes to /usr/lib."
  scope  = "tenant/team-a"
}
