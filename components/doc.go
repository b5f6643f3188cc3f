// Package components holds Paddock's Pulumi ComponentResources, one per concept
// (platform, Agent Sandbox release, runtime class, tenant, template, warm pool).
// Each reads the model, builds its objects with package manifests and registers them
// (through components/internal/k8sres) as real pulumi-kubernetes resources
// parented to itself. Providers are passed down from the caller; components never
// read HCL, the CLI or the engine.
package components
