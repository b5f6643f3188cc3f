package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/bench"
	"github.com/paddock-platform/paddock/internal/model"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the provisioned platform",
	}
	cmd.AddCommand(newBenchClaimsCmd())
	return cmd
}

func newBenchClaimsCmd() *cobra.Command {
	var (
		f            specFlags
		tenant, pool string
		coldPool     string
		count, burst int
		timeout      time.Duration
		format       string
		modes        []string
	)
	cmd := &cobra.Command{
		Use:   "claims [SPEC]",
		Short: "Claim → Ready latency on a warm pool: warm hits, cold starts, and a burst larger than the pool",
		Long: "Makes SandboxClaims on one warm pool of a provisioned platform and times each from\n" +
			"create to Ready (the platform metric sandbox start):\n" +
			"  warm   one claim at a time, each once the pool is full again (every claim can hit);\n" +
			"  cold   one claim at a time on a pool of the tenant with replicas 0 (--cold-pool): every\n" +
			"         sandbox starts from the template, the path of a claim that finds no warm one;\n" +
			"  burst  --burst claims at once, more than the pool holds, repeated on a full pool until\n" +
			"         --claims are measured: the warm-pool hit rate under a stampede.\n" +
			"Claims carry the tenant's lifecycle (TTL, a shutdownTime within max_ttl, Delete) and a\n" +
			"paddock.dev/bench-run label, and are deleted before it returns. Run it against a platform\n" +
			"you may load.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" && format != "markdown" {
				return fmt.Errorf("--format %q: use text, json or markdown", format)
			}
			if _, err := bench.ClaimModes(modes); err != nil {
				return fmt.Errorf("--modes: %w", err)
			}
			ctx := cmd.Context()
			l, err := f.load(ctx, args, cmd.ErrOrStderr(), cmd.ErrOrStderr(), false, true)
			if err != nil {
				return err
			}
			t, wp, err := pickPool(l.p, tenant, pool)
			if err != nil {
				return err
			}
			cold, err := pickColdPool(t, coldPool)
			if err != nil {
				return err
			}
			cfg, err := restConfig(l.p, 100)
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			progress := cmd.ErrOrStderr()
			opts := bench.ClaimsOptions{
				Namespace: t.Namespace, WarmPool: wp.Name, ColdPool: cold, Count: count, Burst: burst,
				TTL: t.Claims.TTL, MaxTTL: t.Claims.MaxTTL, Timeout: timeout, Out: progress, Modes: modes,
			}
			fmt.Fprintf(progress, "paddock bench claims: tenant %s, warm pool %s/%s (%d replicas)\n", t.Name, t.Namespace, wp.Name, wp.Replicas)
			res, err := bench.Claims(ctx, dyn, opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			default:
				bench.WriteClaimsTable(out, res)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", "", "tenant whose warm pool to claim from (default: the only tenant)")
	cmd.Flags().StringVar(&pool, "pool", "", "warm pool of the tenant (default: its only warm pool)")
	cmd.Flags().StringVar(&coldPool, "cold-pool", "", "pool of the tenant with replicas 0 for the cold mode (default: its only such pool; none skips the cold mode)")
	cmd.Flags().IntVar(&count, "claims", 10, "claims per sequential mode (warm, cold)")
	cmd.Flags().IntVar(&burst, "burst", 0, "claims of each burst (default: twice the pool's replicas); bursts repeat, each on a full pool, until --claims are measured")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long one claim may take to become Ready")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text (a table), json or markdown")
	cmd.Flags().StringSliceVar(&modes, "modes", nil, "the modes to measure, of warm, cold and burst (default: all three; they run in that order)")
	return cmd
}

// pickPool finds the tenant and warm pool to claim from: the named ones, or
// the only tenant with a pool that keeps sandboxes warm and its only such pool.
func pickPool(p *model.Platform, tenant, pool string) (*model.Tenant, *model.WarmPool, error) {
	var tenants []*model.Tenant
	var names []string
	for i := range p.Tenants {
		t := &p.Tenants[i]
		names = append(names, t.Name)
		if (tenant == "" || t.Name == tenant) && len(warmPools(t)) > 0 {
			tenants = append(tenants, t)
		}
	}
	switch {
	case len(tenants) == 0 && tenant != "":
		return nil, nil, fmt.Errorf("--tenant %q: no such tenant with a warm pool of 1 or more replicas (tenants: %s)", tenant, strings.Join(names, ", "))
	case len(tenants) == 0:
		return nil, nil, fmt.Errorf("no tenant of platform %q has a warm pool of 1 or more replicas to claim from", p.Name)
	case len(tenants) > 1:
		return nil, nil, fmt.Errorf("several tenants have warm pools: name one with --tenant (%s)", strings.Join(names, ", "))
	}
	t := tenants[0]
	warm := warmPools(t)
	var all []string
	for i := range t.WarmPools {
		all = append(all, t.WarmPools[i].Name)
		if t.WarmPools[i].Name == pool {
			if t.WarmPools[i].Replicas < 1 {
				return nil, nil, fmt.Errorf("--pool %q keeps no sandbox warm (replicas 0): name it with --cold-pool instead", pool)
			}
			return t, &t.WarmPools[i], nil
		}
	}
	switch {
	case pool != "":
		return nil, nil, fmt.Errorf("--pool %q: tenant %s has no such warm pool (%s)", pool, t.Name, strings.Join(all, ", "))
	case len(warm) > 1:
		return nil, nil, fmt.Errorf("tenant %s has several warm pools: name one with --pool (%s)", t.Name, strings.Join(all, ", "))
	}
	return t, warm[0], nil
}

// pickColdPool finds the tenant's pool with replicas 0: the named one, or
// the only one ("" when there is none, which skips the cold mode).
func pickColdPool(t *model.Tenant, name string) (string, error) {
	var cold []string
	for _, wp := range t.WarmPools {
		if wp.Name == name {
			if wp.Replicas != 0 {
				return "", fmt.Errorf("--cold-pool %q keeps %d sandboxes warm: a cold start needs a pool with replicas = 0", name, wp.Replicas)
			}
			return name, nil
		}
		if wp.Replicas == 0 {
			cold = append(cold, wp.Name)
		}
	}
	switch {
	case name != "":
		return "", fmt.Errorf("--cold-pool %q: tenant %s has no such warm pool", name, t.Name)
	case len(cold) == 1:
		return cold[0], nil
	case len(cold) > 1:
		return "", fmt.Errorf("tenant %s has several pools with replicas 0: name one with --cold-pool (%s)", t.Name, strings.Join(cold, ", "))
	}
	return "", nil
}

func warmPools(t *model.Tenant) []*model.WarmPool {
	var out []*model.WarmPool
	for i := range t.WarmPools {
		if t.WarmPools[i].Replicas > 0 {
			out = append(out, &t.WarmPools[i])
		}
	}
	return out
}
