package registry_test

import (
	"errors"
	"fmt"

	"svc/internal/domain/registry"
)

func ExampleParse() {
	body := []byte(`{"id": "exact", "version": "1.0.0", "kind": "code", "language": "python", "code": "print(1)"}`)
	s, err := registry.Parse(registry.Judge, body, true)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Ref(), s.Judge().Code.Language)
	fmt.Println(string(s.Canonical()))

	_, err = registry.Parse(registry.Judge, []byte(`{"id": "exact", "version": "latest", "kind": "code", "language": "go"}`), true)
	var ve *registry.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			fmt.Println(p.Path+":", p.Message)
		}
	}
	// Output:
	// exact@1.0.0 python
	// {"code":"print(1)","id":"exact","kind":"code","language":"python","version":"1.0.0"}
	// version: "latest" is reserved for resolving the newest version; register a concrete version
	// language: "go" must be python or node
	// code: required: inline source in code, or an entrypoint path in image
}

// release is any caller's version type; the services pass the store's
// rows (store.EntityVersion), which implement registry.Version too.
type release struct {
	name string
	seq  int64
}

func (r release) VersionName() string    { return r.name }
func (r release) RegistrationSeq() int64 { return r.seq }
func (r release) Tombstoned() bool       { return false }

func ExampleResolveLatest() {
	vs := []release{{"1.9.0", 1}, {"1.10.0", 2}, {"1.10.1-rc.1", 3}}
	v, _ := registry.ResolveLatest(vs)
	fmt.Println(v.name)
	vs = append(vs, release{"nightly", 4}, release{"1.0.0", 5})
	v, _ = registry.ResolveLatest(vs)
	fmt.Println(v.name)
	// Output:
	// 1.10.1-rc.1
	// 1.0.0
}
