package registry

import (
	"fmt"
	"strings"

	"github.com/toolroute/toolroute/tool"
)

// repeatsServiceKey refuses a route of service key whose path on the
// service starts with the key again: tool.ServiceRoute("notes", "GET",
// "/notes/api/{id}") is "/notes/notes/api/{id}", whose upstream request
// would go to "/notes/api/{id}" on the notes service and be checked and
// authorized as "/notes/notes/api/{id}", which is rarely what was meant
// and shows only at run time.
func repeatsServiceKey(rt tool.Route, key string) error {
	p := rt.ServicePath()
	rest, ok := strings.CutPrefix(p, "/"+key)
	if !ok || rest != "" && rest[0] != '/' {
		return nil
	}
	return fmt.Errorf("route %s names service %q twice: its path on the service, %q, starts with the service key again (tool.ServiceRoute(%q, %q, %q) adds %q itself: write tool.ServiceRoute(%q, %q, %q))",
		rt, key, p, key, rt.Method, p, "/"+key, key, rt.Method, rest)
}
