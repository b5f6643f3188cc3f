# Every spec file in a directory is part of one spec, so these clash with a.hcl.
platform {
  name = "duplicates-again"
}

runtime_class "gvisor" {
  handler = "runsc"
}

tenant "team-a" {
  template "python" {
    image = "python:3.12-slim"
  }
  template "python" {
    image = "python:3.13-slim"
  }
}
