package app

import (
	"path/filepath"
	"strings"
	"testing"

	"svc/internal/platform/config"
	"svc/internal/platform/secrets"
	"svc/store"
	"svc/store/sqlite"
)

// TestImageStoreCredentialFromTheSecretStore: SVC_IMAGE_STORE_SECRET names
// a workspace secret whose value is the registry's credential; it is
// opened only when its allowedHosts admit the store's host, and every
// refusal says what to fix (issue 32, item 5).
func TestImageStoreCredentialFromTheSecretStore(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWorkspace(t.Context(), store.Workspace{ID: "ops", Name: "ops"}); err != nil {
		t.Fatal(err)
	}
	put := func(name, value string, hosts ...string) {
		sealed, err := sealer.Seal("ops", name, []byte(value))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.PutSecret(t.Context(), store.Secret{Workspace: "ops", Name: name, Ciphertext: sealed, AllowedHosts: hosts}); err != nil {
			t.Fatal(err)
		}
	}
	put("registry", "robot:s3cret", "registry.example.com")
	put("elsewhere", "robot:s3cret", "other.example.com")

	cfg := config.Defaults()
	if got, err := imageStoreCredential(t.Context(), cfg, st, sealer); err != nil || got != "" {
		t.Fatalf("unset: %q, %v; want none", got, err)
	}
	cfg.ImageStore = "registry.example.com/svc"
	cfg.ImageStoreSecret = "ops/registry"
	if got, err := imageStoreCredential(t.Context(), cfg, st, sealer); err != nil || got != "robot:s3cret" {
		t.Fatalf("bound secret: %q, %v; want its value", got, err)
	}
	for _, c := range []struct {
		name, store, secret string
		sealer              *secrets.Sealer
		want                string
	}{
		{"no store", "", "ops/registry", sealer, "SVC_IMAGE_STORE is not"},
		{"bad name", "registry.example.com", "registry", sealer, "want workspace/name"},
		{"missing", "registry.example.com", "ops/nope", sealer, "PUT /secrets/nope"},
		{"unbound host", "registry.example.com", "ops/elsewhere", sealer, "registry.example.com"},
		{"no key", "registry.example.com", "ops/registry", nil, "SVC_SECRET_KEY"},
	} {
		cfg.ImageStore, cfg.ImageStoreSecret = c.store, c.secret
		got, err := imageStoreCredential(t.Context(), cfg, st, c.sealer)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %q, %v; want a refusal naming %q and never the value", c.name, got, err, c.want)
		}
	}
}
