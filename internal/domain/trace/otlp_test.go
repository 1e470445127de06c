package trace

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

var (
	testTraceID = mustHex("5b8efff798038103d269b633813fc60c")
	testSpanID  = mustHex("eee19b7ec3c1b174")
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func num(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// request is an export of one span with attrs under a resource naming run.
func request(run string, attrs ...*commonpb.KeyValue) *coltracepb.ExportTraceServiceRequest {
	var res []*commonpb.KeyValue
	if run != "" {
		res = append(res, str(RunIDAttribute, run))
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: res},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: testTraceID, SpanId: testSpanID, Name: "chat gpt-4o",
			StartTimeUnixNano: 1_700_000_000_000_000_000, EndTimeUnixNano: 1_700_000_000_250_000_000,
			Attributes: attrs,
		}}}},
	}}}
}

func TestDecodeProtobuf(t *testing.T) {
	in := request("run_1", str("gen_ai.operation.name", "chat"))
	data, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeOTLP(data, EncodingProtobuf)
	if err != nil {
		t.Fatalf("DecodeOTLP: %v", err)
	}
	if !proto.Equal(in, got) {
		t.Errorf("decoded %v, want %v", got, in)
	}
	if _, err := DecodeOTLP([]byte{0xff, 0xff, 0xff}, EncodingProtobuf); !errors.Is(err, ErrOTLPMalformed) {
		t.Errorf("DecodeOTLP(garbage) = %v, want ErrOTLPMalformed", err)
	}
}

// OTLP JSON carries hex ids, lowerCamelCase keys, enums as integers and
// 64-bit integers as strings; unknown fields are ignored.
func TestDecodeJSONHexIDs(t *testing.T) {
	body := `{"resourceSpans":[{"resource":{"attributes":[{"key":"svc.run_id","value":{"stringValue":"run_1"}}]},
	  "scopeSpans":[{"scope":{"name":"x"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",
	  "parentSpanId":"","name":"tool","kind":1,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000250000000",
	  "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"n","value":{"intValue":"7"}}],
	  "status":{"code":2,"message":"boom"},"futureField":true}]}]}]}`
	got, err := DecodeOTLP([]byte(body), EncodingJSON)
	if err != nil {
		t.Fatalf("DecodeOTLP: %v", err)
	}
	sp := got.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0]
	if !bytes.Equal(sp.GetTraceId(), testTraceID) || !bytes.Equal(sp.GetSpanId(), testSpanID) {
		t.Errorf("ids = %x/%x, want %x/%x", sp.GetTraceId(), sp.GetSpanId(), testTraceID, testSpanID)
	}
	if sp.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("status = %v, want ERROR", sp.GetStatus())
	}
	// base64 ids (what protojson writes) are read as they are.
	b64 := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"W47/95gDgQPSabYzgT/GDA==","spanId":"7uGbfsPBsXQ=","name":"s"}]}]}]}`
	got, err = DecodeOTLP([]byte(b64), EncodingJSON)
	if err != nil {
		t.Fatalf("DecodeOTLP(base64 ids): %v", err)
	}
	if sp := got.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0]; !bytes.Equal(sp.GetTraceId(), testTraceID) {
		t.Errorf("base64 trace id = %x, want %x", sp.GetTraceId(), testTraceID)
	}
	for _, bad := range []string{`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`, `{`, `[]`, `{"resourceSpans":7}`} {
		if _, err := DecodeOTLP([]byte(bad), EncodingJSON); !errors.Is(err, ErrOTLPMalformed) {
			t.Errorf("DecodeOTLP(%s) = %v, want ErrOTLPMalformed", bad, err)
		}
	}
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadOTLPBody(t *testing.T) {
	plain := []byte("hello")
	for _, tt := range []struct {
		name, encoding string
		body           []byte
		want           []byte
		err            error
	}{
		{"identity", "", plain, plain, nil},
		{"gzip", "gzip", gz(t, plain), plain, nil},
		{"not gzip", "gzip", plain, nil, ErrOTLPMalformed},
		{"truncated gzip", "gzip", gz(t, plain)[:10], nil, ErrOTLPMalformed},
		{"other encoding", "br", plain, nil, ErrOTLPEncoding},
		// A bomb: 33 MiB of zeros in about 33 KB.
		{"gzip bomb", "gzip", gz(t, make([]byte, MaxOTLPBytes+1<<20)), nil, ErrOTLPTooLarge},
		{"too large", "", make([]byte, MaxOTLPBytes+1), nil, ErrOTLPTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadOTLPBody(bytes.NewReader(tt.body), tt.encoding)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Errorf("ReadOTLPBody = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestOTLPEncoding(t *testing.T) {
	for ct, want := range map[string]string{
		"application/x-protobuf": EncodingProtobuf, "application/json; charset=utf-8": EncodingJSON, "Application/JSON": EncodingJSON,
		"text/plain": "", "": "",
	} {
		got, err := OTLPEncoding(ct)
		if got != want || (want == "") != errors.Is(err, ErrOTLPEncoding) {
			t.Errorf("OTLPEncoding(%q) = %q, %v; want %q", ct, got, err, want)
		}
	}
}

func TestEncodeResponseRoundTrips(t *testing.T) {
	resp := &coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "x"}}
	for _, enc := range []string{EncodingProtobuf, EncodingJSON} {
		data, err := EncodeOTLPResponse(resp, enc)
		if err != nil {
			t.Fatal(err)
		}
		if enc == EncodingJSON && !strings.Contains(string(data), `"rejectedSpans":"2"`) {
			t.Errorf("JSON response %s lacks rejectedSpans", data)
		}
	}
}

// FuzzDecodeOTLP feeds arbitrary bodies, plain or gzip, in both
// encodings, through everything the door does before storing: nothing may
// panic, and every span that decodes normalises to a valid event that
// encodes as JSON.
func FuzzDecodeOTLP(f *testing.F) {
	seed, _ := proto.Marshal(request("run_1", str("gen_ai.operation.name", "chat"), num("gen_ai.usage.input_tokens", 3)))
	f.Add(seed, false, false)
	f.Add(gz(f, seed), false, true)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"x","status":{"code":2}}]}]}]}`), true, false)
	f.Add([]byte{0x1f, 0x8b, 0x08}, true, true)
	f.Fuzz(func(t *testing.T, data []byte, isJSON, isGzip bool) {
		enc, ce := EncodingProtobuf, ""
		if isJSON {
			enc = EncodingJSON
		}
		if isGzip {
			ce = "gzip"
		}
		body, err := ReadOTLPBody(bytes.NewReader(data), ce)
		if err != nil {
			if !errors.Is(err, ErrOTLPMalformed) && !errors.Is(err, ErrOTLPTooLarge) {
				t.Fatalf("ReadOTLPBody: unexpected error kind %v", err)
			}
			return
		}
		req, err := DecodeOTLP(body, enc)
		if err != nil {
			if !errors.Is(err, ErrOTLPMalformed) {
				t.Fatalf("DecodeOTLP: unexpected error kind %v", err)
			}
			return
		}
		spans, bad := FlattenSpans(req)
		if len(spans)+len(bad) != CountSpans(req) {
			t.Fatalf("%d spans + %d refused, want %d", len(spans), len(bad), CountSpans(req))
		}
		for _, s := range spans {
			e := Normalize(s, SpanAttrMapping{})
			if err := e.Validate(); err != nil && !strings.Contains(err.Error(), "over") {
				t.Fatalf("Normalize(%+v) = invalid event: %v", s, err)
			}
			raw, err := json.Marshal(e)
			if err != nil {
				t.Fatalf("the event of span %q does not encode: %v", s.Name, err)
			}
			if strings.Contains(string(raw), `\u0000`) {
				t.Fatalf("the event of span %q holds a NUL, which the store refuses", s.Name)
			}
		}
		// The fast paths agree with the code they replaced on whatever
		// decodes.
		checkSpans(t, req)
	})
}

func TestFlattenSpans(t *testing.T) {
	req := request("run_1", str("a", "span wins"), num("n", 3))
	req.ResourceSpans[0].Resource.Attributes = append(req.ResourceSpans[0].Resource.Attributes, str("a", "resource"))
	req.ResourceSpans[0].ScopeSpans[0].Spans = append(req.ResourceSpans[0].ScopeSpans[0].Spans,
		&tracepb.Span{Name: "no ids"},
		&tracepb.Span{TraceId: testTraceID, SpanId: testSpanID, Name: "bad run", Attributes: []*commonpb.KeyValue{num(RunIDAttribute, 5)}})
	spans, bad := FlattenSpans(req)
	if len(spans) != 1 || len(bad) != 2 {
		t.Fatalf("FlattenSpans = %d spans, %d refused; want 1 and 2 (%v)", len(spans), len(bad), bad)
	}
	if got := []int{bad[0].Index, bad[1].Index}; !cmp.Equal(got, []int{1, 2}) {
		t.Errorf("refused indexes = %v, want [1 2]", got)
	}
	s := spans[0]
	if s.RunID != "run_1" || s.Attributes["a"] != "span wins" || s.Attributes["n"] != int64(3) {
		t.Errorf("span = %+v, want run_1 with the span's attributes over the resource's", s)
	}
	if s.Key != "5b8efff798038103d269b633813fc60c/eee19b7ec3c1b174" {
		t.Errorf("Key = %q", s.Key)
	}
}
