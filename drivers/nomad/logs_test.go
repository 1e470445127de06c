package nomad

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/drivers"
)

// frames decodes every frame of stream.
func frames(stream []byte) ([]string, error) {
	dec := newFrameDecoder(bytes.NewReader(stream))
	var got []string
	for {
		data, err := dec.next()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, string(data))
	}
}

func TestFrameDecoder(t *testing.T) {
	recorded, err := os.ReadFile("testdata/log_frames.stream")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		stream  string
		want    []string
		wantErr string
	}{
		{name: "recorded", stream: string(recorded), want: []string{"hello\n", "world\n"}},
		{name: "empty", stream: "", want: nil},
		{name: "heartbeats only", stream: "{}\n{}\n", want: nil},
		{name: "cut inside a frame", stream: `{"Offset":6,"Data":"aGVs`, wantErr: "ended inside a frame"},
		{name: "not frames", stream: `<html>SECRET-PAGE</html>`, wantErr: "not Nomad's frames"},
		{name: "bad base64", stream: `{"Data":"%%%SECRET"}`, wantErr: "not Nomad's frames"},
		{name: "too large", stream: `{"Data":"` + strings.Repeat("QUJD", maxFrame/4+16) + `"}`, wantErr: "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := frames([]byte(tc.stream))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "SECRET") {
					t.Fatalf("error = %v, want one saying %q without the stream's text", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzFrameDecoder feeds the decoder what a hostile cluster could send:
// it must never panic, never return more data than it was sent, and never
// repeat the stream in an error.
func FuzzFrameDecoder(f *testing.F) {
	recorded, err := os.ReadFile("testdata/log_frames.stream")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(recorded)
	f.Add([]byte(`{}{}{"Data":"eA=="}`))
	f.Add([]byte(`{"Data":null,"Offset":-1}`))
	f.Add([]byte(`[1,2,3]`))
	f.Add([]byte(`{"Data":"eA==","File":{"x":1}}`))
	f.Fuzz(func(t *testing.T, stream []byte) {
		got, err := frames(stream)
		total := 0
		for _, d := range got {
			total += len(d)
		}
		if total > len(stream) {
			t.Fatalf("decoded %d bytes from a stream of %d", total, len(stream))
		}
		if err != nil && len(stream) >= 8 && strings.Contains(err.Error(), string(stream)) {
			t.Fatalf("error %q repeats the stream", err)
		}
	})
}

func TestCapture(t *testing.T) {
	o := drivers.NewOutput(nil)
	o.Write("stdout", []byte(strings.Repeat("é", 3<<20))) // 6 MiB of two-byte runes
	o.Write("stderr", []byte("x"+strings.Repeat("é", 5000)))
	var res drivers.Result
	o.Fill(&res)
	if len(res.Stdout) != drivers.MaxOutput || !strings.HasSuffix(res.Stdout, "é") {
		t.Errorf("Stdout is %d bytes, want MaxOutput bytes of whole runes", len(res.Stdout))
	}
	if len(res.StdoutTail) != drivers.TailBytes || !strings.HasPrefix(res.StdoutTail, "é") {
		t.Errorf("StdoutTail is %d bytes, want TailBytes of whole runes", len(res.StdoutTail))
	}
	if strings.Contains(res.StderrTail, "x") || len(res.StderrTail) != drivers.TailBytes {
		t.Errorf("StderrTail is %d bytes, want only the last TailBytes", len(res.StderrTail))
	}
}
