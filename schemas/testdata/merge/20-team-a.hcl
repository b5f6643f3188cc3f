# Team A uses a runtime class declared in another file.
tenant "team-a" {
  template "python" {
    image         = "python:3.12-slim"
    runtime_class = "kata"
  }
}
