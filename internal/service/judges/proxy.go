package judges

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
	"svc/internal/platform/reqid"
	"svc/internal/service/models"
	"svc/store"
)

// The model proxy of code judges (issue 17, spec §2.5): a code judge that
// names a model calls it with the run-scoped token the worker minted for
// its execution (models.MintProxyToken), in place of an API key, in the
// OpenAI chat completions wire format. The proxy checks the token, forces
// the bound model and streaming off, adds the real key from the workspace
// secret store, forwards the call, and records its tokens and cost per
// judge (event judge.model_call). The key never reaches the judge's
// environment, argv, logs or records.
//
// The same proxy serves harness jobs (POST /model-proxy/v1/chat/completions,
// spec §7): a harness declaring model {ref} gets a token minted for one
// attempt of its run (in its secrets file, never its environment), its
// calls are recorded as harness.model_call and their cost is added to the
// run's usage.costUsd when the attempt ends. Either path takes either
// kind of token; /judge-proxy/v1 stays for the judges that know it.

// EventJudgeModelCall is the event the proxy appends for each judge call.
const EventJudgeModelCall = "judge.model_call"

// EventHarnessModelCall is the event the proxy appends for each call of a
// harness job.
const EventHarnessModelCall = "harness.model_call"

// maxProxyAnswer bounds the model server's answer the proxy relays.
const maxProxyAnswer = 16 << 20

// ProxyAnswer is the model server's answer as the proxy relays it: its
// status and its JSON body, with the key masked.
type ProxyAnswer struct {
	Status int
	Body   []byte
}

// Proxy serves one model call through the run-scoped proxy: authorization
// is the request's Authorization header (a bearer run-scoped token, not a
// principal), body the chat completion request.
func (s *Service) Proxy(ctx context.Context, authorization string, body io.Reader) (ProxyAnswer, error) {
	token, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok {
		return ProxyAnswer{}, &derrors.Public{Kind: derrors.ErrUnauthenticated, Msg: "the model proxy takes the run-scoped token a judge (OPENAI_API_KEY) or a harness job (the SVC_MODEL_TOKEN entry of its SVC_SECRETS_FILE) was given, as a bearer token"}
	}
	ms := s.o.Models
	g, err := ms.OpenProxyToken(ctx, strings.TrimSpace(token))
	if err != nil {
		return ProxyAnswer{}, err
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return ProxyAnswer{}, err
	}
	var call map[string]json.RawMessage
	if err := json.Unmarshal(raw, &call); err != nil {
		return ProxyAnswer{}, derrors.Invalidf("the body must be a JSON object: a chat completion request")
	}
	if _, ok := call["messages"]; !ok {
		return ProxyAnswer{}, derrors.Invalidf("messages is required: the chat completion's messages")
	}
	if st, ok := call["stream"]; ok && string(st) == "true" {
		return ProxyAnswer{}, derrors.Invalidf("stream: streaming is off in the model proxy; send stream false or leave it out")
	}
	access, missing, err := ms.Resolve(ctx, g.Workspace, g.Model)
	if err != nil {
		return ProxyAnswer{}, err
	}
	if missing != "" {
		return ProxyAnswer{}, &derrors.Public{Kind: derrors.ErrUnavailable, Msg: missing}
	}
	b := access.Binding
	call["model"], _ = json.Marshal(b.Model)
	call["stream"] = json.RawMessage("false")
	out, err := json.Marshal(call)
	if err != nil {
		return ProxyAnswer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.ChatCompletionsURL(), bytes.NewReader(out))
	if err != nil {
		return ProxyAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+access.Key())
	resp, err := access.Client.Do(req)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), access.Key(), "[key]")
		return ProxyAnswer{}, &derrors.Public{Kind: derrors.ErrUnavailable, Msg: fmt.Sprintf("model %s (%s at %s) could not be reached: %s", b.Name, b.Model, b.BaseURL, clipText400(msg))}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxProxyAnswer))
	if err != nil {
		return ProxyAnswer{}, &derrors.Public{Kind: derrors.ErrUnavailable, Msg: fmt.Sprintf("model %s (%s at %s) broke off its answer", b.Name, b.Model, b.BaseURL)}
	}
	answer = bytes.ReplaceAll(answer, []byte(access.Key()), []byte("[key]"))
	s.recordModelCall(ctx, g, b, resp.StatusCode, answer)
	return ProxyAnswer{Status: resp.StatusCode, Body: answer}, nil
}

// recordModelCall appends the call's event: the run, the judge, the
// binding, the status and the tokens and cost the server reported. A
// failed write is logged, not returned: the judge already has its answer.
func (s *Service) recordModelCall(ctx context.Context, g models.ProxyGrant, b models.Binding, status int, answer []byte) {
	var u struct {
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(answer, &u)
	data := map[string]any{"runId": g.RunID, "model": b.Name, "status": status,
		"inputTokens": u.Usage.PromptTokens, "outputTokens": u.Usage.CompletionTokens}
	typ := EventJudgeModelCall
	if g.Harness != "" {
		typ = EventHarnessModelCall
		data["harness"], data["attempt"] = g.Harness, g.Attempt
	} else {
		data["judge"] = g.JudgeID
	}
	call := models.ProxyCall{Status: status, InputTokens: u.Usage.PromptTokens, OutputTokens: u.Usage.CompletionTokens}
	if cost, ok := b.Cost(u.Usage.PromptTokens, u.Usage.CompletionTokens); ok {
		data["costUsd"] = cost
		call.CostUSD = &cost
	}
	if g.Harness != "" {
		// Metered under the grant: the attempt adds the sum to the run's
		// usage.costUsd when it ends.
		if err := s.o.Models.RecordProxyCall(ctx, g, call); err != nil {
			s.o.Logger.LogAttrs(ctx, slog.LevelWarn, "metering a harness's model call; the run's cost will miss it", reqid.Attr(ctx),
				slog.String("workspace", g.Workspace), slog.String("run", g.RunID), slog.String("harness", g.Harness), slog.String("error", err.Error()))
		}
	}
	raw, _ := json.Marshal(data)
	_, err := s.o.Events.AppendEvent(ctx, store.Event{ID: eval.NewID(typ), Workspace: g.Workspace, Type: typ,
		Subject: "run:" + g.RunID, Actor: g.Actor(), Data: raw, CreatedAt: s.o.Now().UTC()})
	if err != nil {
		s.o.Logger.LogAttrs(ctx, slog.LevelWarn, "recording a model call of the proxy", reqid.Attr(ctx),
			slog.String("workspace", g.Workspace), slog.String("run", g.RunID), slog.String("actor", g.Actor()), slog.String("error", err.Error()))
	}
	s.o.Logger.LogAttrs(ctx, slog.LevelInfo, "model call through the proxy", reqid.Attr(ctx), slog.String("workspace", g.Workspace),
		slog.String("run", g.RunID), slog.String("actor", g.Actor()), slog.String("model", b.Name), slog.Int("status", status),
		slog.Int64("inputTokens", u.Usage.PromptTokens), slog.Int64("outputTokens", u.Usage.CompletionTokens))
}

// clipText400 bounds a transport error quoted to the judge.
func clipText400(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
