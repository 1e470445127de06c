package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
	"svc/internal/platform/reqid"
	"svc/internal/service/models"
	"svc/store"
)

// The model proxy of code judges (issue 17, spec §2.5): a code judge that
// names a model calls it here with the run-scoped token the worker minted
// for its execution (models.MintProxyToken), in place of an API key, in
// the OpenAI chat completions wire format. The proxy checks the token,
// forces the bound model and streaming off, adds the real key from the
// workspace secret store, forwards the call, and records its tokens and
// cost per judge (event judge.model_call). The key never reaches the
// judge's environment, argv, logs or records. The route is public in the
// route table because the token, not a principal, authenticates it; it
// is not an agent tool.
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

func (s *Server) judgeProxyRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/judge-proxy/v1/chat/completions", Action: auth.Public,
			Summary: "A code judge's model call, through the run-scoped proxy", Handler: s.judgeProxy},
		{Method: http.MethodPost, Path: "/model-proxy/v1/chat/completions", Action: auth.Public,
			Summary: "A harness job's (or a code judge's) model call, through the run-scoped proxy", Handler: s.judgeProxy},
	}
}

func (s *Server) judgeProxy(c echo.Context) error {
	ctx := c.Request().Context()
	token, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
	if !ok {
		return &derrors.Public{Kind: derrors.ErrUnauthenticated, Msg: "the model proxy takes the run-scoped token a judge (OPENAI_API_KEY) or a harness job (the SVC_MODEL_TOKEN entry of its SVC_SECRETS_FILE) was given, as a bearer token"}
	}
	ms := s.models
	g, err := ms.OpenProxyToken(ctx, strings.TrimSpace(token))
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return derrors.Invalidf("the body must be a JSON object: a chat completion request")
	}
	if _, ok := body["messages"]; !ok {
		return derrors.Invalidf("messages is required: the chat completion's messages")
	}
	if st, ok := body["stream"]; ok && string(st) == "true" {
		return derrors.Invalidf("stream: streaming is off in the model proxy; send stream false or leave it out")
	}
	access, missing, err := ms.Resolve(ctx, g.Workspace, g.Model)
	if err != nil {
		return err
	}
	if missing != "" {
		return &derrors.Public{Kind: derrors.ErrUnavailable, Msg: missing}
	}
	b := access.Binding
	body["model"], _ = json.Marshal(b.Model)
	body["stream"] = json.RawMessage("false")
	out, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.ChatCompletionsURL(), bytes.NewReader(out))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+access.Key())
	resp, err := access.Client.Do(req)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), access.Key(), "[key]")
		return &derrors.Public{Kind: derrors.ErrUnavailable, Msg: fmt.Sprintf("model %s (%s at %s) could not be reached: %s", b.Name, b.Model, b.BaseURL, clipText400(msg))}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxProxyAnswer))
	if err != nil {
		return &derrors.Public{Kind: derrors.ErrUnavailable, Msg: fmt.Sprintf("model %s (%s at %s) broke off its answer", b.Name, b.Model, b.BaseURL)}
	}
	answer = bytes.ReplaceAll(answer, []byte(access.Key()), []byte("[key]"))
	s.recordJudgeModelCall(c, ms, g, b, resp.StatusCode, answer)
	return c.Blob(resp.StatusCode, echo.MIMEApplicationJSON, answer)
}

// recordJudgeModelCall appends the call's event: the run, the judge, the
// binding, the status and the tokens and cost the server reported. A
// failed write is logged, not returned: the judge already has its answer.
func (s *Server) recordJudgeModelCall(c echo.Context, ms *models.Service, g models.ProxyGrant, b models.Binding, status int, answer []byte) {
	ctx := c.Request().Context()
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
		if err := ms.RecordProxyCall(ctx, g, call); err != nil {
			s.logger.LogAttrs(ctx, slog.LevelWarn, "metering a harness's model call; the run's cost will miss it", reqid.Attr(ctx),
				slog.String("workspace", g.Workspace), slog.String("run", g.RunID), slog.String("harness", g.Harness), slog.String("error", err.Error()))
		}
	}
	raw, _ := json.Marshal(data)
	_, err := s.store.AppendEvent(ctx, store.Event{ID: eval.NewID(typ), Workspace: g.Workspace, Type: typ,
		Subject: "run:" + g.RunID, Actor: g.Actor(), Data: raw, CreatedAt: s.now().UTC()})
	if err != nil {
		s.logger.LogAttrs(ctx, slog.LevelWarn, "recording a model call of the proxy", reqid.Attr(ctx),
			slog.String("workspace", g.Workspace), slog.String("run", g.RunID), slog.String("actor", g.Actor()), slog.String("error", err.Error()))
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, "model call through the proxy", reqid.Attr(ctx), slog.String("workspace", g.Workspace),
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
