package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"svc/internal/platform/derrors"
)

// The example from the Standard Webhooks specification.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTS     = 1614265330
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func headers(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, sig)
	return h
}

func TestSignSpecVector(t *testing.T) {
	got, err := Sign(specSecret, specID, time.Unix(specTS, 0), []byte(specBody))
	if err != nil {
		t.Fatal(err)
	}
	if got != specSig {
		t.Errorf("Sign(spec example) = %q, want %q", got, specSig)
	}
	if err := Verify(specSecret, headers(specID, specTS, specSig), []byte(specBody), time.Unix(specTS+10, 0), 0); err != nil {
		t.Errorf("Verify(spec example) = %v, want nil", err)
	}
}

// TestSignIndependent cross-checks Sign against HMAC computed here from the
// spec's definition, with a key that is not the spec's.
func TestSignIndependent(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	body := []byte(`{"runId":"run_1","status":"succeeded"}`)

	m := hmac.New(sha256.New, key)
	m.Write([]byte("msg_1." + strconv.FormatInt(ts.Unix(), 10) + "."))
	m.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))

	got, err := Sign(secret, "msg_1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
	// The prefix is optional, as in the reference libraries.
	got2, err := Sign(strings.TrimPrefix(secret, "whsec_"), "msg_1", ts, body)
	if err != nil || got2 != want {
		t.Errorf("Sign(secret without prefix) = %q, %v; want %q, nil", got2, err, want)
	}
}

func TestNewSecretRoundTrip(t *testing.T) {
	s1, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if s1 == s2 {
		t.Fatalf("NewSecret returned %q twice", s1)
	}
	if !strings.HasPrefix(s1, "whsec_") {
		t.Fatalf("NewSecret() = %q, want whsec_ prefix", s1)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s1, "whsec_"))
	if err != nil || len(key) != 32 {
		t.Fatalf("NewSecret key = %d bytes, %v; want 32, nil", len(key), err)
	}

	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"a":1}`)
	sig, err := Sign(s1, "msg_rt", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(s1, headers("msg_rt", now.Unix(), sig), body, now, time.Minute); err != nil {
		t.Errorf("Verify(own signature) = %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	now := time.Unix(specTS, 0)
	other, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	otherSig, err := Sign(other, specID, now, []byte(specBody))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		secret    string
		h         http.Header
		body      string
		now       time.Time
		tolerance time.Duration
		want      error // nil = accepted
	}{
		{"spec example", specSecret, headers(specID, specTS, specSig), specBody, now, 0, nil},
		{"rotation: one of several matches", specSecret, headers(specID, specTS, "v1a,abc= "+otherSig+" "+specSig), specBody, now, 0, nil},
		{"tampered body", specSecret, headers(specID, specTS, specSig), `{"test": 2432232315}`, now, 0, derrors.ErrUnauthenticated},
		{"tampered id", specSecret, headers(specID+"x", specTS, specSig), specBody, now, 0, derrors.ErrUnauthenticated},
		{"tampered timestamp", specSecret, headers(specID, specTS+1, specSig), specBody, now, 0, derrors.ErrUnauthenticated},
		{"other secret", other, headers(specID, specTS, specSig), specBody, now, 0, derrors.ErrUnauthenticated},
		{"signature by other secret", specSecret, headers(specID, specTS, otherSig), specBody, now, 0, derrors.ErrUnauthenticated},
		{"wrong version", specSecret, headers(specID, specTS, "v2"+specSig[2:]), specBody, now, 0, derrors.ErrUnauthenticated},
		{"garbage signature", specSecret, headers(specID, specTS, "v1,!!!"), specBody, now, 0, derrors.ErrUnauthenticated},
		{"too old (default 5m)", specSecret, headers(specID, specTS, specSig), specBody, now.Add(5*time.Minute + time.Second), 0, derrors.ErrUnauthenticated},
		{"within default 5m", specSecret, headers(specID, specTS, specSig), specBody, now.Add(5 * time.Minute), 0, nil},
		{"too far in future", specSecret, headers(specID, specTS, specSig), specBody, now.Add(-2 * time.Minute), time.Minute, derrors.ErrUnauthenticated},
		{"missing signature", specSecret, headers(specID, specTS, ""), specBody, now, 0, derrors.ErrUnauthenticated},
		{"missing id", specSecret, headers("", specTS, specSig), specBody, now, 0, derrors.ErrUnauthenticated},
		{"malformed secret", "whsec_not base64", headers(specID, specTS, specSig), specBody, now, 0, derrors.ErrInvalid},
		{"short secret", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short")), headers(specID, specTS, specSig), specBody, now, 0, derrors.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.secret, tc.h, []byte(tc.body), tc.now, tc.tolerance)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
	h := headers(specID, specTS, specSig)
	h.Set(HeaderTimestamp, "soon")
	if err := Verify(specSecret, h, []byte(specBody), now, 0); !errors.Is(err, derrors.ErrUnauthenticated) {
		t.Errorf("Verify(non-numeric timestamp) = %v, want ErrUnauthenticated", err)
	}
}

func TestSignRefuses(t *testing.T) {
	for _, tc := range []struct{ name, secret, id string }{
		{"not base64", "whsec_%%%", "msg"},
		{"empty", "", "msg"},
		{"too long", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), "msg"},
		{"empty id", specSecret, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Sign(tc.secret, tc.id, time.Unix(1, 0), nil); !errors.Is(err, derrors.ErrInvalid) {
				t.Errorf("Sign = %v, want ErrInvalid", err)
			}
		})
	}
}
