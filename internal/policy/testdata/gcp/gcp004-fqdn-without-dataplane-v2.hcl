# GCP rule fixture: GCP-004, FQDN allow-lists on a cluster without Dataplane V2.
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
  dataplane_v2        = false
  fqdn_network_policy = true
}

tenant "research" {
  egress {
    fqdns = ["api.example.com"]
  }
}
