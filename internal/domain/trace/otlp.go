package trace

import (
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The OTLP/HTTP door's decoding (spec §4.2, POST /v1/traces): the body is
// an ExportTraceServiceRequest in binary protobuf or in the OTLP JSON
// mapping, optionally gzip-compressed. Decoding is the official generated
// code of go.opentelemetry.io/proto/otlp (proto.Unmarshal, protojson); the
// one thing OTLP JSON does differently from protojson, hex trace and span
// ids, is fixed on the decoded message (fixJSONIDs).

// OTLP encodings of the door.
const (
	EncodingProtobuf = "application/x-protobuf"
	EncodingJSON     = "application/json"
)

// MaxOTLPBytes bounds an export request once decompressed: a gzip bomb is
// refused by size (ErrOTLPTooLarge) before it is decoded.
const MaxOTLPBytes = 32 << 20

// Decoding errors. ErrOTLPTooLarge is the client's payload past
// MaxOTLPBytes; ErrOTLPEncoding an unsupported Content-Type or
// Content-Encoding; ErrOTLPMalformed a body that does not decode.
var (
	ErrOTLPTooLarge  = errors.New("the decompressed OTLP request is too large")
	ErrOTLPEncoding  = errors.New("unsupported OTLP encoding")
	ErrOTLPMalformed = errors.New("malformed OTLP request")
)

// OTLPEncoding returns the encoding a Content-Type header names
// (EncodingProtobuf or EncodingJSON), or ErrOTLPEncoding.
func OTLPEncoding(contentType string) (string, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", fmt.Errorf("%w: Content-Type %q; send %s or %s", ErrOTLPEncoding, clip(contentType, 100), EncodingProtobuf, EncodingJSON)
	}
	switch strings.ToLower(mt) {
	case EncodingProtobuf:
		return EncodingProtobuf, nil
	case EncodingJSON:
		return EncodingJSON, nil
	}
	return "", fmt.Errorf("%w: Content-Type %q; send %s or %s", ErrOTLPEncoding, clip(mt, 100), EncodingProtobuf, EncodingJSON)
}

// ReadOTLPBody reads a request body sent with contentEncoding ("" or
// "identity" for none, or "gzip"), decompressed, at most MaxOTLPBytes.
// An error of body itself is returned as it is; any other failure to
// decompress is ErrOTLPMalformed.
func ReadOTLPBody(body io.Reader, contentEncoding string) ([]byte, error) {
	src := &sourceReader{r: body}
	var r io.Reader = src
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, src.classify(err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("%w: Content-Encoding %q; send gzip or none", ErrOTLPEncoding, clip(contentEncoding, 100))
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxOTLPBytes+1))
	if err != nil {
		return nil, src.classify(err)
	}
	if len(data) > MaxOTLPBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrOTLPTooLarge, MaxOTLPBytes)
	}
	return data, nil
}

// sourceReader remembers the error of the body it reads, so that a
// decompression error can be told from a failure to read the body.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// classify is err as ReadOTLPBody returns it: the body's own error, or
// ErrOTLPMalformed for what the decompressor made of the bytes.
func (s *sourceReader) classify(err error) error {
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("%w: the gzip stream is broken: %v", ErrOTLPMalformed, err)
}

// DecodeOTLP decodes an ExportTraceServiceRequest in encoding.
func DecodeOTLP(data []byte, encoding string) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	switch encoding {
	case EncodingProtobuf:
		if err := proto.Unmarshal(data, req); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOTLPMalformed, err)
		}
	case EncodingJSON:
		// Unknown fields are ignored, as OTLP asks of receivers.
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, req); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOTLPMalformed, err)
		}
		if err := fixJSONIDs(req); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: %q", ErrOTLPEncoding, encoding)
	}
	return req, nil
}

// EncodeOTLPResponse encodes the door's answer in encoding.
func EncodeOTLPResponse(resp *coltracepb.ExportTraceServiceResponse, encoding string) ([]byte, error) {
	if encoding == EncodingJSON {
		return protojson.Marshal(resp)
	}
	return proto.Marshal(resp)
}

// fixJSONIDs turns the trace and span ids of a JSON request back into
// bytes. OTLP JSON writes them as hex (16 and 8 bytes: 32 and 16 hex
// digits), which protojson, reading a bytes field, took for base64: hex
// digits are base64 digits and 32 or 16 of them carry no padding, so the
// base64 encoding of what protojson produced is exactly the hex text. An
// id that really was base64 (24 or 12 characters with padding) decodes to
// 16 or 8 bytes and is kept.
func fixJSONIDs(req *coltracepb.ExportTraceServiceRequest) error {
	fix := func(b []byte, size int, what string) ([]byte, error) {
		if len(b) == 0 || len(b) == size {
			return b, nil
		}
		if len(b) != size*3/2 { // 2*size hex digits read as base64
			return nil, fmt.Errorf("%w: %s is neither %d bytes of hex nor of base64", ErrOTLPMalformed, what, size)
		}
		text := base64.StdEncoding.EncodeToString(b)
		id, err := hex.DecodeString(text)
		if err != nil || len(id) != size {
			return nil, fmt.Errorf("%w: %s %q is not %d bytes of hex", ErrOTLPMalformed, what, clip(text, 64), size)
		}
		return id, nil
	}
	var err error
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				if sp.TraceId, err = fix(sp.TraceId, 16, "traceId"); err != nil {
					return err
				}
				if sp.SpanId, err = fix(sp.SpanId, 8, "spanId"); err != nil {
					return err
				}
				if sp.ParentSpanId, err = fix(sp.ParentSpanId, 8, "parentSpanId"); err != nil {
					return err
				}
				for _, l := range sp.GetLinks() {
					if l.TraceId, err = fix(l.TraceId, 16, "link traceId"); err != nil {
						return err
					}
					if l.SpanId, err = fix(l.SpanId, 8, "link spanId"); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// CountSpans is the number of spans of req.
func CountSpans(req *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}

// keyLen is the length of a span's key: 32 hex digits, '/', 16.
const keyLen = 32 + 1 + 16

// appendSpanKey appends the identity of a span within its trajectory,
// trace id and span id in hex (TraceID/SpanID), so that a retried export
// stores nothing twice. The span's ids are 16 and 8 bytes.
func appendSpanKey(dst []byte, sp *tracepb.Span) []byte {
	dst = hex.AppendEncode(dst, sp.GetTraceId())
	dst = append(dst, '/')
	return hex.AppendEncode(dst, sp.GetSpanId())
}
