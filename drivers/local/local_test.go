package local

import (
	"strings"
	"testing"

	"svc/drivers"
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

func TestCheckJob(t *testing.T) {
	ok := drivers.Job{RunID: "r", Command: []string{"true"}}
	tests := []struct {
		name string
		edit func(*drivers.Job)
		want string // substring of the error; "" for none
	}{
		{"fine", func(*drivers.Job) {}, ""},
		{"no run id", func(j *drivers.Job) { j.RunID = "" }, "no run id"},
		{"no command", func(j *drivers.Job) { j.Command = nil }, "command is empty"},
		{"empty program", func(j *drivers.Job) { j.Command = []string{""} }, "command is empty"},
		{"file escapes", func(j *drivers.Job) { j.Files = map[string]string{"../x": ""} }, `file "../x"`},
		{"file absolute", func(j *drivers.Job) { j.Files = map[string]string{"/etc/x": ""} }, `file "/etc/x"`},
		{"file escapes midway", func(j *drivers.Job) { j.Files = map[string]string{"a/../../x": ""} }, `file "a/../../x"`},
		{"file dot", func(j *drivers.Job) { j.Files = map[string]string{"./": ""} }, `file "./"`},
		{"file empty name", func(j *drivers.Job) { j.Files = map[string]string{"": ""} }, `file ""`},
		{"workdir escapes", func(j *drivers.Job) { j.WorkDir = "../up" }, `workDir "../up"`},
		{"workdir absolute", func(j *drivers.Job) { j.WorkDir = "/srv" }, `workDir "/srv"`},
		{"env name with =", func(j *drivers.Job) { j.Env = map[string]string{"A=B": "c"} }, `variable "A=B"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := ok
			tt.edit(&j)
			err := checkJob(j)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("checkJob: %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("checkJob: %v, want an error containing %q", err, tt.want)
			}
		})
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
