# GCP rule fixture: GCP-013, a Kata runtime class for a shim kata-deploy does not install.
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
  isolation = "kvm"
}

runtime_class "firecracker" {
  handler   = "kata-fc"
  node_pool = "vm"
}
