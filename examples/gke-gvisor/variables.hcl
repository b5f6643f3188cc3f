# Inputs of the spec. Values come, in rising precedence, from the defaults
# here, PADDOCK_VAR_<name> environment variables, *.auto.pvars.hcl files next
# to the spec (example.auto.pvars.hcl), --var-file files and --var options.

variable "project" {
  type        = string
  description = "The Google Cloud project the cluster lives in."

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.project))
    error_message = "project must be a Google Cloud project ID such as \"my-agents-prod\"."
  }
}

variable "region" {
  type        = string
  default     = "europe-west1"
  description = "Region of the (regional) GKE cluster."
}

variable "admin_networks" {
  type        = list(string)
  default     = ["203.0.113.0/24"]
  description = "Networks allowed to reach the Kubernetes API: your office and CI runners."
}

# One tenant per team. Each gets its own namespace, quota, identities, egress
# allow-list and warm pool.
variable "teams" {
  type = map(object({
    replicas = optional(number, 1)
    fqdns    = optional(list(string), [])
  }))
  default = {
    "research" = { replicas = 2, fqdns = ["api.example-llm-provider.com"] }
    "support"  = { fqdns = ["api.example-llm-provider.com", "tickets.example.com"] }
  }
}

variable "llm_secret" {
  type        = string
  default     = "llm-credentials"
  description = "Name of the Secret (in each tenant namespace) that holds the LLM key."
}
