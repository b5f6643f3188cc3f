# A GKE cluster Paddock creates, whose sandboxes run in Kata Containers: each
# pod is a lightweight VM with its own guest kernel. Kata needs KVM, so the
# node pool uses a machine series with nested virtualization; Paddock labels
# and taints it paddock.dev/isolation=kvm so only sandboxes land there.

variable "project" {
  type    = string
  default = "paddock-example-kata"
}

platform {
  name = "agents-kata"
}

target "gke" {
  project      = var.project
  location     = "europe-west4-a" # a zonal cluster
  cluster_name = "agents-kata"
}

cluster {
  release_channel     = "stable"
  authorized_networks = ["198.51.100.0/24"]
}

node_pool "kata" {
  isolation    = "kvm"
  machine_type = "n2-standard-8"

  autoscaling {
    min = 1
    max = 6
  }

  labels = {
    "example.com/team" = "platform"
  }
}

agent_sandbox {
  version = "v0.5.6"
}

# kata-deploy (pinned, installed by Paddock on the KVM pool) puts the
# "kata-qemu" handler on the KVM nodes. Each sandbox's VM is counted in
# scheduling and quota: the pod overhead defaults to 250m CPU and 320Mi memory
# for QEMU (Paddock's conservative figure; kata-deploy 3.20.0 ships 160Mi); set
# overhead = { cpu, memory } to change it.
runtime_class "kata" {
  handler   = "kata-qemu"
  node_pool = "kata"
}

tenant "builds" {
  # Builds are heavy: a bigger fleet than the default pilot quota.
  quota {
    pods              = 40
    cpu               = "64"
    memory            = "128Gi"
    ephemeral_storage = "200Gi"
    pvcs              = 40
    storage           = "400Gi"
  }

  # Everything leaves through the egress proxy, which checks the final
  # destination and holds the real provider credentials.
  egress {
    dns = true

    proxy {
      url        = "http://squid.egress-proxy.svc.cluster.local:3128"
      namespace  = "egress-proxy"
      pod_labels = { "app.kubernetes.io/name" = "squid" }
    }
  }

  claims {
    ttl     = "5m"
    max_ttl = "8h"
  }

  template "builder" {
    image         = "us-docker.pkg.dev/paddock-example-kata/agents/builder:3.1.0"
    command       = ["/usr/local/bin/agent", "serve"]
    runtime_class = "kata"

    resources {
      requests = { cpu = "2", memory = "4Gi", ephemeral_storage = "2Gi" }
      limits   = { cpu = "4", memory = "8Gi", ephemeral_storage = "8Gi" }
    }

    # A volume per sandbox: survives a pod restart, deleted with the sandbox.
    workspace {
      kind          = "persistent"
      size          = "20Gi"
      storage_class = "premium-rwo"
    }

    env = {
      BUILD_CACHE_DIR = "/workspace/.cache"
    }
  }

  warm_pool "builder" {
    template = "builder"
    replicas = 3
  }
}

audit_sink "archive" {
  kind        = "storage"
  destination = "gs://paddock-example-kata-audit"
}
