# GCP rule fixture: GCP-003, the control plane open to every address.
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

cluster {
  authorized_networks = ["0.0.0.0/0"]
}
