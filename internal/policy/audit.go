package policy

import "github.com/paddock-platform/paddock/internal/model"

// auditCovers reports whether some sink receives filter.
func (c *checker) auditCovers(filter string) bool {
	for i := range c.p.AuditSinks {
		if contains(c.p.AuditSinks[i].Filters, filter) {
			return true
		}
	}
	return false
}

// platformSrc is where platform-wide findings point.
func (c *checker) platformSrc() model.Range { return orSrc(c.p.Src, c.p.Target.Src) }
