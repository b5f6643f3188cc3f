package engine

import (
	"context"
	"fmt"
	"io"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/program"
)

// guardReplacements refuses, before anything runs, a change that makes GCP
// replace a GKE platform's cluster or one of its node pools unless the spec
// allows it (program.GuardReplacements: the stack's recorded inputs against
// the program's new ones, by the pinned provider's rules), and prints what
// the update cannot do by itself. Other targets have nothing to replace.
func guardReplacements(ctx context.Context, op string, p *model.Platform, export func(context.Context) (apitype.UntypedDeployment, error), out io.Writer) error {
	if p.Target.Kind != model.TargetGKE {
		return nil
	}
	state, err := export(ctx)
	if err != nil {
		return fmt.Errorf("%s: reading the stack's state to check for replacements: %w", op, err)
	}
	notices, err := program.GuardReplacements(p, state)
	for _, n := range notices {
		fmt.Fprintf(out, "paddock: note: %s\n", n)
	}
	if err != nil {
		return fmt.Errorf("%s refused, nothing was changed: %w", op, err)
	}
	return nil
}
