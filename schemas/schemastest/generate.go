// Package schemastest holds helpers for tests and benchmarks of packages
// that load specs.
package schemastest

import (
	"fmt"
	"strings"
)

// GenerateSpec returns a realistic spec of about lines lines: the platform
// blocks, then as many tenants as fit, each with a quota, egress, claims, a
// template (resources, workspace, secret env) and a warm pool.
func GenerateSpec(lines int) string {
	var b strings.Builder
	b.WriteString(`variable "image" {
  type    = string
  default = "registry.example.com/agents/runtime:1.4.2"
}

locals {
  llm_host = "api.example-llm-provider.com"
}

platform {
  name = "bench"
}

target "local" {}

agent_sandbox {
  version = "v0.5.6"
}

runtime_class "gvisor" {
  handler = "runsc"
  node_selector = {
    "sandbox.gke.io/runtime" = "gvisor"
  }
  toleration {
    key    = "sandbox.gke.io/runtime"
    value  = "gvisor"
    effect = "NoSchedule"
  }
}

audit_sink "audit" {
  kind        = "pubsub"
  destination = "projects/bench-project/topics/audit"
}
`)
	for i := 0; strings.Count(b.String(), "\n") < lines-45; i++ {
		fmt.Fprintf(&b, `
tenant "team-%04d" {
  quota {
    pods   = 30
    cpu    = "16"
    memory = "32Gi"
  }
  egress {
    dns   = true
    fqdns = [local.llm_host, "git.example.com"]
    allow {
      cidr  = "10.%d.%d.0/24"
      ports = [443, 22]
    }
  }
  claims {
    ttl     = "15m"
    max_ttl = "6h"
  }
  template "agent" {
    image         = var.image
    command       = ["/usr/local/bin/agent", "serve"]
    runtime_class = "gvisor"
    resources {
      requests = { cpu = "500m", memory = "1Gi", ephemeral_storage = "1Gi" }
      limits   = { cpu = "2", memory = "2Gi", ephemeral_storage = "4Gi" }
    }
    workspace {
      kind = "ephemeral"
      size = "5Gi"
    }
    env = {
      AGENT_TEAM = "team-%04d"
    }
    secret_env "LLM_API_KEY" {
      secret = "llm-credentials"
      key    = "api-key"
    }
  }
  warm_pool "agent" {
    template = "agent"
    replicas = 2
  }
}
`, i, (i/250)%250, i%250, i)
	}
	return b.String()
}
