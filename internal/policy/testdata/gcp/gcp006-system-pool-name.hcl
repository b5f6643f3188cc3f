# GCP rule fixture: GCP-006, a node pool named like the system pool every cluster gets.
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

node_pool "system" {
  isolation = "gvisor"
}
