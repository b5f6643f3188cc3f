# One spec, many teams: each team's Pulumi stack (stacks/Pulumi.<team>.yaml at
# the repository root) provisions its own platform from this spec, with its
# own variables. Run it with a standard Pulumi install or with Paddock; both
# read the same stack file and run the same program:
#
#   pulumi up --stack team-a         # Pulumi.yaml: runtime go, main ./cmd/paddock-pulumi
#   paddock up --stack team-a        # the same stack, the same program, inline
#
# A sensitive variable is set as a Pulumi config secret, never in a file in
# plain text, and stays encrypted in the state:
#
#   pulumi config set --stack team-a --secret --path 'paddock:secretVars.telemetry_url' 'https://...'

variable "platform_name" {
  type        = string
  default     = "team-platform"
  description = "The platform's name: labels every object, names the default stack."
}

variable "tenants" {
  type = map(object({
    replicas = optional(number, 1)
  }))
  default     = { "agents" = {} }
  description = "One tenant (trust boundary) per key, with the size of its warm pool."
}

# The default is the busybox image the local stack's node builds and imports
# (nothing there can pull from a registry); a stack on a real cluster sets its
# agent runtime image (stacks/Pulumi.team-b.yaml).
variable "image" {
  type        = string
  default     = "localhost/paddock/busybox:v1"
  description = "The agent runtime image every template runs."
}

# A capability URL: whoever knows it can write to the team's telemetry
# stream, so it is sensitive (redacted from every report, a secret in the
# state). Credentials proper belong in a Secret of the tenant namespace, read
# with secret_env.
variable "telemetry_url" {
  type        = string
  default     = ""
  sensitive   = true
  description = "The team's OTLP ingest URL (it embeds the ingest key); empty for none."
}

platform {
  name = var.platform_name
}

target "local" {}

agent_sandbox {
  version = "v0.5.6"
}

runtime_class "gvisor" {
  handler = "runsc"

  node_selector = {
    "sandbox.gke.io/runtime" = "gvisor"
  }

  toleration {
    key    = "sandbox.gke.io/runtime"
    value  = "gvisor"
    effect = "NoSchedule"
  }
}

tenant "team" {
  for_each = var.tenants

  # Everything leaves through the egress proxy.
  egress {
    dns = true

    proxy {
      url        = "http://squid.egress-proxy.svc.cluster.local:3128"
      namespace  = "egress-proxy"
      pod_labels = { "app.kubernetes.io/name" = "squid" }
    }
  }

  template "python" {
    image         = var.image
    command       = ["sleep", "infinity"]
    runtime_class = "gvisor"
    env           = var.telemetry_url == "" ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT = var.telemetry_url }
  }

  warm_pool "python" {
    template = "python"
    replicas = each.value.replicas
  }
}

waiver {
  rule   = "PDK-603"
  reason = "The example platform runs on the throwaway local cluster and holds no real data; real targets ship audit records to an audit_sink."
}
