// Package models holds a workspace's model bindings: the models its judges
// may call (a provider, a base URL, a model name and the name of the
// workspace secret holding the key). A judge's model ({ref} of a code
// judge, the model name of a legacy model judge) names a binding.
//
// Bindings are stored in the registry table under the store kind
// "model-binding", which is not a registry.Kind: they are workspace
// settings, replaced in place, not versioned specs. A PUT tombstones the
// live row and writes the new one, so exactly one version of a binding is
// live. Keys are never stored here: Resolve opens the named secret at
// call time, checks that its allowedHosts admit the base URL's host, and
// hands the value to the caller only.
package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/store"
)

// StoreKind is the registry table kind of a model binding.
const StoreKind = "model-binding"

// Providers.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Default base URLs. openai is the OpenAI chat completions API root;
// anthropic is the root of Anthropic's API (the Anthropic SDK's base),
// under which model judges post v1/messages and the model proxy posts
// v1/chat/completions (Anthropic's OpenAI-compatible endpoint). An
// anthropic binding declared with ".../v1" (the default before the
// Messages API) works unchanged: ChatCompletionsURL and the judges'
// client strip the "/v1".
var defaultBaseURL = map[string]string{
	ProviderOpenAI:    "https://api.openai.com/v1",
	ProviderAnthropic: "https://api.anthropic.com",
}

// Binding is a workspace's declaration of one model its judges may use.
type Binding struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// BaseURL is the API root: for openai "https://api.openai.com/v1",
	// posted to at BaseURL + "/chat/completions"; for anthropic
	// "https://api.anthropic.com" (a trailing "/v1" is accepted), posted
	// to at BaseURL + "/v1/messages" (ChatCompletionsURL for the proxy).
	BaseURL string `json:"baseUrl"`
	Model   string `json:"model"`
	// KeySecret names the workspace secret holding the API key; its
	// allowedHosts must admit BaseURL's host.
	KeySecret string `json:"keySecret"`
	// Prices in USD per million tokens, to record a judge call's cost;
	// unset records tokens only.
	InputUSDPerMTok  *float64 `json:"inputUsdPerMTok,omitempty"`
	OutputUSDPerMTok *float64 `json:"outputUsdPerMTok,omitempty"`
	// TimeoutSec bounds one model call; 0 means DefaultTimeout.
	TimeoutSec int       `json:"timeoutSec,omitempty"`
	UpdatedAt  time.Time `json:"updatedAt"`
	UpdatedBy  string    `json:"updatedBy,omitempty"`
}

// DefaultTimeout bounds a model call whose binding sets no timeoutSec.
const DefaultTimeout = 120 * time.Second

// Timeout is the binding's call timeout.
func (b Binding) Timeout() time.Duration {
	if b.TimeoutSec > 0 {
		return time.Duration(b.TimeoutSec) * time.Second
	}
	return DefaultTimeout
}

// Cost is the USD cost of a call, and false when the binding has no
// prices.
func (b Binding) Cost(in, out int64) (float64, bool) {
	if b.InputUSDPerMTok == nil && b.OutputUSDPerMTok == nil {
		return 0, false
	}
	var c float64
	if b.InputUSDPerMTok != nil {
		c += float64(in) * *b.InputUSDPerMTok / 1e6
	}
	if b.OutputUSDPerMTok != nil {
		c += float64(out) * *b.OutputUSDPerMTok / 1e6
	}
	return c, true
}

// Setting is the operator setting whose allow list the model guard reads:
// the webhook guard's (SVC_WEBHOOK_ALLOW), so one list admits the
// service's private outbound targets.
const Setting = "SVC_WEBHOOK_ALLOW"

// NewGuard builds the address guard model calls dial through from allow
// (the value of SVC_WEBHOOK_ALLOW).
func NewGuard(allow string) (*netguard.Guard, error) {
	return netguard.New(allow, netguard.Names{Setting: Setting, Field: "baseUrl", Target: "model server",
		UserinfoHint: "put the API key in the workspace secret named by keySecret"})
}

// Store is what the models service uses of the store: model bindings and
// proxy tokens (registry rows) and the secrets that hold keys.
type Store interface {
	store.Registry
	store.Secrets
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
}

// Service reads and writes bindings and opens their keys.
type Service struct {
	Store  Store
	Sealer *secrets.Sealer // nil: no SVC_SECRET_KEY, every key is missing
	Guard  *netguard.Guard // nil: no check (tests only)
	Now    func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// PutRequest is the body of PUT /workspace/models/:name.
type PutRequest struct {
	Provider         string   `json:"provider"`
	BaseURL          string   `json:"baseUrl"`
	Model            string   `json:"model"`
	KeySecret        string   `json:"keySecret"`
	InputUSDPerMTok  *float64 `json:"inputUsdPerMTok"`
	OutputUSDPerMTok *float64 `json:"outputUsdPerMTok"`
	TimeoutSec       int      `json:"timeoutSec"`
}

// Put declares (or replaces) the binding name of p's workspace.
func (s *Service) Put(ctx context.Context, p auth.Principal, name string, r PutRequest) (Binding, error) {
	if err := secrets.ValidName(name); err != nil {
		return Binding{}, derrors.Invalidf("model name: %v", strings.TrimPrefix(err.Error(), "invalid: "))
	}
	b := Binding{Name: name, Provider: r.Provider, BaseURL: strings.TrimRight(strings.TrimSpace(r.BaseURL), "/"), Model: r.Model,
		KeySecret: r.KeySecret, InputUSDPerMTok: r.InputUSDPerMTok, OutputUSDPerMTok: r.OutputUSDPerMTok,
		TimeoutSec: r.TimeoutSec, UpdatedAt: s.now(), UpdatedBy: p.Subject}
	def, ok := defaultBaseURL[b.Provider]
	if !ok {
		return Binding{}, derrors.Invalidf("provider: %q must be %q or %q", clip(b.Provider), ProviderOpenAI, ProviderAnthropic)
	}
	if b.BaseURL == "" {
		b.BaseURL = def
	}
	if strings.TrimSpace(b.Model) == "" || strings.ContainsFunc(b.Model, unicode.IsControl) || len(b.Model) > 256 {
		return Binding{}, derrors.Invalidf("model: required, the provider's model name (at most 256 characters, no control characters)")
	}
	if err := secrets.ValidName(b.KeySecret); err != nil {
		return Binding{}, derrors.Invalidf("keySecret: name the workspace secret holding the API key (PUT /secrets/:name): %v", strings.TrimPrefix(err.Error(), "invalid: "))
	}
	for _, x := range []*float64{b.InputUSDPerMTok, b.OutputUSDPerMTok} {
		if x != nil && !(*x >= 0 && *x < 1e6) {
			return Binding{}, derrors.Invalidf("inputUsdPerMTok and outputUsdPerMTok must be between 0 and 1000000")
		}
	}
	if b.TimeoutSec < 0 || b.TimeoutSec > 3600 {
		return Binding{}, derrors.Invalidf("timeoutSec must be between 0 (default %s) and 3600", DefaultTimeout)
	}
	u, err := url.Parse(b.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Binding{}, derrors.Invalidf("baseUrl: want an absolute http(s) URL without credentials, query or fragment, such as %s", def)
	}
	if s.Guard != nil {
		if err := s.Guard.CheckURL(ctx, b.BaseURL); err != nil {
			return Binding{}, err
		}
	}
	spec, err := json.Marshal(b)
	if err != nil {
		return Binding{}, fmt.Errorf("models.Put: %w", err)
	}
	sum := sha256.Sum256(spec)
	d := hex.EncodeToString(sum[:])
	err = s.Store.Transact(ctx, func(tx store.Tx) error {
		if e, err := tx.GetEntity(ctx, StoreKind, p.Workspace, name); err == nil {
			for _, v := range e.Versions {
				if err := tx.TombstoneVersion(ctx, StoreKind, p.Workspace, name, v.Version, b.UpdatedAt); err != nil {
					return err
				}
			}
		} else if !errors.Is(err, derrors.ErrNotFound) {
			return err
		}
		_, _, err := tx.RegisterVersion(ctx, store.EntityVersion{Kind: StoreKind, Owner: p.Workspace, ID: name,
			Version: d[:16], Digest: "sha256:" + d, Spec: spec, CreatedBy: p.Subject, CreatedAt: b.UpdatedAt}, "", nil)
		return err
	})
	if err != nil {
		return Binding{}, err
	}
	return b, nil
}

// Get returns the binding name of workspace, or ErrNotFound.
func (s *Service) Get(ctx context.Context, workspace, name string) (Binding, error) {
	e, err := s.Store.GetEntity(ctx, StoreKind, workspace, name)
	if err != nil {
		return Binding{}, err
	}
	if len(e.Versions) == 0 {
		return Binding{}, derrors.NotFoundf("model %s", name)
	}
	v, err := s.Store.GetVersion(ctx, StoreKind, workspace, name, e.Versions[len(e.Versions)-1].Version)
	if err != nil {
		return Binding{}, err
	}
	var b Binding
	if err := json.Unmarshal(v.Spec, &b); err != nil {
		return Binding{}, fmt.Errorf("models.Get(%q, %q): %w", workspace, name, err)
	}
	return b, nil
}

// List returns the bindings of p's workspace, by name.
func (s *Service) List(ctx context.Context, p auth.Principal) ([]Binding, error) {
	es, err := s.Store.ListEntities(ctx, StoreKind, []string{p.Workspace})
	if err != nil {
		return nil, err
	}
	out := []Binding{}
	for _, e := range es {
		b, err := s.Get(ctx, p.Workspace, e.ID)
		if errors.Is(err, derrors.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Delete removes the binding name; an unknown name is ErrNotFound.
func (s *Service) Delete(ctx context.Context, p auth.Principal, name string) error {
	return s.Store.Transact(ctx, func(tx store.Tx) error {
		e, err := tx.GetEntity(ctx, StoreKind, p.Workspace, name)
		if err != nil {
			return err
		}
		for _, v := range e.Versions {
			if err := tx.TombstoneVersion(ctx, StoreKind, p.Workspace, name, v.Version, s.now()); err != nil {
				return err
			}
		}
		return nil
	})
}

// Access is a resolved binding with its key: what one model call needs.
// Its String form never shows the key.
type Access struct {
	Binding Binding
	key     string
	Client  *http.Client
}

// Key is the API key; give it to the model client only.
func (a Access) Key() string { return a.key }

// String describes the access without its key.
func (a Access) String() string {
	return fmt.Sprintf("model %s (%s %s at %s)", a.Binding.Name, a.Binding.Provider, a.Binding.Model, a.Binding.BaseURL)
}

// GoString is String, so %#v cannot print the key either.
func (a Access) GoString() string { return a.String() }

// Resolve returns what a call to the model name of workspace needs. A
// binding, key or binding of the key to the host that is missing is a
// missing reason (the judge's skip reason, words that say what to fix),
// not an error; errors are infrastructure failures.
func (s *Service) Resolve(ctx context.Context, workspace, name string) (a Access, missing string, err error) {
	b, err := s.Get(ctx, workspace, name)
	if errors.Is(err, derrors.ErrNotFound) {
		return Access{}, fmt.Sprintf("the workspace declares no model %q; an admin declares it with PUT /workspace/models/%s", name, name), nil
	}
	if err != nil {
		return Access{}, "", err
	}
	sec, err := s.Store.GetSecret(ctx, workspace, b.KeySecret)
	if errors.Is(err, derrors.ErrNotFound) {
		return Access{}, fmt.Sprintf("the key of model %q, secret %q, is not in the workspace secret store; PUT /secrets/%s first", name, b.KeySecret, b.KeySecret), nil
	}
	if err != nil {
		return Access{}, "", err
	}
	if err := netguard.CheckBound(sec.AllowedHosts, b.BaseURL); err != nil {
		var ub *netguard.UnboundError
		if errors.As(err, &ub) {
			ub.Field, ub.Secret = "keySecret", b.KeySecret
		}
		return Access{}, fmt.Sprintf("model %q: %v", name, err), nil
	}
	if s.Sealer == nil {
		return Access{}, fmt.Sprintf("the key of model %q cannot be opened: SVC_SECRET_KEY is not set", name), nil
	}
	v, err := s.Sealer.Open(workspace, b.KeySecret, sec.Ciphertext)
	if err != nil {
		return Access{}, fmt.Sprintf("the key of model %q, secret %q, cannot be opened with the current SVC_SECRET_KEY; store it again", name, b.KeySecret), nil
	}
	var client *http.Client
	if s.Guard != nil {
		client = s.Guard.Client(b.Timeout())
	} else {
		client = &http.Client{Timeout: b.Timeout()}
	}
	return Access{Binding: b, key: string(v), Client: client}, "", nil
}

// clip bounds a value quoted in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Version is the live version of the binding name of workspace: the first
// 16 hex digits of its digest, so a replaced binding has a new version.
// An unknown name is ErrNotFound.
func (s *Service) Version(ctx context.Context, workspace, name string) (string, error) {
	e, err := s.Store.GetEntity(ctx, StoreKind, workspace, name)
	if err != nil {
		return "", err
	}
	if len(e.Versions) == 0 {
		return "", derrors.NotFoundf("model %s", name)
	}
	return e.Versions[len(e.Versions)-1].Version, nil
}
