package activities

import (
	"context"
	"reflect"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"svc/internal/domain/flows"
)

// TestWorkerRegistersEveryFlowsActivity: the workflows call their
// activities by name (flows.ActivityDispatchRun, ...), not through the
// methods, so a renamed or removed method would compile and fail every
// workflow that calls it at run time. Each name must be registered by
// Register, as the worker registers them, and the method behind it must
// take and return the contract's types (package flows), so that what a
// workflow sends decodes into what the activity reads.
func TestWorkerRegistersEveryFlowsActivity(t *testing.T) {
	env := (&testsuite.WorkflowTestSuite{}).NewTestWorkflowEnvironment()
	Register(env, &Activities{})
	contract := reflect.TypeFor[flows.RunRef]().PkgPath()
	methods := reflect.TypeFor[*Activities]()
	for _, name := range flows.ActivityNames {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("activity %q is not registered by the worker: %v", name, r)
				}
			}()
			env.OnActivity(name) // panics when no activity has the name
		}()
		m, ok := methods.MethodByName(name)
		if !ok {
			t.Errorf("activity %q is no method of *Activities", name)
			continue
		}
		// m.Type: (receiver, ctx, [input]) -> ([result,] error)
		if m.Type.NumIn() < 2 || m.Type.In(1) != reflect.TypeFor[context.Context]() {
			t.Errorf("activity %q: %v, want a context first", name, m.Type)
		}
		var types []reflect.Type
		for i := 2; i < m.Type.NumIn(); i++ {
			types = append(types, m.Type.In(i))
		}
		for i := 0; i < m.Type.NumOut()-1; i++ {
			types = append(types, m.Type.Out(i))
		}
		for _, ty := range types {
			for ty.Kind() == reflect.Slice || ty.Kind() == reflect.Pointer {
				ty = ty.Elem()
			}
			if ty.PkgPath() != "" && ty.PkgPath() != contract {
				t.Errorf("activity %q speaks %v, a type outside the workflows' contract (package flows)", name, ty)
			}
		}
	}
}
