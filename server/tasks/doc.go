// Package tasks serves the MCP Tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663) on a toolroute server, on go-sdk's public extension points:
// custom methods (tasks/get, tasks/update, tasks/cancel), a receiving
// middleware, and the server's advertised extensions.
//
// A tool opts in in its declaration (tool.Tool.Task): TaskAlways makes
// every call a task, TaskAllowed one that runs longer than
// tool.Tool.TaskAfter. Only a client that declares the extension in the
// request's own capabilities (_meta io.modelcontextprotocol/clientCapabilities,
// MCP 2026-07-28) ever gets a task; every other client gets the
// synchronous answer, and a task method from it the SEP's error -32021.
//
//	tasks, err := tasks.New(tasks.Options{Authorizer: opts.Authorizer})
//	s, err := server.New(opts, server.Install(reg, deps), tasks)
//	defer tasks.Shutdown(ctx)
//
// # The protocol
//
// A call that becomes a task is answered with a CreateTaskResult
// (resultType "task": taskId, status, createdAt, lastUpdatedAt, ttlMs,
// pollIntervalMs) once the task is in the [Store], so that a tasks/get on
// any replica sharing it finds it. The handler keeps running, detached
// from the request, under Options.RunTimeout. tasks/get answers the task
// with its status's payload: inputRequests while input_required, the
// CallToolResult once completed (an isError result too), the JSON-RPC
// error once failed. A handler that asks for input (an
// authz/permission question, any multi round-trip InputRequests) puts the
// task in input_required; tasks/update's inputResponses are recorded,
// and once every outstanding request is answered the handler runs again
// with them, as a multi round-trip retry would (its RequestState
// included). Keys are the handler's prefixed with the round ("1.permission"),
// unique over the task's life. tasks/cancel cancels the handler's
// context; the task ends cancelled (or as it finished, if it finished
// first). Terminal states never change: every write checks.
//
// # Bound to the caller
//
// A task belongs to the subject (authz.Caller.Subject) that created it;
// a caller without a subject gets no task. Every task request re-checks
// the subject and asks Options.Authorizer again whether the caller may
// still see the tool: another caller's task id, an unknown one, an
// expired one and one whose tool the caller lost all answer "Task not
// found" (-32602) alike. Task ids are 130 random bits. Over HTTP, an
// Mcp-Name header that is not the request's taskId is refused (-32020).
//
// # Replicas
//
// Task state lives in the Store: [Memory] (the default) or
// redisstore.NewTaskStore, shared by replicas. The work runs on the
// replica that accepted the call, which holds a lease on the task and
// renews it every Options.Lease/3, picking up cancellations and input
// responses given on other replicas then; a task whose lease ran out is
// failed by the next request that reads it, so a dead replica's tasks
// end failed within Options.Lease of its death. A store outage fails
// closed: no task is created (the call is not run), task requests get an
// internal error, and a finished task's outcome is retried until the
// store takes it.
//
// # Limits and shutdown
//
// Options.MaxPerCaller and MaxRunning cap running tasks (CodeTooManyTasks
// with retryAfterMs); Options.MaxResultBytes bounds a result.
// [Tasks.Shutdown] lets running tasks finish until its context ends, then
// fails the rest.
package tasks
