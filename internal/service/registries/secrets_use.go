package registries

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// checkSecretsUse refuses to register a harness or harness template whose
// secretEnv (its own, a service's, or for an instance the resolved
// template's) names workspace secrets, unless p may use workspace secrets
// (auth.SecretsUse, member+): every run of such a harness hands the
// secrets' values to its job. Runs record each use as a secret.used event.
// Other specs pass.
func checkSecretsUse(a *access, p auth.Principal, spec registry.Spec) error {
	names, err := harnessSecretNames(a, spec)
	if err != nil || len(names) == 0 {
		return err
	}
	err = auth.Authorize(p, auth.SecretsUse)
	if errors.Is(err, derrors.ErrForbidden) {
		return fmt.Errorf("%s %s@%s names workspace secrets in secretEnv (%s); using workspace secrets needs a member role or above: %w",
			spec.Kind(), spec.ID(), spec.Version(), strings.Join(names, ", "), err)
	}
	return err
}

// harnessSecretNames lists the workspace secrets a harness or harness
// template hands to its jobs, sorted; none for other kinds.
func harnessSecretNames(a *access, spec registry.Spec) ([]string, error) {
	if t := spec.HarnessTemplate(); t != nil {
		return configSecretNames(&t.Harness), nil
	}
	h := spec.Harness()
	if h == nil {
		return nil, nil
	}
	names := configSecretNames(&h.HarnessConfig)
	if inst, ok := h.Instance(); ok {
		resolved, err := resolveInstance(a, h, inst)
		if err != nil {
			return nil, err
		}
		if rh := resolved.Harness(); rh != nil {
			names = append(names, rh.SecretNames()...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// configSecretNames are the secret names of a harness configuration's
// secretEnv and its services' secretEnv.
func configSecretNames(c *registry.HarnessConfig) []string {
	var names []string
	for _, n := range c.SecretEnv {
		names = append(names, n)
	}
	for _, s := range c.Services {
		for _, n := range s.SecretEnv {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
