# A GKE cluster Paddock creates, with a GKE Sandbox (gVisor) node pool that
# runs nothing but agent sandboxes.

platform {
  name = "agents-gvisor"
}

target "gke" {
  project  = var.project
  location = var.region
  # cluster_name = "agents-gvisor"   # default: the platform name
}

# Hardened defaults, spelled out: private nodes, an authorized-networks
# allow-list for the control plane, Dataplane V2 (which enforces
# NetworkPolicy) and Workload Identity (which hides node credentials).
cluster {
  release_channel     = "regular"
  private_nodes       = true
  authorized_networks = var.admin_networks
  dataplane_v2        = true
  workload_identity   = true

  # The tenants' egress fqdns are enforced by GKE FQDN network policy. On
  # purpose, not derived from the tenants: turning it off later replaces the
  # whole cluster, which Paddock refuses unless allow_replacement = true.
  fqdn_network_policy = true
}

# GKE Sandbox: every node runs gVisor, and GKE labels and taints the nodes
# sandbox.gke.io/runtime=gvisor so nothing else lands on them.
node_pool "sandboxes" {
  isolation    = "gvisor"
  machine_type = "e2-standard-8"

  autoscaling {
    min = 1
    max = 10
  }
}

agent_sandbox {
  version = "v0.5.6"
}

# GKE Sandbox installs the handler "gvisor". node_pool derives the node
# selector and toleration from the pool, so sandboxes land on its nodes only.
runtime_class "gvisor" {
  handler   = "gvisor"
  node_pool = "sandboxes"
}
