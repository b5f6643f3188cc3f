# GCP rule fixture: GCP-018, FQDN allow-lists on a cluster whose FQDN network
# policy is off (it is never turned on behind the spec's back: GKE replaces
# the cluster to turn it off again).
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
  authorized_networks = ["203.0.113.0/24"]
}

tenant "research" {
  egress {
    fqdns = ["api.example.com"]
  }
}
