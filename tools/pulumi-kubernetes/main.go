// Command pulumi-resource-kubernetes serves the upstream Kubernetes provider.
// Upstream's own main embeds a generated schema the module does not ship, so the
// Makefile copies schema.json and terraform-mapping.json out of the pinned module
// next to this file before building.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema.json
var schema []byte

//go:embed terraform-mapping.json
var mapping []byte

func main() { provider.Serve("kubernetes", version.Version, schema, mapping) }
