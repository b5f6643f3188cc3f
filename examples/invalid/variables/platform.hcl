# Broken on purpose: mistakes with variables, locals, for_each and functions.

variable "region" {
  type = strng
}

variable "replicas" {
  type    = number
  default = "two"
}

variable "project" {
  type    = string
  default = "Not A Project"

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]+$", var.project))
    error_message = "project must be a Google Cloud project ID."
  }
}

variable "teams" {
  default = ["alpha", "Beta_Team"]
}

locals {
  prefix = local.suffix
  suffix = local.prefix
  image  = "python:3.12-slim"
}

platform {
  name = var.platfrom_name
}

target "local" {}

agent_sandbox {
  version = fromat("v%d.%d.%d", 0, 5, 6)
}

tenant "team" {
  for_each = var.teams

  template "agent" {
    image = local.imgae
  }
}

tenant "solo" {
  namespace = "agents-${each.key}"
}
