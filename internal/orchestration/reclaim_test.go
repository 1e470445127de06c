package orchestration

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestDeadWorker(t *testing.T) {
	host, _ := os.Hostname()
	self := os.Getpid()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid
	for _, tc := range []struct {
		identity string
		want     bool
	}{
		{strconv.Itoa(dead) + "@" + host + "@", true},
		{strconv.Itoa(dead) + "@other-host@", false},
		{strconv.Itoa(self) + "@" + host + "@", false}, // this process
		{"1@" + host + "@", false},                     // alive
		{"x@" + host + "@", false},
		{"", false},
		{"12", false},
	} {
		if _, got := deadWorker(tc.identity, host, self); got != tc.want {
			t.Errorf("deadWorker(%q) = %v, want %v", tc.identity, got, tc.want)
		}
	}
}
