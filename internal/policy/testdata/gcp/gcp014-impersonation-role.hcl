# GCP rule fixture: GCP-014, a workload identity with a role that mints tokens for other accounts.
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

tenant "research" {
  identity {
    workload_identity "orchestrator" {
      roles = ["roles/iam.serviceAccountTokenCreator"]
    }
  }
}
