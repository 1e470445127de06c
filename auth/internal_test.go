package auth_test

import (
	"errors"
	"testing"

	"svc/auth"
	"svc/internal/platform/derrors"
)

func TestCheckInternalToken(t *testing.T) {
	tests := []struct {
		name, configured, presented string
		ok                          bool
	}{
		{"match", "s3cret-operator-token", "s3cret-operator-token", true},
		{"mismatch", "s3cret-operator-token", "s3cret-operator-tokeN", false},
		{"prefix only", "s3cret-operator-token", "s3cret", false},
		{"longer", "s3cret-operator-token", "s3cret-operator-token2", false},
		{"nothing presented", "s3cret-operator-token", "", false},
		{"unset refuses everything", "", "", false},
		{"unset refuses any value", "", "anything", false},
	}
	for _, tt := range tests {
		err := auth.CheckInternalToken(tt.configured, tt.presented)
		if tt.ok && err != nil || !tt.ok && !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Errorf("%s: CheckInternalToken = %v; want ok=%v", tt.name, err, tt.ok)
		}
	}
}
