package registry_test

import (
	"errors"
	"fmt"

	"svc/registry"
	"svc/store"
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

func ExampleResolveLatest() {
	vs := []store.EntityVersion{{Version: "1.9.0", Seq: 1}, {Version: "1.10.0", Seq: 2}, {Version: "1.10.1-rc.1", Seq: 3}}
	v, _ := registry.ResolveLatest(vs)
	fmt.Println(v.Version)
	vs = append(vs, store.EntityVersion{Version: "nightly", Seq: 4}, store.EntityVersion{Version: "1.0.0", Seq: 5})
	v, _ = registry.ResolveLatest(vs)
	fmt.Println(v.Version)
	// Output:
	// 1.10.1-rc.1
	// 1.0.0
}
