# Declares the platform, a runtime class and tenant "team-a"; b.hcl in the same
# directory declares them again.
platform {
  name = "duplicates"
}

target "local" {}

agent_sandbox {
  version = "v0.5.6"
}

runtime_class "gvisor" {
  handler = "runsc"
}

tenant "team-a" {
  template "python" {
    image = "python:3.12-slim"
  }
}
