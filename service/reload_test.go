package service_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/proc"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/service"
)

// The policies of the reload tests: viewer sees get_thing, or sees
// nothing (a role that allows only a path no tool has: a policy that
// allows nothing at all does not load); other sees get_thing in both.
const (
	seesThing   = `[{"role": "viewer", "accessPolicies": [{"path": "^/things/api/v1/things/[^/]+$", "methods": ["GET"], "effect": "allow"}]}` + otherRole + `]`
	seesNothing = `[{"role": "viewer", "accessPolicies": [{"path": "^/things/api/v1/elsewhere$", "methods": ["GET"], "effect": "allow"}]}` + otherRole + `]`
	notAPolicy  = `[{"role": "viewer", "accessPolicies": [{"path": "^/things/(", "methods": ["GET"], "effect": "allow"}]}` + otherRole + `]`
	otherRole   = `, {"role": "other", "accessPolicies": [{"path": "^/things/api/v1/things/[^/]+$", "methods": ["GET"], "effect": "allow"}]}`
	twoTokens   = `[{"token": "viewer-token", "subject": "vera", "roles": ["viewer"]}, {"token": "other-token", "subject": "otto", "roles": ["other"]}]`
)

// listen opens a 2026-07-28 subscriptions/listen stream for tools as the
// caller of token at url, and returns what the stream delivers, once
// the server acknowledged it (from then on it is told of changes).
func listen(t *testing.T, url, token string) *syncbuf.Buffer {
	t.Helper()
	h := mcptest.Header("Bearer "+token, "2026-07-28")
	h.Set("Mcp-Method", "subscriptions/listen")
	resp := mcptest.Post(t, url, h, `{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("subscriptions/listen: %s", resp.Status)
	}
	var got syncbuf.Buffer
	go io.Copy(&got, resp.Body) // until the test closes the body
	until(t, "the listen stream's acknowledgment", func() bool {
		return strings.Contains(got.String(), "notifications/subscriptions/acknowledged") && strings.Contains(got.String(), `"toolsListChanged":true`)
	})
	return &got
}

// replica is one things-mcp process and its client.
type replica struct {
	p       *proc.Proc
	url     string
	cs      *mcp.ClientSession
	metrics string // the -metrics-addr listener's base URL
}

// listed is the names of the tools replica r lists.
func (r replica) listed(t *testing.T) []string {
	t.Helper()
	res, err := r.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// status is replica r's reload status (/statusz).
func (r replica) status(t *testing.T) (st struct {
	Generation uint64 `json:"generation"`
	Trigger    string `json:"trigger"`
	Applied    int    `json:"applied"`
	Refused    int    `json:"refused"`
	Failing    bool   `json:"failing"`
	Error      string `json:"error"`
	InSync     *bool  `json:"inSync"`
}) {
	t.Helper()
	var body struct {
		Reload *json.RawMessage `json:"reload"`
	}
	if err := json.Unmarshal(get(t, r.metrics+"/statusz"), &body); err != nil || body.Reload == nil {
		t.Fatalf("/statusz: %v", err)
	}
	json.Unmarshal(*body.Reload, &st)
	return st
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return data
}

// until polls cond, bounded (a guard against a hang, not a performance
// assertion), and fails saying what never happened.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1500 {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

func replace(t *testing.T, path, data string) {
	t.Helper()
	// Written beside and renamed, as a ConfigMap update or an editor
	// does: a reader never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestOutsideReloadAcrossReplicas: three things-mcp replicas share one
// policy file and a real Redis, and poll no file (-reload-interval -1s):
// only SIGHUP and the announcements through Redis reload. A broken
// policy, on SIGHUP, changes nothing anywhere, is logged once however
// often it is tried, and shows in the status and the metrics; a good
// one, on SIGHUP to one replica, changes what callers see on all three,
// and every replica tells its listeners whose tools changed
// (notifications/tools/list_changed, naming no tool), and no other.
func TestOutsideReloadAcrossReplicas(t *testing.T) {
	bin := buildOutside(t)
	rdb := redistest.Start(t)
	api, _ := thingsAPI(t)
	policy := writeFile(t, "policy.json", seesThing)
	tokens := writeFile(t, "tokens.json", twoTokens)
	key := writeFile(t, "state.key", strings.Repeat("k", 32))
	var rs []replica
	for range 3 {
		p := proc.Start(t, bin, proc.Options{Env: []string{"TOOLROUTE_UPSTREAM_THINGS=" + api.URL, "TOOLROUTE_RELOAD_INTERVAL=-1s", "TOOLROUTE_LIST_TTL=-1s"}},
			"-addr", "127.0.0.1:0", "-policy", policy, "-tokens", tokens,
			"-redis", rdb.URL(), "-state-key-file", key, "-metrics-addr", "127.0.0.1:0")
		metrics := strings.TrimSuffix(p.Wait(t, `Prometheus metrics at (http://\S+)`), "/metrics")
		url := p.Wait(t, `serving MCP at (http://\S+)`)
		p.Wait(t, `reloading -policy \S+ and -tokens \S+ on SIGHUP, announced to the other replicas through Redis`)
		rs = append(rs, replica{p: p, url: url, cs: servertest.ConnectHTTP(t, url, "viewer-token", servertest.Options{}), metrics: metrics})
	}
	// Every replica's subscription is up before the first announcement.
	until(t, "three subscribers to the reload channel", func() bool {
		n, err := redisNumSub(rdb, "toolroute:things-mcp:reload")
		return err == nil && n == 3
	})
	for i, r := range rs {
		if got := r.listed(t); len(got) != 1 || got[0] != "get_thing" {
			t.Fatalf("replica %d lists %q at start, want get_thing", i, got)
		}
	}
	// -list-ttl -1s: ttlMs 0, so that the clients here fetch every list.
	if res, err := rs[0].cs.ListTools(context.Background(), nil); err != nil || res.TTLMs != 0 || res.CacheScope != "private" {
		t.Errorf("tools/list = ttlMs %d, cacheScope %q, %v; want 0, private", res.TTLMs, res.CacheScope, err)
	}

	// A broken policy: refused, on every try; nothing changes.
	replace(t, policy, notAPolicy)
	rs[0].p.Signal(syscall.SIGHUP)
	until(t, "replica 0's status shows the refusal", func() bool { return rs[0].status(t).Failing })
	rs[0].p.Signal(syscall.SIGHUP)
	until(t, "replica 0 counts the second refusal", func() bool { return rs[0].status(t).Refused == 2 })
	st := rs[0].status(t)
	if st.Generation != 1 || !strings.Contains(st.Error, policy) || !strings.Contains(st.Error, "missing closing )") {
		t.Errorf("replica 0's status after the refusals = %+v, want generation 1 and the error naming the file and the problem", st)
	}
	if n := strings.Count(rs[0].p.String(), "reload refused"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once for the same content:\n%s", n, rs[0].p)
	}
	if m := string(get(t, rs[0].metrics+"/metrics")); sample(m, "toolroute_policy_reload_failing", "") != "1" || sample(m, "toolroute_policy_reloads_total", `result="refused"`) != "2" {
		t.Errorf("replica 0's metrics lack the failing gauge at 1 and two refusals:\n%s", grepLines(m, "toolroute_policy"))
	}
	for i, r := range rs {
		if got := r.listed(t); len(got) != 1 {
			t.Errorf("replica %d lists %q after the broken policy, want get_thing still", i, got)
		}
		if name, toolErr, err := getThing(t, r.cs, "t-1"); err != nil || name != "thing t-1" {
			t.Errorf("replica %d: get_thing after the broken policy = %q, %q, %v", i, name, toolErr, err)
		}
	}

	// The listeners: vera on each replica, otto on replica 2.
	var heard []*syncbuf.Buffer
	for _, r := range rs {
		heard = append(heard, listen(t, r.url, "viewer-token"))
	}
	otto := listen(t, rs[2].url, "other-token")

	// A good policy, SIGHUP to replica 1 only: all three follow.
	replace(t, policy, seesNothing)
	rs[1].p.Signal(syscall.SIGHUP)
	for i, r := range rs {
		until(t, "the new policy on replica "+string(rune('0'+i)), func() bool { return len(r.listed(t)) == 0 })
		_, _, err := getThing(t, r.cs, "t-1")
		if !isUnknownTool(err) {
			t.Errorf("replica %d: get_thing after the reload = %v, want unknown tool", i, err)
		}
		st := r.status(t)
		want := map[bool]string{true: "signal", false: "announcement"}[i == 1]
		if st.Generation != 2 || st.Trigger != want || st.Failing {
			t.Errorf("replica %d's status = %+v, want generation 2 by %s, not failing", i, st, want)
		}
	}
	for i, h := range heard {
		until(t, "vera's list_changed on replica "+string(rune('0'+i)), func() bool { return strings.Contains(h.String(), "notifications/tools/list_changed") })
		for l := range strings.SplitSeq(h.String(), "\n") {
			if strings.Contains(l, "list_changed") && (strings.Contains(l, "get_thing") || !strings.Contains(l, `"io.modelcontextprotocol/subscriptionId":"listen-1"`)) {
				t.Errorf("replica %d: the notification names a tool or lacks its subscription id: %s", i, l)
			}
		}
		p := rs[i].p
		until(t, "replica's report of whom it told", func() bool { return strings.Contains(p.String(), "told the listeners whose tools changed") })
		if !strings.Contains(p.String(), "told the listeners whose tools changed\" listeners=1") {
			t.Errorf("replica %d told other listeners than vera's:\n%s", i, grepLines(p.String(), "told the listeners"))
		}
	}
	if strings.Contains(otto.String(), "list_changed") {
		t.Errorf("otto, whose tools did not change, was told: %s", otto)
	}
	if m := string(get(t, rs[0].metrics+"/metrics")); sample(m, "toolroute_policy_reload_failing", "") != "0" || sample(m, "toolroute_policy_generation", "") != "2" || sample(m, "toolroute_policy_reloads_total", `result="applied"`) != "1" {
		t.Errorf("replica 0's metrics after the good reload:\n%s", grepLines(m, "toolroute_policy"))
	}
}

func isUnknownTool(err error) bool {
	return err != nil && strings.Contains(err.Error(), `unknown tool "get_thing"`)
}

// sample is the value of the Prometheus sample of metric name whose
// labels hold label, or "".
func sample(text, name, label string) string {
	for l := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(l, name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if ok && strings.Contains(labels, label) {
			return value
		}
	}
	return ""
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// redisNumSub is the number of subscribers to channel on srv.
func redisNumSub(srv *redistest.Server, channel string) (int64, error) {
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		return 0, err
	}
	rc := redis.NewClient(opts)
	defer rc.Close()
	m, err := rc.PubSubNumSub(context.Background(), channel).Result()
	return m[channel], err
}

// TestReloadOnFileChange: a changed tokens file is reloaded without a
// signal (polled every -reload-interval): a token added gets in, a token
// removed is refused; a tokens file naming a role the policy lacks is
// refused and changes nothing, until it is fixed.
func TestReloadOnFileChange(t *testing.T) {
	api, _ := thingsAPI(t)
	tokens := writeFile(t, "tokens.json", `[{"token": "old-token", "subject": "olga", "roles": ["viewer"]}]`)
	cfg := service.Config{
		Addr:           "127.0.0.1:0",
		PolicyFile:     "testdata/things/policy.json",
		TokensFile:     tokens,
		ReloadInterval: 10 * time.Millisecond,
		Upstreams:      map[string]string{"things": api.URL},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- pingCommand().Serve(ctx, cfg, strings.NewReader(""), &stderr, &stderr) }()
	t.Cleanup(func() {
		cancel()
		if err := await.Recv(t, done, "Serve's return"); err != nil {
			t.Errorf("Serve returned %v", err)
		}
	})
	var url string
	until(t, "the announcement", func() bool {
		m := regexp.MustCompile(`serving MCP at (\S+)`).FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	status := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("new-token"); got != http.StatusUnauthorized {
		t.Fatalf("new-token before the change: HTTP %d, want 401", got)
	}
	if got := status("old-token"); got != http.StatusOK {
		t.Fatalf("old-token at start: HTTP %d, want 200", got)
	}

	replace(t, tokens, `[{"token": "new-token", "subject": "nina", "roles": ["viewer"]}]`)
	until(t, "new-token accepted", func() bool { return status("new-token") == http.StatusOK })
	if got := status("old-token"); got != http.StatusUnauthorized {
		t.Errorf("old-token after its removal: HTTP %d, want 401", got)
	}

	replace(t, tokens, `[{"token": "ghost-token", "subject": "gus", "roles": ["ghost"]}]`)
	until(t, "the refusal in the log", func() bool { return strings.Contains(stderr.String(), "reload refused") })
	if !strings.Contains(stderr.String(), `the policy has no role \"ghost\"`) {
		t.Errorf("the refusal does not say why:\n%s", &stderr)
	}
	if status("ghost-token") == http.StatusOK || status("new-token") != http.StatusOK {
		t.Error("the refused tokens file changed the tokens")
	}
	replace(t, tokens, `[{"token": "fixed-token", "subject": "fay", "roles": ["viewer"]}]`)
	until(t, "fixed-token accepted", func() bool { return status("fixed-token") == http.StatusOK })
	if n := strings.Count(stderr.String(), "reload refused"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, &stderr)
	}
	// The default -list-ttl: a list is the caller's for a minute.
	cs := servertest.ConnectHTTP(t, url, "fixed-token", servertest.Options{})
	if res, err := cs.ListTools(context.Background(), nil); err != nil || res.TTLMs != 60_000 || res.CacheScope != "private" {
		t.Errorf("tools/list = %+v, %v; want ttlMs 60000 (the default -list-ttl), cacheScope private", res, err)
	}
}
