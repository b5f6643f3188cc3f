# The platform-wide blocks.
platform {
  name = "merged"
}

target "kubeconfig" {
  context = "staging"
}

agent_sandbox {
  version = "v0.5.6"
  image   = "mirror.example.com/agent-sandbox-controller:v0.5.6"
}
