# GCP rule fixture: GCP-015, an audit bucket name Cloud Storage refuses.
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

audit_sink "archive" {
  kind        = "storage"
  destination = "gs://google-audit-archive"
}
