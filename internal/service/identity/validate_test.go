package identity_test

import (
	"errors"
	"strings"
	"testing"

	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
)

func TestCheckTeamID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"a", true},
		{"platform.ml_ops-2", true},
		{"0day", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"Platform", false},
		{"-lead", false},
		{"a/b", false},
		{"é", false},
	}
	for _, tt := range tests {
		err := identity.CheckTeamID(tt.id)
		if got := err == nil; got != tt.ok {
			t.Errorf("CheckTeamID(%q) = %v, want ok %v", tt.id, err, tt.ok)
		}
		if err != nil && !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("CheckTeamID(%q) = %v, want an ErrInvalid", tt.id, err)
		}
	}
	// A huge id is clipped in the message, not echoed whole.
	if err := identity.CheckTeamID(strings.Repeat("X", 5000)); len(err.Error()) > 400 {
		t.Errorf("the message echoes %d bytes", len(err.Error()))
	}
}
