package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzMCPRequest posts arbitrary bodies to /mcp, through the real handler
// as the dev principal, with one of a few header sets (picked by the fuzzed
// byte): inside a live session or not, with or without the Accept and
// Content-Type the transport demands. No body may cause a 5xx or a panic,
// and every answer is JSON (the one error shape for a refusal, a JSON-RPC
// message otherwise), an event stream of JSON-RPC messages, or empty.
func FuzzMCPRequest(f *testing.F) {
	e := newEnv(f)
	cs, err := connectMCPTB(f, e)
	if err != nil {
		f.Fatalf("connect: %v", err)
	}
	accept := header{"Accept", "application/json, text/event-stream"}
	session := header{"Mcp-Session-Id", cs.ID()}
	version := header{"Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion}
	variants := [][]header{
		{accept, session, version},
		{accept},
		{accept, {"Mcp-Session-Id", "unknown"}, version},
		{session, version},
		{accept, session, version, {"Content-Type", "text/plain"}},
	}
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_run","arguments":{"id":"r-1"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":null}}`,
		`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":6,"result":{}}`,
		`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":8,"method":"ping"}`, `{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		``, `null`, `[]`, `{}`, `{"jsonrpc":`, "\xff", `{"jsonrpc":"2.0","id":9,"method":"\u0000"}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i%len(variants)), []byte(s))
		f.Add(uint8((i+1)%len(variants)), []byte(s))
	}
	h := e.srv.Handler()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		hs := variants[int(which)%len(variants)]
		_, res := fuzzServe(t, h, fuzzRoute{method: http.MethodPost, path: "/mcp", hs: hs}, body)
		got := res.Body
		mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
		switch {
		case len(got) == 0 && res.Status < 300:
			// 202 for a notification or a response.
		case mt == "application/json" && res.Status >= 400 && !bytes.Contains(got, []byte(`"jsonrpc"`)):
			if res.ErrorInfo(t).Code == "" {
				t.Fatalf("POST /mcp %q: status %d with an error without a code: %s", body, res.Status, got)
			}
		case mt == "application/json":
			if !json.Valid(got) {
				t.Fatalf("POST /mcp %q: status %d with invalid JSON: %s", body, res.Status, got)
			}
		case mt == "text/event-stream" && res.Status == http.StatusOK:
			checkEventStream(t, got)
		default:
			t.Fatalf("POST /mcp %q: status %d, Content-Type %q, body %q: want JSON, an event stream or nothing", body, res.Status, mt, got)
		}
	})
}

// checkEventStream fails t unless every data line of the stream is JSON.
func checkEventStream(t *testing.T, stream []byte) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" && !json.Valid([]byte(data)) {
			t.Fatalf("event stream data that is not JSON: %q in %s", data, stream)
		}
	}
}

// connectMCPTB connects the SDK's client to the env's /mcp as the dev
// principal, for a fuzzer (connectMCP takes a *testing.T).
func connectMCPTB(tb testing.TB, e *testEnv) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "svc-fuzz", Version: "1"}, nil)
	cs, err := client.Connect(tb.Context(), &mcp.StreamableClientTransport{
		Endpoint: e.client.URL + "/mcp", HTTPClient: e.client.HTTP, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err == nil {
		tb.Cleanup(func() { cs.Close() })
	}
	return cs, err
}
