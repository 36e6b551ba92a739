package tool_test

import (
	"fmt"
	"net/http"

	"github.com/toolroute/toolroute/tool"
)

func ExampleServiceRoute() {
	r := tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items/{id}")
	fmt.Println(r)
	fmt.Println(r.Validate())
	// Output:
	// GET /catalog/api/v1/items/{id}
	// <nil>
}

func ExampleRoute_Bind() {
	r := tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items/{id}")

	bound, err := r.Bind(map[string]string{"id": "café 42"})
	fmt.Println(bound, err)

	// A value never adds a segment, not even escaped: an upstream that
	// decodes %2F would see one.
	_, err = r.Bind(map[string]string{"id": "../../admin"})
	fmt.Println(err)

	// Nor climbs one.
	_, err = r.Bind(map[string]string{"id": ".."})
	fmt.Println(err)
	// Output:
	// GET /catalog/api/v1/items/caf%C3%A9%2042 <nil>
	// bind GET /catalog/api/v1/items/{id}: {id}: value "../../admin" holds '/', which an upstream may read as a path separator
	// bind GET /catalog/api/v1/items/{id}: {id}: value ".." would climb a path segment
}

func ExampleRoute_Match() {
	r := tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items/{id}")
	fmt.Println(r.Match("GET", "/catalog/api/v1/items/42"))
	fmt.Println(r.Match("GET", "/catalog/api/v1/items/a/b"))
	fmt.Println(r.Match("GET", "/catalog/api/v1/items/a%2Fb"))
	fmt.Println(r.Match("GET", "/catalog/api/v1/items/%2E%2E"))
	fmt.Println(r.Match("DELETE", "/catalog/api/v1/items/42"))
	// Output:
	// true
	// false
	// false
	// false
	// false
}
