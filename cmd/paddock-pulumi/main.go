// Command paddock-pulumi is the Pulumi program of a platform repository: the
// `main` of its Pulumi.yaml (runtime: go), so that `pulumi preview` and
// `pulumi up --stack team-a` with a standard Pulumi install provision the
// spec the stack's config names (stacks/Pulumi.team-a.yaml: paddock:spec,
// paddock:vars, paddock:secretVars, paddock:target). The spec is loaded and
// gated by the hardening policy exactly as `paddock up --stack team-a` does,
// which runs this same program (project.Program) inline.
package main

import (
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/project"
)

func main() {
	pulumi.Run(project.Program(os.Stderr))
}
