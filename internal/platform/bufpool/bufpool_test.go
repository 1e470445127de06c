package bufpool

import "testing"

func TestGetPut(t *testing.T) {
	p := Pool{Max: 1 << 10}
	b := p.Get(100)
	if len(*b) != 0 || cap(*b) < 100 {
		t.Fatalf("Get(100) = len %d cap %d", len(*b), cap(*b))
	}
	buf := append(*b, "grown"...)
	p.Put(b, buf)
	if c := p.Get(10); len(*c) != 0 || cap(*c) < 10 {
		t.Errorf("Get(10) after Put = len %d cap %d", len(*c), cap(*c))
	}
	big := p.Get(2 << 10)
	p.Put(big, *big) // past Max: dropped, not kept
	if c := p.Get(3 << 10); cap(*c) < 3<<10 {
		t.Errorf("Get(3 KiB) = cap %d", cap(*c))
	}
}
