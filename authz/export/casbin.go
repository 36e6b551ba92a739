package export

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"
)

// casbinModel is the Casbin model of a role policy: a request is (role,
// escaped path, method); a policy line is (role, path regexp, method,
// effect); deny overrides allow and nothing matching denies.
const casbinModel = `[request_definition]
r = sub, obj, act

[policy_definition]
p = sub, obj, act, eft

[policy_effect]
e = some(where (p.eft == allow)) && !some(where (p.eft == deny))

[matchers]
m = r.sub == p.sub && r.act == p.act && regexMatch(r.obj, p.obj)
`

// Casbin writes a JSON object {"model": "<model.conf>", "policy":
// "<policy.csv>"}: an enforcer built from them decides
// Enforce(role, escapedPath, method) exactly as the role policy decides
// for that one role (regexMatch is Go's regexp.MatchString, as in
// authz.Policy). A caller with several roles is allowed if one of them
// is: enforce once per role.
//
// The policy text has one line per access policy and method, its fields
// quoted as CSV where needed. A path regexp holding a line break cannot
// be carried by Casbin's line-based policy text: Casbin refuses it.
func (e *Exporter) Casbin(w io.Writer) error {
	var b strings.Builder
	cw := csv.NewWriter(&b)
	for _, rp := range e.roles {
		for _, ap := range rp.AccessPolicies {
			if strings.ContainsAny(rp.Role+ap.Path, "\r\n") {
				return fmt.Errorf("export: casbin: role %q: path %q: a line break cannot be carried by Casbin's policy text", rp.Role, ap.Path)
			}
			for _, m := range ap.Methods {
				if err := cw.Write([]string{"p", rp.Role, ap.Path, m, string(ap.Effect)}); err != nil {
					return fmt.Errorf("export: casbin: %w", err)
				}
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("export: casbin: %w", err)
	}
	return writeJSON(w, struct {
		Model  string `json:"model"`
		Policy string `json:"policy"`
	}{casbinModel, b.String()})
}
