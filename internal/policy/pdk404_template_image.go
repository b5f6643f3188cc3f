package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-404", Title: "Template image not pinned", Severity: Warning, Kind: Static,
		Control:   "A reviewed template runs a reviewed image: a tag or digest, never a moving \"latest\"",
		Checklist: []string{"H13", "L10"},
		Fix:       "Pin the image to a version tag built by your trusted CI, or better a digest (image@sha256:...).",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				if tpl.Image == "" {
					return
				}
				if _, tag, digest := imageRef(tpl.Image); digest == "" && (tag == "" || tag == "latest") {
					c.report(templateAddr(t, tpl), tpl.Attrs.At("image", tpl.Src),
						"Template %q of tenant %q runs image %q, which follows a moving tag.", tpl.Name, t.Name, tpl.Image)
				}
			})
		},
	})
}
