# GCP rule fixture: GCP-010, a KVM pool on E2, which has no nested virtualisation.
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
  machine_type = "e2-standard-8"
}
