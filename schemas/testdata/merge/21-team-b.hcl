tenant "team-b" {
  namespace = "team-b-agents"

  template "node" {
    image         = "node:22-slim"
    runtime_class = "gvisor"
    resources {
      limits = { memory = "2Gi" }
    }
  }

  warm_pool "node" {
    template = "node"
  }
}

waiver {
  rule    = "PDK-603"
  reason  = "Staging ships audit through the cluster's own pipeline during the pilot."
  expires = "2026-12-31"
}
