package registry_test

import (
	"net/http"
	"testing"

	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// TestCheckServiceKeyTwice: a route whose path on its service starts with
// the service key again is refused at registration, not at the first
// call; a segment that only begins like the key is not.
func TestCheckServiceKeyTwice(t *testing.T) {
	tests := []struct {
		route tool.Route
		want  string // "" = accepted
	}{
		{tool.ServiceRoute("catalog", http.MethodGet, "/catalog/api/{id}"),
			`route GET /catalog/catalog/api/{id} names service "catalog" twice: its path on the service, "/catalog/api/{id}", starts with the service key again (tool.ServiceRoute("catalog", "GET", "/catalog/api/{id}") adds "/catalog" itself: write tool.ServiceRoute("catalog", "GET", "/api/{id}"))`},
		{tool.ServiceRoute("catalog", http.MethodGet, "/catalog"),
			`route GET /catalog/catalog names service "catalog" twice: its path on the service, "/catalog", starts with the service key again (tool.ServiceRoute("catalog", "GET", "/catalog") adds "/catalog" itself: write tool.ServiceRoute("catalog", "GET", ""))`},
		{tool.ServiceRoute("catalog", http.MethodGet, "/catalogue/{id}"), ""},
		{tool.ServiceRoute("catalog", http.MethodGet, "/api/catalog/{id}"), ""},
	}
	for _, tt := range tests {
		tl := mapped()
		tl.VisibilityRoutes = []tool.Route{tt.route}
		err, site := checkAt(registry.New[*Deps](), tl)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tt.route, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%v: accepted", tt.route)
			continue
		}
		checkMessage(t, err.Error(), `registry: tool "get_item" (registered at `+site+`): `, tt.want)
	}
}
