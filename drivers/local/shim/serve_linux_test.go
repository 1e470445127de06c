//go:build linux

package shim

import (
	"path/filepath"
	"testing"
)

// FuzzDecodeRequest: no message makes the job server's decoder panic, and
// whatever it accepts is within what the server may do.
//
//	go test -run '^$' -fuzz FuzzDecodeRequest ./drivers/local/shim/
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"op":"start","id":1,"path":"/bin/true","args":["true"],"env":["A=b"],"dir":"/","uid":1879048200,"killGrace":3000000000,"noNetwork":true}`,
		`{"op":"term","id":1}`,
		`{"op":"kill","id":18446744073709551615}`,
		`{"op":"start","id":1,"path":"/bin/true","args":["true"],"dir":"/","uid":0}`,
		`{"op":"start","id":1,"path":"/bin/true","args":["true"],"dir":"/","uid":-1}`,
		`{"op":"start","id":1,"path":"../x","args":["x"],"dir":"/","uid":1879048200}`,
		`{"op":"","id":0}`,
		`{"op":"start","id":1,"args":null}`,
		`{"id":1e400}`,
		`null`, `[]`, `{`, ``, "\x00",
	} {
		for _, nfds := range []uint8{0, 3} {
			f.Add([]byte(seed), nfds)
		}
	}
	cfg := &ServeConfig{FirstUID: 1879048192, LastUID: 1879048192 + 65535}
	f.Fuzz(func(t *testing.T, b []byte, nfds uint8) {
		req, err := decodeRequest(b, int(nfds%5), cfg)
		if err != nil {
			return
		}
		if req.ID == 0 {
			t.Fatalf("accepted a request without an id: %q", b)
		}
		switch req.Op {
		case OpStart:
			if nfds%5 != MaxFDs || req.UID < cfg.FirstUID || req.UID > cfg.LastUID || !filepath.IsAbs(req.Path) || !filepath.IsAbs(req.Dir) || len(req.Args) == 0 || req.KillGrace < 0 {
				t.Fatalf("accepted a start the server must refuse: %+v with %d descriptors", req, nfds%5)
			}
		case OpTerm, OpKill:
			if nfds%5 != 0 {
				t.Fatalf("accepted %s with descriptors", req.Op)
			}
		default:
			t.Fatalf("accepted operation %q", req.Op)
		}
	})
}

// TestDecodeRequest: what the server refuses, by example.
func TestDecodeRequest(t *testing.T) {
	cfg := &ServeConfig{FirstUID: 100, LastUID: 199}
	for _, tc := range []struct {
		msg  string
		nfds int
		ok   bool
	}{
		{`{"op":"start","id":1,"path":"/bin/true","args":["true"],"dir":"/w","uid":150}`, 3, true},
		{`{"op":"start","id":1,"path":"/bin/true","args":["true"],"dir":"/w","uid":150}`, 2, false},
		{`{"op":"start","id":1,"path":"/bin/true","args":["true"],"dir":"/w","uid":99}`, 3, false},
		{`{"op":"start","id":1,"path":"/bin/true","args":["true"],"dir":"/w","uid":200}`, 3, false},
		{`{"op":"start","id":1,"path":"bin/true","args":["true"],"dir":"/w","uid":150}`, 3, false},
		{`{"op":"start","id":1,"path":"/bin/true","args":["true"],"dir":"w","uid":150}`, 3, false},
		{`{"op":"start","id":1,"path":"/bin/true","dir":"/w","uid":150}`, 3, false},
		{`{"op":"start","id":1,"path":"/bin/true","args":["true"],"dir":"/w","uid":150,"killGrace":-1}`, 3, false},
		{`{"op":"start","id":0,"path":"/bin/true","args":["true"],"dir":"/w","uid":150}`, 3, false},
		{`{"op":"term","id":4}`, 0, true},
		{`{"op":"term","id":4}`, 1, false},
		{`{"op":"kill","id":4}`, 0, true},
		{`{"op":"stop","id":4}`, 0, false},
		{`{"op":"term","id":"4"}`, 0, false},
		{``, 0, false},
	} {
		_, err := decodeRequest([]byte(tc.msg), tc.nfds, cfg)
		if (err == nil) != tc.ok {
			t.Errorf("decodeRequest(%s, %d fds) = %v, want ok %v", tc.msg, tc.nfds, err, tc.ok)
		}
	}
}

// TestParseListen: the shim listens only at a unicast address with a
// port, written canonically.
func TestParseListen(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8080", "127.1.2.3:1", "[::1]:65535", "10.1.2.3:8000", "[fd00::5]:80"} {
		if _, err := ParseListen(ok); err != nil {
			t.Errorf("ParseListen(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:80", "[::]:80", "224.0.0.1:80", "[::ffff:127.0.0.1]:80", "[fe80::1%eth0]:80", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536",
		"127.0.0.1:08", "127.0.0.1:+8", "127.0.0.01:8", "127.0.0:8", "localhost:8080", ":8080", "[::0:1]:80"} {
		if _, err := ParseListen(bad); err == nil {
			t.Errorf("ParseListen(%q) accepted it", bad)
		}
	}
}
