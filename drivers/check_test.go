package drivers

import (
	"strings"
	"testing"
)

func TestCheckJob(t *testing.T) {
	ok := Job{RunID: "r", Command: []string{"true"}}
	tests := []struct {
		name string
		edit func(*Job)
		want string // substring of the error; "" for none
	}{
		{"fine", func(*Job) {}, ""},
		{"no run id", func(j *Job) { j.RunID = "" }, "no run id"},
		{"no command", func(j *Job) { j.Command = nil }, "command is empty"},
		{"empty program", func(j *Job) { j.Command = []string{""} }, "command is empty"},
		{"file escapes", func(j *Job) { j.Files = map[string]string{"../x": ""} }, `file "../x"`},
		{"file absolute", func(j *Job) { j.Files = map[string]string{"/etc/x": ""} }, `file "/etc/x"`},
		{"file escapes midway", func(j *Job) { j.Files = map[string]string{"a/../../x": ""} }, `file "a/../../x"`},
		{"file dot", func(j *Job) { j.Files = map[string]string{"./": ""} }, `file "./"`},
		{"file empty name", func(j *Job) { j.Files = map[string]string{"": ""} }, `file ""`},
		{"workdir escapes", func(j *Job) { j.WorkDir = "../up" }, `workDir "../up"`},
		{"workdir absolute", func(j *Job) { j.WorkDir = "/srv" }, `workDir "/srv"`},
		{"env name with =", func(j *Job) { j.Env = map[string]string{"A=B": "c"} }, `variable "A=B"`},
		{"env value with NUL", func(j *Job) { j.Env = map[string]string{"A": "b\x00"} }, `variable "A"`},
		{"argument with NUL", func(j *Job) { j.Command = []string{"true", "a\x00"} }, "must not contain NUL"},
		{"run id with NUL", func(j *Job) { j.RunID = "r\x00" }, "local driver: run id"},
		{"file with backslash", func(j *Job) { j.Files = map[string]string{`a\b`: ""} }, `file "a\\b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := ok
			tt.edit(&j)
			err := CheckJob("local", j)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckJob: %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("CheckJob: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
