# GCP rule fixture: GCP-016, network drops logged on a cluster without Dataplane V2.
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
  dataplane_v2 = false
}

audit_sink "drops" {
  kind        = "pubsub"
  destination = "projects/fixture-project/topics/drops"
  filters     = ["network_drops"]
}
