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
  rule    = "PDK-002"
  reason  = "Team B's pool is deliberately small during the pilot."
  expires = "2026-12-31"
}
