package netguard

import "net/netip"

// notPublic4 are the IPv4 networks whose every address classify refuses,
// in address order: what a Guard reaches only when its allow list names
// it. TestNotPublic4MatchesClassify holds the list to classify.
var notPublic4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // this network (unspecified)
	netip.MustParsePrefix("10.0.0.0/8"),     // private
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
	netip.MustParsePrefix("127.0.0.0/8"),    // loopback
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
	netip.MustParsePrefix("172.16.0.0/12"),  // private
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("192.168.0.0/16"), // private
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("224.0.0.0/4"),    // multicast
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, broadcast
}

// NotPublic4 returns the IPv4 networks the guard does not class as public
// (loopback, private, carrier-grade NAT, link-local with the cloud
// metadata service, multicast, reserved), in address order: an address is
// in one of them exactly when a Guard with an empty allow list refuses
// it. The local runtime's isolated network makes them unreachable from
// jobs with these prefixes.
func NotPublic4() []netip.Prefix {
	return append([]netip.Prefix(nil), notPublic4...)
}
