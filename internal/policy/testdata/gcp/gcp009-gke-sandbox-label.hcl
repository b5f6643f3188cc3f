# GCP rule fixture: GCP-009, a pool that sets GKE Sandbox's own label.
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

node_pool "vm" {
  isolation    = "kvm"
  machine_type = "n2-standard-4"
  labels = {
    "sandbox.gke.io/runtime" = "gvisor"
  }
}
