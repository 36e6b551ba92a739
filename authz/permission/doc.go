// Package permission decides which capabilities a tool call gets on the
// subjects it acts on, from ordered rules, from remembered answers, and
// by asking the user through MCP multi-round-trip requests.
//
// # Model
//
// Capabilities are strings ("read", "delete"); one may imply others
// ([Options].Implies, closed transitively, cycles allowed). Subjects are
// strings naming what a call acts on ("item:42"). Grants on different
// subjects stay separate: a call spanning several subjects gets only the
// capabilities granted on every one of them (the intersection of their
// closures).
//
// Ordered rules ([Rule]) decide first: the first rule matching a (principal,
// tool, subject, capability) allows or denies it. When no rule (and no
// remembered answer) decides, the user is asked: "allow once", "allow
// always", "deny" or "deny always". An "always" answer becomes a rule for
// that principal, tool, subject and capability, kept in an [AnswerStore]
// (in memory and bounded by default).
//
// # Asking
//
// A handler made with tool.HandleResult calls [Checker.Require] before
// any side effect:
//
//	granted, ask, err := d.Perms.Require(ctx, req, permission.Request{
//		Subjects:     []string{"item:" + in.ID},
//		Capabilities: []string{"delete"},
//		Reason:       "Delete item " + in.ID + "?",
//	})
//	if ask != nil || err != nil {
//		return ask, err
//	}
//
// A handler made with tool.Handle calls [Checker.Check] and returns its
// error; a question then travels as an [InputRequiredError], which
// tool.Handle turns into the call's result.
//
// To ask, Require returns a result holding the question (InputRequests
// under [InputKey], a form elicitation with one "decision" field) and an
// integrity-protected RequestState. go-sdk marks it input_required for
// 2026-07-28 clients, which answer and call again; for older clients it
// sends elicitation/create itself and runs the handler again within the
// same call. Either way the handler runs again from the top, with the
// answer: everything before Require runs more than once, so nothing
// before it may have a side effect, and the Request must be the same
// every time.
//
// # Answers
//
// The request state is an HMAC-SHA256 (compared in constant time) over
// the principal, the tool, a digest of the canonical arguments, the
// Request, the input key, a nonce, what was asked and a short expiry
// (5 minutes by default). It is single-use: the nonces of used states are kept
// until they expire, so a state cannot be replayed. A missing, malformed,
// tampered, expired, replayed or mismatched state, or an answer that does
// not fit the question's schema, ends the call with a -32602 protocol
// error, never with a new question. A declined or cancelled question
// denies.
//
// A client without form elicitation cannot be asked, and neither can a
// pre-2026 client over stateless HTTP (the server cannot send it a
// request): such calls end with [ErrCannotAsk], a tool error, and the
// handler goes no further.
//
// # Replicas
//
// The key is random per [Checker] unless [Options].Key is set: replicas
// behind a load balancer must share a key ([ReadKeyFile] reads one from
// a file). The replay guard is a [NonceStore] and the "always" answers an
// [AnswerStore], both in memory by default and so per process: replicas
// must share them too ([Options].Nonces, [Options].Answers), or an answer
// used on one replica can be used again on another, and an "always"
// answer is asked again on the next replica. Package redisstore
// (redisstore) keeps both on Redis. A store that cannot
// answer fails the call closed with a [*StoreError]: nothing is granted.
package permission
