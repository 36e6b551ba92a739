package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/tasktest"
)

// TestTasksAcrossReplicas runs three example-service processes sharing
// one Redis (-redis): audit_catalog with delay_ms 1000 becomes a task for
// a client that declares the extension, created on A, polled on B and
// fetched on C; another caller cannot see it; a client that does not
// declare the extension gets the report synchronously; a replica stopped
// gracefully finishes its task first; and a task whose replica is
// killed ends failed on the others once its lease ran out.
func TestTasksAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three example-service processes")
	}
	f := startFleet(t)
	a, b, c := f.replicas[0], f.replicas[1], f.replicas[2]
	at := func(r *replica, token string, declares bool) tasktest.Client {
		return tasktest.Client{URL: r.url, Token: token, Declares: declares}
	}
	slow := map[string]any{"delay_ms": 1000}

	id := at(a, "t-other", true).Create(t, "audit_catalog", slow)
	if got, rerr := at(b, "t-other", true).Get(t, id); rerr != nil || (got["status"] != "working" && got["status"] != "completed") {
		t.Fatalf("tasks/get on B = %v, %+v", got, rerr)
	}
	if _, rerr := at(b, "t-cancel", true).Get(t, id); rerr == nil || rerr.Code != -32602 {
		t.Errorf("another caller's tasks/get on B = %+v, want -32602", rerr)
	}
	done := at(c, "t-other", true).Until(t, id, "completed", await.Timeout)
	if s := tasktest.Text(done["result"]); !strings.Contains(s, `"checked":3`) {
		t.Errorf("the audit's result on C: %s", s)
	}

	res, rerr := at(a, "t-other", false).Call(t, "audit_catalog", slow)
	if rerr != nil || res["resultType"] == "task" || !strings.Contains(tasktest.Text(res), `"checked":3`) {
		t.Errorf("without the extension: %v, %+v; want the report", res, rerr)
	}

	// A graceful stop (SIGINT) lets the running task finish first
	// (-shutdown-timeout, 10 s by default): B sees it completed.
	stopped := at(c, "t-cancel", true).Create(t, "audit_catalog", slow)
	c.cmd.Process.Signal(os.Interrupt)
	await.Recv(t, c.exited, "the stopped replica's exit")
	if s := tasktest.Text(at(b, "t-cancel", true).Until(t, stopped, "completed", time.Second)["result"]); !strings.Contains(s, `"checked":3`) {
		t.Errorf("the task of the stopped replica: %s", s)
	}

	// Replica death: the task's replica is killed; B fails it once the
	// lease (15 s) ran out.
	dead := at(a, "t-kill", true).Create(t, "audit_catalog", slow)
	a.kill()
	got := at(b, "t-kill", true).Until(t, dead, "failed", 40*time.Second)
	if msg, _ := got["statusMessage"].(string); !strings.Contains(msg, "lease ran out") {
		t.Errorf("the dead replica's task: %v", got)
	}
}
