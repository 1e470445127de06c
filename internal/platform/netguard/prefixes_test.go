package netguard

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

// TestNotPublic4MatchesClassify: an IPv4 address is in NotPublic4 exactly
// when classify refuses it: at both ends of each prefix and one address
// beyond them, and at a million addresses drawn at random.
func TestNotPublic4MatchesClassify(t *testing.T) {
	in := func(a netip.Addr) bool {
		return slices.ContainsFunc(NotPublic4(), func(p netip.Prefix) bool { return p.Contains(a) })
	}
	check := func(a netip.Addr) {
		t.Helper()
		if !a.IsValid() {
			return
		}
		if got, want := in(a), classify(a) != ""; got != want {
			t.Errorf("%s: in NotPublic4 %v, classify refuses it %v (%q)", a, got, want, classify(a))
		}
	}
	for _, p := range NotPublic4() {
		first := p.Addr()
		b := first.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		v |= 1<<(32-p.Bits()) - 1
		last := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		check(first)
		check(last)
		check(first.Prev())
		check(last.Next())
	}
	r := rand.New(rand.NewPCG(30, 3))
	for range 1_000_000 {
		v := r.Uint32()
		check(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}))
	}
	if !slices.IsSortedFunc(NotPublic4(), func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) }) {
		t.Errorf("NotPublic4 is not in address order")
	}
}
