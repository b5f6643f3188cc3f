package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/internal/render"
)

func newRenderCmd() *cobra.Command {
	var (
		f              specFlags
		out            string
		allowSensitive bool
	)
	cmd := &cobra.Command{
		Use:   "render [SPEC]",
		Short: "Write the platform's objects as plain YAML for GitOps (the same objects `up` applies)",
		Long: "Without --out the objects go to stdout as one YAML stream. With --out DIR, one file per\n" +
			"concept plus a kustomization.yaml are written into DIR. No cluster is contacted.\n\n" +
			"With --out, unless the target is GKE (whose Cloud Audit Logs record changes), DIR also gets\n" +
			"audit-policy.yaml, outside the kustomization: the API server audit policy the local stack\n" +
			"runs with, for kube-apiserver's --audit-policy-file. It records who created, changed or\n" +
			"deleted sandboxes, claims, templates, warm pools and the tenants' fence (RBAC, network and\n" +
			"admission policies, namespaces, quotas), at Metadata level, and nothing else.\n\n" +
			"Rendered YAML is meant to be committed, so render refuses to write values of sensitive\n" +
			"variables (or Pulumi config secrets) in plain text and names every field that would hold\n" +
			"one. Read secrets from a Secret with secret_env instead; --allow-sensitive writes them\n" +
			"anyway, warns with the same list, and writes such files readable by their owner only.\n" +
			"A sensitive value in a name, namespace or label is a policy error (PDK-610) that stops\n" +
			"render before it writes anything, whatever the flags: Kubernetes shows those everywhere.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadSpec(specArg(args), &f, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			// Whatever is printed about the platform goes through its
			// redaction: a sensitive value never reaches a terminal or a log.
			redacted := func(err error) error {
				if err == nil {
					return nil
				}
				return fmt.Errorf("%s", p.Redact(err.Error()))
			}
			sensitive, err := render.Sensitive(p)
			if err != nil {
				return redacted(err)
			}
			if len(sensitive) > 0 {
				if !allowSensitive {
					return redacted(&render.SensitiveError{Values: sensitive})
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: --allow-sensitive: writing %d value(s) of sensitive variables in plain text:\n%s\n",
					len(sensitive), render.List(sensitive))
			}
			if out == "" {
				objs, err := render.All(p)
				if err != nil {
					return redacted(err)
				}
				w := cmd.OutOrStdout()
				if allowSensitive {
					w = unredacted(w) // the values were asked for
				}
				return redacted(render.WriteYAML(w, objs))
			}
			files, err := render.ToDir(p, out)
			if err != nil {
				return redacted(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "rendered %d files into %s\n", len(files), out)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&out, "out", "", "directory to write one file per concept and a kustomization.yaml into")
	cmd.Flags().BoolVar(&allowSensitive, "allow-sensitive", false, "write values of sensitive variables in plain text (warns with every field that holds one)")
	return cmd
}
