package notifications

import (
	"context"
	"slices"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/notificationwire"
	"svc/internal/integrations/webhooks"
	"svc/internal/platform/derrors"
	"svc/store"
)

// MaxChannels bounds how many channels one member keeps in a workspace.
const MaxChannels = 20

// CreateChannelRequest is the body of POST /notification-channels
// (notificationwire.CreateChannelRequest, the wire format the client shares).
type CreateChannelRequest = notificationwire.CreateChannelRequest

// Channel is a channel as its owner reads it; Secret only in the answer
// to its creation.
type Channel struct {
	store.NotificationChannel
	Enabled bool   `json:"enabled"`
	Secret  string `json:"secret,omitempty"`
}

func view(c store.NotificationChannel) Channel {
	return Channel{NotificationChannel: c, Enabled: c.DisabledAt == nil}
}

// CreateChannel subscribes a channel of the caller's to kinds of their
// notifications. A webhook channel's signing secret is in the answer, and
// only there.
func (s *Service) CreateChannel(ctx context.Context, p auth.Principal, req CreateChannelRequest) (Channel, error) {
	if err := req.Validate(); err != nil {
		return Channel{}, err
	}
	if err := s.o.Guard.CheckURL(ctx, req.URL); err != nil {
		return Channel{}, err
	}
	have, err := s.o.Store.ListNotificationChannels(ctx, p.Workspace, p.Subject)
	if err != nil {
		return Channel{}, err
	}
	if len(have) >= MaxChannels {
		return Channel{}, derrors.Invalidf("you have %d notification channels here, the most one member may keep; delete one first", len(have))
	}
	c := store.NotificationChannel{ID: eval.NewID("nch"), Workspace: p.Workspace, Owner: p.Subject, Type: req.Type,
		URL: req.URL, Kinds: slices.Clone(req.Kinds), CreatedAt: s.o.Now()}
	var secret string
	if req.Type == store.ChannelWebhook {
		if s.o.Sealer == nil {
			return Channel{}, derrors.ErrNoSecretKey
		}
		if secret, err = webhooks.NewSecret(); err != nil {
			return Channel{}, err
		}
		if c.Secret, err = s.o.Sealer.Seal(p.Workspace, eval.ChannelSecretName(c.ID), []byte(secret)); err != nil {
			return Channel{}, err
		}
	}
	stored, err := s.o.Store.CreateNotificationChannel(ctx, c)
	if err != nil {
		return Channel{}, err
	}
	out := view(stored)
	out.Secret = secret
	return out, nil
}

// ListChannels returns the caller's own channels.
func (s *Service) ListChannels(ctx context.Context, p auth.Principal) ([]Channel, error) {
	list, err := s.o.Store.ListNotificationChannels(ctx, p.Workspace, p.Subject)
	if err != nil {
		return nil, err
	}
	out := make([]Channel, len(list))
	for i, c := range list {
		out[i] = view(c)
	}
	return out, nil
}

// DeleteChannel removes one of the caller's channels; another member's is
// 404, as an absent one.
func (s *Service) DeleteChannel(ctx context.Context, p auth.Principal, id string) error {
	return s.o.Store.DeleteNotificationChannel(ctx, p.Workspace, p.Subject, id)
}

// EnableChannel re-enables one of the caller's channels after it was
// disabled for failing; another member's is 404.
func (s *Service) EnableChannel(ctx context.Context, p auth.Principal, id string) (Channel, error) {
	c, err := s.o.Store.EnableNotificationChannel(ctx, p.Workspace, p.Subject, id)
	if err != nil {
		return Channel{}, err
	}
	return view(c), nil
}
