package main

import (
	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/schemas"
)

// newSchemaCmd is `paddock schema`: the JSON Schema of the spec language.
func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the spec language, for editors",
		Long: `Schema prints a JSON Schema (draft 2020-12) of the spec language: every block and
argument with its description, allowed values and default. It describes specs in
HCL's JSON syntax (*.hcl.json) and feeds editor completion and hover help.`,
		Example: `  paddock schema > paddock.schema.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := schemas.JSONSchema(func(id string) (string, bool) {
				if r, ok := policy.Lookup(id); ok {
					return r.Title, true
				}
				return "", false
			})
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(append(b, '\n'))
			return err
		},
	}
}
