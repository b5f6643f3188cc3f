# Misspellings. Each one is reported with where it is and a "Did you mean".
platform {
  nmae = "typos"
}

target "kubeconfg" {}

agent_sandbox {
  version = "v0.5.6"
}

runtime_class "gvisor" {
  handler = "runsc"
  tolleration {
    key    = "sandbox.gke.io/runtime"
    value  = "gvisor"
    effect = "NoSchedule"
  }
}

tenent "team-a" {
}

tenant "team-b" {
  template "python" {
    image         = "python:3.12-slim"
    runtime_class = "gvisor"
    resources {
      requests = { cpu = "250m", memroy = "512Mi" }
    }
  }
}
