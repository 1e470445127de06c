package service

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"svc/auth"
	"svc/derrors"
	"svc/drivers/k8s"
	"svc/drivers/nomad"
	"svc/registry"
	"svc/secrets"
	"svc/store"
)

// MaxSecretBytes bounds a secret value: a kubeconfig or a token is far
// smaller.
const MaxSecretBytes = 64 << 10

// ErrNoSecretKey is the refusal to store a secret while SVC_SECRET_KEY is
// unset: the feature is off (503), the request is not wrong.
var ErrNoSecretKey = fmt.Errorf("%w: SVC_SECRET_KEY is not set, so secret values cannot be stored; an operator sets it to the base64 of 32 random bytes (openssl rand -base64 32)", derrors.ErrUnavailable)

// PutSecret seals value and stores it as the workspace secret name,
// replacing any previous value.
func (s *Service) PutSecret(ctx context.Context, p auth.Principal, name, value string) error {
	if err := secrets.ValidName(name); err != nil {
		return err
	}
	switch {
	case value == "":
		return derrors.Invalidf("value is required: the secret's value, a non-empty string")
	case len(value) > MaxSecretBytes:
		return derrors.Invalidf("value is %d bytes long; the limit is %d", len(value), MaxSecretBytes)
	case !utf8.ValidString(value):
		return derrors.Invalidf("value must be valid UTF-8")
	}
	if s.sealer == nil {
		return ErrNoSecretKey
	}
	sealed, err := s.sealer.Seal(p.Workspace, name, []byte(value))
	if err != nil {
		return err
	}
	_, err = s.store.PutSecret(ctx, store.Secret{Workspace: p.Workspace, Name: name, Ciphertext: sealed, CreatedBy: p.Subject, UpdatedAt: s.now()})
	return err
}

// ListSecrets returns the workspace's secrets: names and dates, never values.
func (s *Service) ListSecrets(ctx context.Context, p auth.Principal) ([]store.Secret, error) {
	ss, err := s.store.ListSecrets(ctx, p.Workspace)
	if err != nil {
		return nil, err
	}
	for i := range ss {
		ss[i].Ciphertext = nil
	}
	return ss, nil
}

// DeleteSecret deletes a workspace secret; an absent one is a no-op.
func (s *Service) DeleteSecret(ctx context.Context, p auth.Principal, name string) error {
	if err := secrets.ValidName(name); err != nil {
		return err
	}
	return s.store.DeleteSecret(ctx, p.Workspace, name)
}

// ProbeResult is the answer of POST /runtimes/probe.
type ProbeResult struct {
	Kind      string `json:"kind"`
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail"`
}

// Probe checks whether the runtime in raw (a runtime spec, registered or
// not) answers, with the credentials its authSecret and kubeconfigSecret
// name in the workspace secret store. Credentials never appear in the
// result; a secret that is missing or cannot be opened is an unreachable
// result saying which name, not an error. The drivers cap a probe at 10 s.
func (s *Service) Probe(ctx context.Context, p auth.Principal, raw []byte) (ProbeResult, error) {
	spec, err := registry.Parse(registry.Runtime, raw, true)
	if err != nil {
		return ProbeResult{}, err
	}
	rt := spec.Runtime()
	kind := string(rt.Kind)
	open := func(field, name string) ([]byte, string, error) {
		if name == "" {
			return nil, "", nil
		}
		sec, err := s.store.GetSecret(ctx, p.Workspace, name)
		if errors.Is(err, derrors.ErrNotFound) {
			return nil, fmt.Sprintf("%s %q is not in the workspace secret store; PUT /secrets/%s first", field, name, name), nil
		}
		if err != nil {
			return nil, "", err
		}
		if s.sealer == nil {
			return nil, fmt.Sprintf("%s %q cannot be opened: SVC_SECRET_KEY is not set", field, name), nil
		}
		v, err := s.sealer.Open(p.Workspace, name, sec.Ciphertext)
		if err != nil {
			return nil, fmt.Sprintf("%s %q cannot be opened with the current SVC_SECRET_KEY; store it again", field, name), nil
		}
		return v, "", nil
	}
	switch rt.Kind {
	case registry.RuntimeLocal:
		return ProbeResult{Kind: kind, Reachable: true, Detail: "in-process"}, nil
	case registry.RuntimeNomad:
		tok, miss, err := open("authSecret", rt.AuthSecret)
		if err != nil || miss != "" {
			return ProbeResult{Kind: kind, Detail: miss}, err
		}
		r := nomad.Probe(ctx, nomad.ProbeConfig{Addr: rt.Addr, Namespace: rt.Namespace, Token: string(tok)})
		return ProbeResult{Kind: kind, Reachable: r.Reachable, Detail: r.Detail}, nil
	case registry.RuntimeK8s:
		cfg := k8s.ProbeConfig{Server: rt.Server, Context: rt.Context, Namespace: rt.Namespace}
		kc, miss, err := open("kubeconfigSecret", rt.KubeconfigSecret)
		if err != nil || miss != "" {
			return ProbeResult{Kind: kind, Detail: miss}, err
		}
		cfg.Kubeconfig = kc
		if kc == nil {
			tok, miss, err := open("authSecret", rt.AuthSecret)
			if err != nil || miss != "" {
				return ProbeResult{Kind: kind, Detail: miss}, err
			}
			cfg.Token = string(tok)
		}
		r := k8s.Probe(ctx, cfg)
		return ProbeResult{Kind: kind, Reachable: r.Reachable, Detail: r.Detail}, nil
	}
	return ProbeResult{Kind: kind, Detail: "unknown runtime kind"}, nil
}
