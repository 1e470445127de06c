package models

import (
	"context"

	"svc/internal/integrations/modeljudge"
)

// Endpoint is what the model judge client calls with a: the binding's
// address, wire format and model, the key, the guarded client, the
// timeout and the prices.
func (a Access) Endpoint() modeljudge.Endpoint {
	b := a.Binding
	return modeljudge.Endpoint{Name: b.Name, Provider: b.Provider, BaseURL: b.BaseURL, Model: b.Model, Key: a.key,
		Client: a.Client, Timeout: b.Timeout(), Price: b.Cost}
}

// JudgeEndpoint is Resolve as the model judge client's endpoint: what the
// worker needs to call the model name of workspace for a model judge (or
// to know, from missing, that it cannot).
func (s *Service) JudgeEndpoint(ctx context.Context, workspace, name string) (ep modeljudge.Endpoint, missing string, err error) {
	a, missing, err := s.Resolve(ctx, workspace, name)
	if err != nil || missing != "" {
		return modeljudge.Endpoint{}, missing, err
	}
	return a.Endpoint(), "", nil
}
