# GCP rule fixture: GCP-007, dedicated = false on a gVisor pool (GKE taints it anyway).
platform {
  name = "gcp-fixture"
}

target "gke" {
  project  = "fixture-project"
  location = "europe-west4"
}

agent_sandbox {
  version = "v0.5.6"
}

node_pool "sandboxes" {
  isolation = "gvisor"
  dedicated = false
}
