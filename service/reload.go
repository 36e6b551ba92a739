package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/redisstore"
	"github.com/toolroute/toolroute/server"
)

// A reloader reads the -policy and -tokens files again while the service
// runs: on SIGHUP, when they changed (polled every -reload-interval, and
// applied once they held still for one interval) and, with -redis, when
// another replica announces that it reloaded. A reload reads both files
// and checks them together, as at start (the policy compiles and grants
// something, the tokens' roles, -caller's and -anonymous's are the
// policy's); then it swaps the tokens and the policy in, or, if anything
// is wrong, keeps both as they were: a broken file changes nothing. The
// refusal is logged once per content of the files, counted
// (toolroute.policy.reloads{result="refused"}) and shown in the status
// (toolroute.policy.reload.failing, and /statusz on the -metrics-addr
// listener) until a reload succeeds. After a reload, the listeners whose
// visible tools changed are told (server.NotifyListChanged).
//
// With -redis, a replica that reloaded on SIGHUP or on a change announces
// the digests of what it loaded (a redisstore.Broadcast), and every
// other replica reads its own files again. Replicas reload the same
// files, not the same content: the files stay the one source of truth
// (a replica that restarts loads what the others serve), tokens never
// travel through Redis, and each replica checks what it serves itself.
// A replica whose files do not yet hold what was announced (a ConfigMap
// not yet synced to its node) says so in its log and status, and
// catches up when its files change.
type reloader struct {
	name     string
	logger   *slog.Logger
	load     func() (*accessFiles, error)
	acc      *access
	policy   string // -policy, or ""
	tokens   string // -tokens, or ""
	interval time.Duration
	news     *redisstore.Broadcast // nil without -redis
	server   *mcp.Server           // told of each reload, for its listeners

	reloads   metric.Int64Counter
	announced chan fileSums // another replica's news, the latest only

	mu sync.Mutex // guards st and the fields below
	st reloadStatus
	// refused is the content of the files last refused, whose refusal
	// is logged; loggedBehind the announced content this replica's
	// files were found not to hold, logged.
	refused, loggedBehind fileSums
}

// reloadStatus is what /statusz shows of the reloads.
type reloadStatus struct {
	// Generation counts the policies and tokens loaded, 1 at start.
	Generation uint64 `json:"generation"`
	// LoadedAt is when the current ones were loaded, Trigger why:
	// "start", "signal" (SIGHUP), "file" (a change), "announcement".
	LoadedAt time.Time `json:"loadedAt"`
	Trigger  string    `json:"trigger"`
	// PolicyFile and TokensFile are the files reloaded.
	PolicyFile string `json:"policyFile,omitempty"`
	TokensFile string `json:"tokensFile,omitempty"`
	// Loaded are the digests of what they held when loaded.
	Loaded fileSums `json:"loaded"`
	// Applied and Refused count the reloads since start.
	Applied int `json:"applied"`
	Refused int `json:"refused"`
	// Failing is true while the files hold what a reload refused, Error
	// why (the file and the problem; never a token), since FailedAt.
	Failing  bool       `json:"failing"`
	Error    string     `json:"error,omitempty"`
	FailedAt *time.Time `json:"failedAt,omitempty"`
	// Announced is the last reload another replica announced, and
	// InSync whether this replica serves what it loaded.
	Announced *fileSums `json:"announced,omitempty"`
	InSync    *bool     `json:"inSync,omitempty"`
}

// newReloader returns the reloader of k, or nil when there is nothing to
// reload: neither -policy nor -tokens (an embedded policy and an RBAC
// proxy's do not change under the service).
func newReloader(k *kit) *reloader {
	cfg := k.cfg
	if cfg.PolicyFile == "" && cfg.TokensFile == "" {
		return nil
	}
	r := &reloader{
		name:      k.cmd.Name,
		logger:    k.logger,
		load:      func() (*accessFiles, error) { return readAccessFiles(k.cmd, cfg, k.table) },
		acc:       k.acc,
		policy:    cfg.PolicyFile,
		tokens:    cfg.TokensFile,
		interval:  cfg.ReloadInterval,
		announced: make(chan fileSums, 1),
		st: reloadStatus{
			Generation: 1, LoadedAt: time.Now().UTC(), Trigger: "start",
			PolicyFile: cfg.PolicyFile, TokensFile: cfg.TokensFile, Loaded: k.acc.files.sums,
		},
	}
	meter := k.obs.meter()
	r.reloads, _ = meter.Int64Counter("toolroute.policy.reloads", metric.WithDescription("Reloads of the -policy and -tokens files, by result: applied, refused (the files were kept as they were)"))
	meter.Int64ObservableGauge("toolroute.policy.reload.failing",
		metric.WithDescription("1 while the -policy or -tokens file holds what a reload refused (the service serves the last good ones), else 0"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			failing := r.st.Failing
			r.mu.Unlock()
			o.Observe(map[bool]int64{true: 1}[failing])
			return nil
		}))
	meter.Int64ObservableGauge("toolroute.policy.generation",
		metric.WithDescription("The generation of the policy and tokens served: 1 at start, one more per applied reload"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			g := r.st.Generation
			r.mu.Unlock()
			o.Observe(int64(g))
			return nil
		}))
	if k.sh != nil {
		r.news = redisstore.NewBroadcast(k.sh.rdb, "reload", "policy reloads", k.sh.opts)
	}
	return r
}

// run reloads on SIGHUP, on a change of the files and on another
// replica's announcement until ctx is done. One goroutine does every
// reload: they never overlap.
func (r *reloader) run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if r.news != nil {
		stop := r.news.Subscribe(func(p json.RawMessage) {
			var sums fileSums
			if json.Unmarshal(p, &sums) != nil {
				return
			}
			select { // the latest news replaces news not yet read
			case <-r.announced:
			default:
			}
			r.announced <- sums
		})
		defer stop()
	}
	var tick <-chan time.Time
	if r.interval > 0 {
		t := time.NewTicker(r.interval)
		defer t.Stop()
		tick = t.C
	}
	var pending fileSums // a change seen at the last tick, not yet applied
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.reload(ctx, "signal")
			pending = fileSums{}
		case sums := <-r.announced:
			r.reload(ctx, "announcement")
			r.compare(sums)
		case <-tick:
			cur := r.sums()
			r.mu.Lock()
			same := cur == r.st.Loaded || cur == r.refused
			r.mu.Unlock()
			switch {
			case same:
				pending = fileSums{}
			case cur == pending: // held still for one interval
				r.reload(ctx, "file")
				pending = fileSums{}
			default:
				pending = cur
			}
		}
	}
}

// close ends the announcements' subscription.
func (r *reloader) close() {
	if r != nil && r.news != nil {
		r.news.Close()
	}
}

// sums are the digests of the files as they are now; a file that cannot
// be read has a digest saying so, so that it counts as a change (and its
// reload fails, naming the error).
func (r *reloader) sums() fileSums {
	sum := func(path string) string {
		if path == "" {
			return ""
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "unreadable: " + err.Error()
		}
		return digest(data)
	}
	return fileSums{Policy: sum(r.policy), Tokens: sum(r.tokens)}
}

// reload reads the files and swaps them in if they are good and differ
// from what is loaded; it reports whether it swapped. A local reload
// (not an announcement's) is announced to the other replicas.
func (r *reloader) reload(ctx context.Context, trigger string) bool {
	seen := r.sums()
	f, err := r.load()
	r.mu.Lock()
	if err != nil {
		now := time.Now().UTC()
		r.st.Refused++
		if !r.st.Failing {
			r.st.FailedAt = &now
		}
		r.st.Failing, r.st.Error = true, err.Error()
		logIt := seen != r.refused
		r.refused = seen
		r.mu.Unlock()
		r.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "refused")))
		if logIt {
			r.logger.Error(r.name+": reload refused: the policy and tokens stay as they were", slog.String("trigger", trigger), slog.String("error", err.Error()))
		}
		return false
	}
	if f.sums == r.st.Loaded {
		wasFailing := r.st.Failing
		r.st.Failing, r.st.Error, r.st.FailedAt, r.refused = false, "", nil, fileSums{}
		r.mu.Unlock()
		if wasFailing {
			r.logger.Info(r.name+": the files hold what is served again", slog.String("trigger", trigger))
		}
		return false
	}
	// Tokens first: a token revoked is revoked before the policy changes.
	if r.acc.tokens != nil && r.tokens != "" {
		r.acc.tokens.swap(f.tokens)
	}
	if r.acc.policy != nil && r.policy != "" {
		r.acc.policy.Swap(&policyAt{f.policy, f.sums.Policy})
	}
	r.acc.files = f
	r.st.Generation++
	r.st.LoadedAt, r.st.Trigger, r.st.Loaded = time.Now().UTC(), trigger, f.sums
	r.st.Applied++
	r.st.Failing, r.st.Error, r.st.FailedAt, r.refused = false, "", nil, fileSums{}
	gen := r.st.Generation
	r.mu.Unlock()
	r.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "applied")))
	r.logger.Info(r.name+": reloaded the policy and tokens", slog.String("trigger", trigger), slog.Uint64("generation", gen),
		slog.String("policy_sha256", f.sums.Policy), slog.String("tokens_sha256", f.sums.Tokens))
	for _, l := range f.lint {
		r.logger.Warn(r.name+": policy lint: "+l, slog.String("check", r.name+" check"))
	}
	if r.server != nil {
		if n := server.NotifyListChanged(ctx, r.server); n > 0 {
			r.logger.Info(r.name+": told the listeners whose tools changed", slog.Int("listeners", n))
		}
	}
	if r.news != nil && trigger != "announcement" {
		payload, _ := json.Marshal(f.sums)
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := r.news.Publish(pctx, payload); err != nil {
			r.logger.Warn(r.name+": announcing the reload to the other replicas failed: they reload when their files change", slog.Any("error", err))
		}
	}
	return true
}

// compare records another replica's announcement, and whether this
// replica serves what it loaded; a difference is logged once.
func (r *reloader) compare(announced fileSums) {
	r.mu.Lock()
	in := r.st.Loaded == announced
	r.st.Announced, r.st.InSync = &announced, &in
	logIt := !in && announced != r.loggedBehind
	if logIt {
		r.loggedBehind = announced
	}
	loaded := r.st.Loaded
	r.mu.Unlock()
	if logIt {
		r.logger.Warn(r.name+": another replica reloaded files this replica's do not hold: it reloads once its files change",
			slog.String("announced_policy_sha256", announced.Policy), slog.String("announced_tokens_sha256", announced.Tokens),
			slog.String("policy_sha256", loaded.Policy), slog.String("tokens_sha256", loaded.Tokens))
	}
}

// ServeHTTP serves the status as JSON: {"reload": {...}}.
func (r *reloader) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	st := r.st
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(struct {
		Reload reloadStatus `json:"reload"`
	}{st})
}

// describe tells the operator what reloads, and how.
func (r *reloader) describe(b *strings.Builder, status string) {
	var files []string
	if r.policy != "" {
		files = append(files, "-policy "+r.policy)
	}
	if r.tokens != "" {
		files = append(files, "-tokens "+r.tokens)
	}
	how := "on SIGHUP"
	if r.interval > 0 {
		how += fmt.Sprintf(" and when they change (checked every %v)", r.interval)
	}
	if r.news != nil {
		how += ", announced to the other replicas through Redis"
	}
	fmt.Fprintf(b, "%s: reloading %s %s\n", r.name, strings.Join(files, " and "), how)
	if status != "" {
		fmt.Fprintf(b, "%s: reload status at %s\n", r.name, status)
	}
}
