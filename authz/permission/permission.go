package permission

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolroute/toolroute/authz"
)

// InputKey is the key of the question in a result's InputRequests and of
// the answer in the retried call's InputResponses.
const InputKey = "permission"

// The answers a question offers, the values of its "decision" field.
const (
	AllowOnce   = "allow once"
	AllowAlways = "allow always"
	DenyOnce    = "deny"
	DenyAlways  = "deny always"
)

// maxAskPairs is how many (subject, capability) pairs one call may ask
// about: its request state holds a bit for each, and must fit the bound
// on request states. A larger question is refused with a tool error
// before the user is asked.
const maxAskPairs = 24_000

// protocolInputRequests is the first protocol version whose requests
// carry the client's capabilities (and input responses) themselves.
const protocolInputRequests = "2026-07-28"

// defaultTTL is how long a question's request state stays good.
const defaultTTL = 5 * time.Minute

// Options configures a [Checker]. A nil *Options selects the defaults.
type Options struct {
	// Implies maps a capability to the capabilities it implies. The
	// transitive closure is computed once, by New; cycles are fine. A
	// capability not mentioned implies only itself.
	Implies map[string][]string
	// Rules decide, in order, before anyone is asked: the first rule that
	// matches a (principal, tool, subject, capability) decides it.
	Rules []Rule
	// Principal names the caller a call acts for: remembered answers and
	// request states are bound to it. nil selects one principal, "", for
	// every caller — right for a stdio server, which serves one user;
	// wrong for a server with several callers, which must set it (for
	// example from the authz caller's subject).
	Principal func(ctx context.Context, req *mcp.CallToolRequest) string
	// Key is the HMAC-SHA256 key of request states. Empty selects a
	// random key per Checker: states are then good only in this process,
	// so replicas behind a load balancer need a shared Key (see
	// [ReadKeyFile]). A non-empty Key must be at least 32 bytes.
	Key []byte
	// TTL is how long a question's request state stays good. 0 selects
	// defaultTTL.
	TTL time.Duration
	// Now is the clock. nil selects time.Now.
	Now func() time.Time
	// MaxRemembered bounds the rules made from "always" answers in the
	// default in-memory AnswerStore; the oldest is forgotten first (its
	// question is asked again). 0 selects 10,000; a negative value
	// remembers nothing. Ignored when Answers is set.
	MaxRemembered int
	// Answers keeps the rules made from "always" answers. nil selects an
	// in-memory store (bounded by MaxRemembered), per process: replicas
	// must share an AnswerStore too, or an "always" answer is asked again
	// on the next replica.
	Answers AnswerStore
	// MaxInFlight bounds the spent request states the default in-memory
	// NonceStore remembers until they expire. When it is full of
	// unexpired states, answers are refused with a tool error. 0 selects
	// 100,000.
	MaxInFlight int
	// Nonces is the replay guard: every answered request state is spent
	// in it. nil selects an in-memory store (bounded by MaxInFlight),
	// whose guard is per process: replicas sharing a Key must share a
	// NonceStore too.
	Nonces NonceStore
}

// Checker decides which capabilities a tool call gets, from its rules,
// from remembered answers, and by asking the user. It must be created
// with [New]; its methods are safe for concurrent use.
type Checker struct {
	cl        *closures
	rules     []Rule
	principal func(ctx context.Context, req *mcp.CallToolRequest) string
	key       []byte
	ttl       time.Duration
	now       func() time.Time
	answers   AnswerStore
	nonces    NonceStore
}

// New returns a Checker configured by opts (the zero Options selects the
// defaults).
// It panics, with a message starting "permission: ", if a rule has no
// valid Effect (authz.Allow or authz.Deny) or if Key is shorter than 32 bytes.
func New(opts Options) *Checker {
	c := &Checker{
		cl:        newClosures(opts.Implies),
		rules:     slices.Clone(opts.Rules),
		principal: opts.Principal,
		key:       slices.Clone(opts.Key),
		ttl:       opts.TTL,
		now:       opts.Now,
	}
	for i, r := range c.rules {
		if r.Effect != authz.Allow && r.Effect != authz.Deny {
			panic(fmt.Sprintf("permission: rule %d (%v): Effect must be authz.Allow or authz.Deny", i, r))
		}
	}
	switch {
	case len(c.key) == 0:
		c.key = make([]byte, 32)
		rand.Read(c.key)
	case len(c.key) < minKeyLen:
		panic(fmt.Sprintf("permission: Options.Key is %d bytes long, at least %d are needed", len(c.key), minKeyLen))
	}
	if c.ttl <= 0 {
		c.ttl = defaultTTL
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.answers = opts.Answers
	if c.answers == nil {
		c.answers = newAnswerStore(opts.MaxRemembered)
	}
	c.nonces = opts.Nonces
	if c.nonces == nil {
		c.nonces = newMemoryNonces(opts.MaxInFlight, c.now)
	}
	return c
}

// Request is what a tool call asks for: capabilities on subjects.
type Request struct {
	// Subjects are the things the call acts on, such as "item:42". Grants
	// on different subjects stay separate: a call spanning several gets
	// only what it is granted on every one. None means one subject, "".
	Subjects []string
	// Capabilities are what the call needs to do to every subject, such
	// as "delete". At least one is required.
	Capabilities []string
	// Reason is shown to the user when asked, before the list of what
	// is asked for: "Delete item 42?".
	Reason string
	// Partial accepts a grant of fewer capabilities than asked for:
	// Require then fails only when none is granted. By default every
	// capability must be granted on every subject.
	Partial bool
	// NoRemember offers only "allow once" and "deny": the answer is not
	// remembered. For questions whose "always" would be meaningless,
	// such as deleting one particular item.
	NoRemember bool
}

// Granted is the set of capabilities a call was granted on every subject
// of its Request, implied capabilities included.
type Granted struct {
	caps []string // sorted
}

// Has reports whether capability was granted.
func (g Granted) Has(capability string) bool {
	_, ok := slices.BinarySearch(g.caps, capability)
	return ok
}

// Capabilities returns the granted capabilities, sorted.
func (g Granted) Capabilities() []string { return slices.Clone(g.caps) }

// ErrCannotAsk is the error of a call that needs the user's answer from a
// client that cannot be asked: one without form elicitation, or a
// pre-2026 client over stateless HTTP (which cannot carry a request from
// server to client). Nothing is granted; it is a plain error, so the call
// ends with an isError result.
var ErrCannotAsk = errors.New("permission: this call needs the user's permission, but the client cannot ask the user (no form elicitation on this connection)")

// InputRequiredError carries a question for handlers made with
// tool.Handle, which return an Out value and an error rather than a whole
// result: see [Checker.Check]. Its InputRequiredResult method is what
// tool.Handle looks for; it then returns Result as the call's result.
type InputRequiredError struct {
	Result *mcp.CallToolResult
}

// Error is the text of a question that reached the client as an error:
// the handler's framework did not turn it into a result.
func (e *InputRequiredError) Error() string {
	return "permission: the user's answer is required (the tool returned a question as an error)"
}

// InputRequiredResult returns the question, a result with InputRequests.
func (e *InputRequiredError) InputRequiredResult() *mcp.CallToolResult { return e.Result }

// Require decides what the call req may do, for a handler made with
// tool.HandleResult:
//
//	granted, ask, err := perms.Require(ctx, req, permission.Request{...})
//	if ask != nil || err != nil {
//		return ask, err
//	}
//
// Exactly one of three things happens:
//
//   - Rules and remembered answers decide everything, or the call is the
//     retry carrying the user's answer: Require returns the granted
//     capabilities (err nil, ask nil). Unless r.Partial, every requested
//     capability was granted on every subject; else Granted.Has tells.
//   - The user must be asked: Require returns ask, a result holding the
//     question (InputRequests and RequestState, no content), which the
//     handler must return as it is. The SDK asks the user — as an
//     input_required result for 2026-07-28 clients, as elicitation/create
//     for older ones — and runs the handler again, from the top, with the
//     answer. So check permissions before any side effect, and call
//     Require once per invocation with the same Request every time.
//   - The call may not proceed: err is an *authz.DeniedError (its text
//     says which capabilities were refused on which subjects, and whether
//     by the user), [ErrCannotAsk] or another plain error (the handler returns it: an isError result), or
//     a *jsonrpc.Error with code -32602 (a protocol error) when the retry's
//     request state is bad, expired, used already, or issued for another
//     principal, tool, arguments or Request, or when its answer does not
//     fit the question. A bad retry never leads to a new question.
//
// An "allow always" or "deny always" answer becomes a rule for this
// principal, tool, subject and capability, consulted after Options.Rules.
func (c *Checker) Require(ctx context.Context, req *mcp.CallToolRequest, r Request) (Granted, *mcp.CallToolResult, error) {
	if req == nil || req.Params == nil {
		return Granted{}, nil, errors.New("permission: Require needs the call's request")
	}
	subjects := distinct(r.Subjects)
	if len(subjects) == 0 {
		subjects = []string{""}
	}
	caps := distinct(r.Capabilities)
	if len(caps) == 0 || slices.Contains(caps, "") {
		return Granted{}, nil, fmt.Errorf("permission: tool %q: Request needs at least one non-empty capability", req.Params.Name)
	}
	b := &binding{tool: req.Params.Name}
	if c.principal != nil {
		b.principal = c.principal(ctx, req)
	}
	// The digests are needed only to ask or to verify an answer.
	digest := func() {
		b.args = argsDigest(req.Params.Arguments)
		b.request = requestDigest(subjects, caps, r.NoRemember)
	}

	// A retry carries an answer; verify it before deciding anything.
	var ans *answer
	resp, hasResp := req.Params.InputResponses[InputKey]
	if req.Params.RequestState != "" || hasResp {
		digest()
		var err error
		if ans, err = c.verify(ctx, b, req.Params.RequestState, resp, hasResp, len(subjects)*len(caps), r.NoRemember); err != nil {
			return Granted{}, nil, err
		}
	}

	// Decide every (subject, capability) pair by rules, then by
	// remembered answers.
	decided := make([]authz.Effect, len(subjects)*len(caps))
	var undecided, denied bool
	for i, s := range subjects {
		for j, cp := range caps {
			decided[i*len(caps)+j] = c.decide(b.principal, b.tool, s, cp)
		}
	}
	if slices.Contains(decided, "") {
		remembered, err := c.answers.Recall(ctx, b.principal, b.tool, subjects)
		if err == nil && len(remembered) != len(subjects) {
			err = fmt.Errorf("permission: AnswerStore.Recall returned %d answers for %d subjects", len(remembered), len(subjects))
		}
		if err != nil {
			return Granted{}, nil, &StoreError{Err: err}
		}
		for i := range subjects {
			for j, cp := range caps {
				if k := i*len(caps) + j; decided[k] == "" {
					decided[k] = decideRemembered(c.cl, remembered[i], cp)
				}
			}
		}
	}
	for _, e := range decided {
		undecided = undecided || e == ""
		denied = denied || e == authz.Deny
	}

	byUser := false
	if undecided {
		if ans == nil {
			if denied && !r.Partial {
				return Granted{}, nil, c.denied(b.tool, subjects, caps, decided, false)
			}
			if !canAsk(req) {
				return Granted{}, nil, ErrCannotAsk
			}
			if n := len(subjects) * len(caps); n > maxAskPairs {
				return Granted{}, nil, fmt.Errorf("permission: a question about %d (subject, capability) pairs is too large (at most %d): ask about fewer subjects or capabilities at a time", n, maxAskPairs)
			}
			digest()
			return Granted{}, c.ask(b, subjects, caps, decided, r), nil
		}
		// Apply the answer to the pairs asked about that are still
		// undecided; a pair that was not asked about is denied (the
		// question is never asked twice).
		var remember []Answer
		for i, s := range subjects {
			for j, cp := range caps {
				k := i*len(caps) + j
				if decided[k] != "" {
					continue
				}
				if !ans.asked(k) {
					decided[k] = authz.Deny
					continue
				}
				decided[k] = ans.effect
				byUser = byUser || ans.effect == authz.Deny
				if ans.always {
					remember = append(remember, Answer{b.principal, b.tool, s, cp, ans.effect})
				}
			}
		}
		// An "always" that cannot be remembered fails the call: the user
		// would be asked again, and nothing is granted meanwhile.
		if len(remember) > 0 {
			if err := c.answers.Remember(ctx, remember); err != nil {
				return Granted{}, nil, &StoreError{Err: err}
			}
		}
	}
	return c.grant(b.tool, subjects, caps, decided, r.Partial, byUser)
}

// Check is [Checker.Require] for handlers made with tool.Handle, which
// return an Out value and an error: a question comes back as an
// *[InputRequiredError], which tool.Handle turns into the call's result.
//
//	granted, err := perms.Check(ctx, req, permission.Request{...})
//	if err != nil {
//		return Out{}, err
//	}
func (c *Checker) Check(ctx context.Context, req *mcp.CallToolRequest, r Request) (Granted, error) {
	g, ask, err := c.Require(ctx, req, r)
	if ask != nil {
		return Granted{}, &InputRequiredError{Result: ask}
	}
	return g, err
}

// decide returns the decision of the rules on capability want, or 0 if
// none decides.
func (c *Checker) decide(principal, tool, subject, want string) authz.Effect {
	for i := range c.rules {
		if c.rules[i].matches(c.cl, principal, tool, subject, want) {
			return c.rules[i].Effect
		}
	}
	return ""
}

// grant computes what decided grants: per subject the closure of its
// allowed capabilities, intersected across subjects.
func (c *Checker) grant(tool string, subjects, caps []string, decided []authz.Effect, partial, byUser bool) (Granted, *mcp.CallToolResult, error) {
	var inter map[string]bool
	for i := range subjects {
		set := map[string]bool{}
		for j, cp := range caps {
			if decided[i*len(caps)+j] == authz.Allow {
				for _, k := range c.cl.closure(cp) {
					set[k] = true
				}
			}
		}
		if inter == nil {
			inter = set
			continue
		}
		for k := range inter {
			if !set[k] {
				delete(inter, k)
			}
		}
	}
	var missing []string
	for _, cp := range caps {
		if !inter[cp] {
			missing = append(missing, cp)
		}
	}
	if len(missing) > 0 && (!partial || len(missing) == len(caps)) {
		by := ""
		if byUser {
			by = " by the user"
		}
		text := fmt.Sprintf("permission denied%s: %s on %s", by, strings.Join(missing, ", "), subjectList(subjects))
		return Granted{}, nil, &authz.DeniedError{Reason: fmt.Sprintf("tool %q: %s", tool, text), Text: text}
	}
	g := Granted{caps: make([]string, 0, len(inter))}
	for k := range inter {
		g.caps = append(g.caps, k)
	}
	slices.Sort(g.caps)
	return g, nil, nil
}

func (c *Checker) denied(tool string, subjects, caps []string, decided []authz.Effect, byUser bool) error {
	_, _, err := c.grant(tool, subjects, caps, decided, false, byUser)
	return err
}

// canAsk reports whether the client can answer a form elicitation on
// this call. A pre-2026 client over stateless HTTP has no capabilities on
// its per-request session, so it cannot.
func canAsk(req *mcp.CallToolRequest) bool {
	// A 2026-07-28 request carries its client's capabilities in _meta.
	// Before that version they are the session's, from initialize: the
	// SDK can only ask (elicitation/create) a client that declared them
	// there, whatever _meta says, and a stateless 2025 request has none.
	var cc *mcp.ClientCapabilities
	if req.ProtocolVersion() >= protocolInputRequests {
		cc = req.ClientCapabilities()
	} else if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil {
			cc = p.Capabilities
		}
	}
	if cc == nil || cc.Elicitation == nil {
		return false
	}
	// Neither mode declared means form, for backward compatibility.
	return cc.Elicitation.Form != nil || cc.Elicitation.URL == nil
}

// ask returns the question about the undecided pairs of decided.
func (c *Checker) ask(b *binding, subjects, caps []string, decided []authz.Effect, r Request) *mcp.CallToolResult {
	p := &payload{
		expiry: c.now().Add(c.ttl).UnixMilli(),
		asked:  make([]byte, (len(decided)+7)/8),
	}
	rand.Read(p.nonce[:])
	var askCaps, askSubjects []string
	for i, s := range subjects {
		for j, cp := range caps {
			k := i*len(caps) + j
			if decided[k] == "" {
				p.asked[k/8] |= 1 << (k % 8)
				askCaps = append(askCaps, cp)
				askSubjects = append(askSubjects, s)
			}
		}
	}
	askCaps, askSubjects = distinct(askCaps), distinct(askSubjects)
	msg := fmt.Sprintf("Tool %q asks for permission to %s on %s.", b.tool, strings.Join(askCaps, ", "), subjectList(askSubjects))
	if reason := strings.TrimSpace(r.Reason); reason != "" {
		msg = reason + "\n\n" + msg
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{
			InputKey: &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: answerSchema(r.NoRemember)},
		},
		RequestState: c.seal(b, p),
	}
}

func choices(noRemember bool) []string {
	if noRemember {
		return []string{AllowOnce, DenyOnce}
	}
	return []string{AllowOnce, AllowAlways, DenyOnce, DenyAlways}
}

// answerSchema is the form a question asks the user to fill: one
// required "decision" among the choices.
func answerSchema(noRemember bool) *jsonschema.Schema {
	var enum []any
	for _, c := range choices(noRemember) {
		enum = append(enum, c)
	}
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"decision": {Type: "string", Title: "Decision", Enum: enum},
		},
		Required: []string{"decision"},
	}
}

// answer is a verified answer to a question.
type answer struct {
	effect authz.Effect
	always bool
	mask   []byte
}

func (a *answer) asked(k int) bool { return a.mask[k/8]&(1<<(k%8)) != 0 }

// verify checks a retry's request state and answer: the state's MAC
// against b, its expiry, its single use, and the answer against the
// question's schema.
func (c *Checker) verify(ctx context.Context, b *binding, state string, resp mcp.InputResponse, hasResp bool, pairs int, noRemember bool) (*answer, error) {
	if state == "" {
		return nil, invalidState("missing (an answer needs the request state of its question)")
	}
	p, err := c.open(b, state)
	if err != nil {
		return nil, err
	}
	now := c.now().UnixMilli()
	if now >= p.expiry {
		return nil, invalidState("expired")
	}
	if len(p.asked) != (pairs+7)/8 {
		// Cannot happen for a state with a good MAC and request digest.
		return nil, invalidState("not issued for this call")
	}
	if err := c.spend(ctx, p); err != nil {
		return nil, err
	}
	if !hasResp {
		return nil, invalidAnswer(fmt.Sprintf("no response under %q", InputKey))
	}
	er, ok := resp.(*mcp.ElicitResult)
	if !ok || er == nil {
		return nil, invalidAnswer(fmt.Sprintf("the response under %q is %T, want an elicitation result", InputKey, resp))
	}
	a := &answer{mask: p.asked}
	switch er.Action {
	case "decline", "cancel":
		a.effect = authz.Deny
		return a, nil
	case "accept":
	default:
		return nil, invalidAnswer(fmt.Sprintf("unknown action %q", er.Action))
	}
	if len(er.Content) != 1 {
		return nil, invalidAnswer(`content must hold exactly one field, "decision"`)
	}
	d, ok := er.Content["decision"].(string)
	if !ok || !slices.Contains(choices(noRemember), d) {
		return nil, invalidAnswer(fmt.Sprintf(`"decision" must be one of %q`, choices(noRemember)))
	}
	switch d {
	case AllowOnce:
		a.effect = authz.Allow
	case AllowAlways:
		a.effect, a.always = authz.Allow, true
	case DenyOnce:
		a.effect = authz.Deny
	case DenyAlways:
		a.effect, a.always = authz.Deny, true
	}
	return a, nil
}

// distinct returns vs without duplicates, in first-seen order.
func distinct(vs []string) []string {
	var out []string
	seen := make(map[string]bool, len(vs))
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func subjectList(subjects []string) string {
	if len(subjects) == 1 && subjects[0] == "" {
		return "(no particular subject)"
	}
	return strings.Join(subjects, ", ")
}
