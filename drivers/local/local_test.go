package local

import (
	"strings"
	"testing"
)

func TestAreaName(t *testing.T) {
	tests := []struct {
		id       string
		keep     bool   // the id is used as it is
		wantPref string // else the name starts so
	}{
		{id: "run-01HX.a_b", keep: true},
		{id: "a/../../etc", wantPref: "a_.._.._etc-"},
		{id: "..", wantPref: "_.-"},
		{id: ".locks", wantPref: "_locks-"},
		{id: "space id", wantPref: "space_id-"},
		{id: "é", wantPref: "_-"},
		{id: strings.Repeat("x", 200), wantPref: strings.Repeat("x", 64) + "-"},
	}
	for _, tt := range tests {
		got := areaName(tt.id)
		if tt.keep && got != tt.id {
			t.Errorf("areaName(%q) = %q, want it unchanged", tt.id, got)
		}
		if !tt.keep && !strings.HasPrefix(got, tt.wantPref) {
			t.Errorf("areaName(%q) = %q, want prefix %q", tt.id, got, tt.wantPref)
		}
		if strings.ContainsAny(got, "/\x00") || got == "." || got == ".." || strings.HasPrefix(got, ".") {
			t.Errorf("areaName(%q) = %q is not a safe path element", tt.id, got)
		}
	}
	if a, b := areaName("a/b"), areaName("a_b"); a == b {
		t.Errorf("areaName gives %q to both a/b and a_b", a)
	}
}

func TestParseUIDRange(t *testing.T) {
	tests := []struct {
		in      string
		want    UIDRange
		wantErr bool
	}{
		{in: "1879048192-1879113727", want: DefaultUIDs},
		{in: " 100-100 ", want: UIDRange{First: 100, Last: 100}},
		{in: "100", wantErr: true},
		{in: "0-10", wantErr: true},
		{in: "-5-10", wantErr: true},
		{in: "10-5", wantErr: true},
		{in: "a-b", wantErr: true},
		{in: "1-4294967295", wantErr: true},
		{in: "1-2147483647", want: UIDRange{First: 1, Last: 2147483647}},
	}
	for _, tt := range tests {
		got, err := ParseUIDRange(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("ParseUIDRange(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
