package targets

import (
	"context"
	"fmt"
	"strings"

	"github.com/distribution/reference"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/model"
)

// CheckLocalImages refuses, before an update of a local-target platform, a
// spec whose templates name an image the local cluster's real node does not
// hold, or whose egress gateway's image it has not imported (see
// checkLocalImages). Other targets pull their images; it passes them.
func CheckLocalImages(ctx context.Context, p *model.Platform) error {
	if p.Target.Kind != model.TargetLocal {
		return nil
	}
	st, err := localcluster.New(localcluster.Options{}).Status(ctx)
	if err != nil {
		return err
	}
	return checkLocalImages(p, st.Nodes)
}

// checkLocalImages refuses a spec whose templates name an image the local
// cluster's real node does not hold. Nothing there can pull from a registry,
// so such a sandbox would sit in ImagePullBackOff; better to say so, naming
// each template, before anything is applied. On kwok nodes nothing runs and
// any image will do.
func checkLocalImages(p *model.Platform, nodes []localcluster.NodeStatus) error {
	var real *localcluster.NodeStatus
	for i := range nodes {
		if nodes[i].Real {
			real = &nodes[i]
		}
	}
	if real == nil {
		return nil
	}
	held := map[string]bool{}
	for _, n := range real.Images {
		if r, err := reference.ParseNormalizedNamed(n); err == nil {
			held[r.String()] = true
		}
	}
	var problems, fixes []string
	var templates, gateways bool
	for _, t := range p.Tenants {
		for _, tpl := range t.Templates {
			if why := imageProblem(tpl.Image, held); why != "" {
				at := tpl.Attrs.At("image", tpl.Src)
				problems = append(problems, fmt.Sprintf("  %s: tenant %q template %q: %s", at, t.Name, tpl.Name, why))
				templates = true
			}
		}
		// The gateway's image is the one this paddock's node imports at
		// `local up` from the paddock-gateway built beside it: absent when
		// it was not built, or when paddock was rebuilt since.
		if g := t.EgressGateway; g != nil {
			if why := imageProblem(g.Image, held); why != "" {
				problems = append(problems, fmt.Sprintf("  %s: tenant %q egress_gateway: %s", g.Src, t.Name, why))
				gateways = true
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if templates {
		fixes = append(fixes, fmt.Sprintf("use an image the node holds (%s, built from Debian's busybox-static; `paddock local status` lists them), or `paddock local down && paddock local up --nodes fake` for a cluster where no container runs", localcluster.SandboxImage))
	}
	if gateways {
		fixes = append(fixes, fmt.Sprintf("the node imports the egress gateway's image (%s) at `paddock local up`, from the paddock-gateway beside this paddock (`make build` builds both): build it, then `paddock local down && paddock local up`", model.LocalGatewayImage()))
	}
	return fmt.Errorf("the local cluster's node %s cannot run every image the platform names: nothing on it can pull from a registry\n%s\n%s",
		real.Name, strings.Join(problems, "\n"), strings.Join(fixes, "\n"))
}

// imageProblem says why a template's image cannot run on a node holding the
// normalised references in held ("" when it can).
func imageProblem(image string, held map[string]bool) string {
	r, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return fmt.Sprintf("image %q is not a valid reference: %v", image, err)
	}
	r = reference.TagNameOnly(r)
	// An image without a tag, or tagged latest, is pulled on every start
	// (imagePullPolicy Always), and the pull fails here even when the node has it.
	if t, ok := r.(reference.Tagged); ok && t.Tag() == "latest" {
		if _, digested := r.(reference.Digested); !digested {
			return fmt.Sprintf("image %q is pulled on every start (no tag, or tag latest), and nothing can be pulled here: name a fixed tag", image)
		}
	}
	if !held[r.String()] {
		return fmt.Sprintf("image %q is not on the node", image)
	}
	return ""
}
