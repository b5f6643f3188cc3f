# GCP rule fixture: GCP-005, a workload identity on a cluster without Workload Identity.
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
  workload_identity = false
}

tenant "research" {
  identity {
    workload_identity "orchestrator" {
      roles = ["roles/storage.objectViewer"]
    }
  }
}
