package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-302", Title: "Runtime class is not a sandbox runtime", Severity: Error, Kind: Static,
		Control:   "A runtime class templates use provides kernel isolation (gVisor or Kata), not plain runc",
		Checklist: []string{"H8", "L3"},
		Fix:       `Use handler "runsc" (gVisor) or a Kata handler ("kata", "kata-qemu", ...), or point the templates at such a runtime class.`,
		check: func(c *checker) {
			for _, rc := range c.usedRuntimeClasses() {
				if model.HandlerIsolation(rc.Handler) == "" {
					c.report(runtimeClassAddr(rc), rc.Attrs.At("handler", rc.Src),
						"Runtime class %q has handler %q, which is no sandbox runtime: its templates run on the host kernel.", rc.Name, rc.Handler)
				}
			}
		},
	})
}
