package registry_test

import (
	"errors"
	"strings"
	"testing"

	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

func TestCheckDeclared(t *testing.T) {
	cpu := func(n int) *registry.Resources { return &registry.Resources{CPU: &n} }
	mem := 512
	perCore := 2400
	nomadRT := &registry.RuntimeSpec{ID: "cluster", Kind: registry.RuntimeNomad}
	withMHz := &registry.RuntimeSpec{ID: "cluster", Kind: registry.RuntimeNomad, CPUMhzPerCore: &perCore}
	local := &registry.RuntimeSpec{ID: "here", Kind: registry.RuntimeLocal}
	c := func(id string, r *registry.Resources) registry.EvalCase {
		return registry.EvalCase{ID: id, Resources: r}
	}
	for _, tc := range []struct {
		name    string
		rt      *registry.RuntimeSpec
		harness *registry.HarnessConfig
		cases   []registry.EvalCase
		want    []string // in the error; none means accepted
	}{
		{name: "no cpu declared", rt: nomadRT, harness: &registry.HarnessConfig{Resources: &registry.Resources{MemoryMb: &mem}},
			cases: []registry.EvalCase{c("a", nil), c("b", &registry.Resources{MemoryMb: &mem})}},
		{name: "cpu with cpuMhzPerCore", rt: withMHz, harness: &registry.HarnessConfig{Resources: cpu(500)}, cases: []registry.EvalCase{c("a", cpu(250))}},
		{name: "cpu on a local runtime", rt: local, cases: []registry.EvalCase{c("a", cpu(250))}},
		{name: "harness cpu", rt: nomadRT, harness: &registry.HarnessConfig{Resources: cpu(500)}, cases: []registry.EvalCase{c("a", nil)},
			want: []string{"the harness declares resources.cpu", `nomad runtime "cluster"`, "cpuMhzPerCore"}},
		{name: "one case", rt: nomadRT, cases: []registry.EvalCase{c("a", nil), c("b", cpu(250))},
			want: []string{`case "b" declares resources.cpu`, "cpuMhzPerCore"}},
		{name: "many cases", rt: nomadRT, cases: []registry.EvalCase{c("a", cpu(1)), c("b", cpu(1)), c("c", cpu(1)), c("d", cpu(1)), c("e", cpu(1))},
			want: []string{`cases "a", "b", "c" and 2 more declare resources.cpu`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rt.CheckDeclared(tc.harness, tc.cases)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("CheckDeclared = %v, want accepted", err)
				}
				return
			}
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("CheckDeclared = %v, want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
