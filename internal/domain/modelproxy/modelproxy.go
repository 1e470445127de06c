// Package modelproxy holds the records of the control plane's model proxy
// that the worker and the models service share: what a run-scoped proxy
// token allows (Grant), what the calls made with it cost (Usage), and the
// names a harness job finds its model access under. The models service
// mints, opens and meters the tokens; the worker asks it for them through
// an interface of its own (activities.ModelAccess), naming these types.
package modelproxy

import "time"

// Environment of a harness job that calls a model binding. The token is
// not among them: it is the secrets file's entry SecretToken (the file
// SVC_SECRETS_FILE names), never in the environment or argv.
const (
	// EnvBaseURL is the proxy's API root (OpenAI wire format: post to it
	// + "/chat/completions"); not a secret.
	EnvBaseURL = "SVC_MODEL_BASE_URL"
	// EnvModel is the binding's name.
	EnvModel = "SVC_MODEL"
	// SecretToken is the secrets-file entry holding the run-scoped proxy
	// token, sent as "Authorization: Bearer <token>".
	SecretToken = "SVC_MODEL_TOKEN"
)

// EventHarnessModelAccess records, per attempt, whether a harness job was
// given model access: the binding, granted or not, and why not.
const EventHarnessModelAccess = "harness.model_access"

// Grant is what a proxy token allows: calls to one binding for one judge
// execution of one run (JudgeID), or for one attempt of a run's harness
// job (Harness), until ExpiresAt.
type Grant struct {
	Workspace string `json:"workspace"`
	Model     string `json:"model"` // the binding's name
	JudgeID   string `json:"judgeId,omitempty"`
	// Harness is the harness (id@version) of a harness grant, and Attempt
	// the run's attempt it was minted for.
	Harness   string    `json:"harness,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	RunID     string    `json:"runId"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Hash is the hex SHA-256 of the token.
	Hash string `json:"hash"`
}

// Actor names who holds the grant: "judge:<id>" or "harness:<id@version>".
func (g Grant) Actor() string {
	if g.Harness != "" {
		return "harness:" + g.Harness
	}
	return "judge:" + g.JudgeID
}

// Usage sums the calls made with one token.
type Usage struct {
	Calls        int     `json:"calls"`
	InputTokens  int64   `json:"inputTokens"`
	OutputTokens int64   `json:"outputTokens"`
	CostUSD      float64 `json:"costUsd"`
}
