# GCP rule fixture: GCP-001, the cluster name defaults to a platform name longer than GKE allows (40).
platform {
  name = "a-platform-name-that-is-far-too-long-for-gke-1"
}

target "gke" {
  project  = "fixture-project"
  location = "europe-west4"
}

agent_sandbox {
  version = "v0.5.6"
}
