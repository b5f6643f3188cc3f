runtime_class "gvisor" {
  handler = "runsc"
}

runtime_class "kata" {
  handler       = "kata"
  node_selector = { "katacontainers.io/kata-runtime" = "true" }
}
