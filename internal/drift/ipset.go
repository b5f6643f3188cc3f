package drift

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// addrRange is an inclusive range of addresses of one family.
type addrRange struct{ lo, hi netip.Addr }

// ipSet is a set of addresses as sorted, disjoint, non-adjacent ranges.
// Policies spell address sets as CIDRs minus except blocks, split however
// their authors like; comparing them as ranges is what makes 0.0.0.0/1 plus
// 128.0.0.0/1 the same thing as 0.0.0.0/0.
type ipSet []addrRange

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	p = p.Masked()
	bits := p.Bits()
	if p.Addr().Is4() {
		b := p.Addr().As4()
		for i := bits; i < 32; i++ {
			b[i/8] |= 1 << (7 - i%8)
		}
		return netip.AddrFrom4(b)
	}
	b := p.Addr().As16()
	for i := bits; i < 128; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	return netip.AddrFrom16(b)
}

func prefixSet(p netip.Prefix) ipSet {
	p = p.Masked()
	return ipSet{{p.Addr(), lastAddr(p)}}
}

// parseCIDRSet reads cidr minus excepts as an ipSet. A malformed cidr is an
// error (the caller reports it; it never becomes "no addresses"). A malformed
// or foreign-family except is ignored, so it can only leave the set larger.
func parseCIDRSet(cidr string, except []string) (ipSet, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(cidr))
	if err != nil {
		return nil, fmt.Errorf("cidr %q: %w", cidr, err)
	}
	s := prefixSet(p)
	var out ipSet
	for _, e := range except {
		ep, err := netip.ParsePrefix(strings.TrimSpace(e))
		if err != nil || ep.Addr().Is4() != p.Addr().Is4() {
			continue
		}
		out = append(out, prefixSet(ep)...)
	}
	return s.minus(normalise(out)), nil
}

// normalise sorts s and merges overlapping and adjacent ranges.
func normalise(s ipSet) ipSet {
	if len(s) < 2 {
		return s
	}
	s = append(ipSet(nil), s...)
	sort.Slice(s, func(i, j int) bool { return s[i].lo.Less(s[j].lo) })
	out := ipSet{s[0]}
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		// Next of the family's last address is the zero Addr, so ranges of
		// two families never merge.
		if next := last.hi.Next(); r.lo.Compare(last.hi) <= 0 || (next.IsValid() && next == r.lo) {
			if last.hi.Less(r.hi) {
				last.hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

func (s ipSet) union(t ipSet) ipSet {
	if len(t) == 0 {
		return s
	}
	if len(s) == 0 {
		return t
	}
	return normalise(append(append(ipSet(nil), s...), t...))
}

// minus is s without the addresses of t; both normalised.
func (s ipSet) minus(t ipSet) ipSet {
	var out ipSet
	j := 0
	for _, r := range s {
		lo, hi := r.lo, r.hi
		for j < len(t) && t[j].hi.Less(lo) {
			j++
		}
		k, alive := j, true
		for ; k < len(t) && t[k].lo.Compare(hi) <= 0; k++ {
			if lo.Less(t[k].lo) {
				out = append(out, addrRange{lo, t[k].lo.Prev()})
			}
			if t[k].hi.Compare(hi) >= 0 {
				alive = false
				break
			}
			lo = t[k].hi.Next()
		}
		if alive {
			out = append(out, addrRange{lo, hi})
		}
	}
	return out
}

func (s ipSet) contains(a netip.Addr) bool {
	for _, r := range s {
		if r.lo.Compare(a) <= 0 && a.Compare(r.hi) <= 0 {
			return true
		}
	}
	return false
}

// cidrs covers r with the fewest prefixes, at most limit of them; more
// reports whether some were left out.
func (r addrRange) cidrs(limit int) (out []netip.Prefix, more bool) {
	lo := r.lo
	for lo.IsValid() && lo.Compare(r.hi) <= 0 {
		if len(out) == limit {
			return out, true
		}
		// The largest block that starts at lo and ends within the range.
		var p netip.Prefix
		for bits := 0; bits <= lo.BitLen(); bits++ {
			c := netip.PrefixFrom(lo, bits).Masked()
			if c.Addr() == lo && lastAddr(c).Compare(r.hi) <= 0 {
				p = c
				break
			}
		}
		out = append(out, p)
		lo = lastAddr(p).Next()
	}
	return out, false
}

// String names the set in CIDRs, a few of them: a policy can spell an
// address set in thousands of blocks, and a report line must stay short.
func (s ipSet) String() string {
	const limit = 4
	var parts []string
	for _, r := range s {
		ps, _ := r.cidrs(limit + 1 - len(parts))
		for _, p := range ps {
			parts = append(parts, p.String())
		}
		if len(parts) > limit {
			return strings.Join(parts[:limit], ", ") + ", …"
		}
	}
	return strings.Join(parts, ", ")
}
