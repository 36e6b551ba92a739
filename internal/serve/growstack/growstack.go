// Package growstack grows a goroutine's stack once, early, to the size
// the tool call path needs, instead of letting the runtime double it
// several times deep inside the call. Nothing here is API.
//
// go-sdk runs every request on a goroutine of its own, whose stack
// starts small (the runtime's adaptive starting size, a few KiB). A
// tools/call takes it through the SDK's dispatch, toolroute's middleware,
// argument decoding, schema validation and the upstream request: a stack
// of between 16 and 32 KiB. Each time the stack is outgrown, the runtime
// copies it to one twice the size, walking every frame's pointer maps; in
// a profile of 64 clients over stateless HTTP those copies, two or three
// per call at depths of 30 to 40 frames, were 9 % of the process's CPU.
// [Grow] makes one copy at the top of the call, where the stack holds a
// few frames, straight to 32 KiB; the call then never grows it again.
// (CockroachDB's util/growstack does the same for its request
// goroutines.)
package growstack

// frame is the size of [Grow]'s frame. The runtime grows a stack to the
// power of two that fits the frame being entered above what is in use
// (see runtime.newstack): a 20 KiB frame makes a stack of 32 KiB from
// any smaller one, and makes no copy of a stack already that size.
const frame = 20 << 10

// Grow makes the calling goroutine's stack at least 32 KiB, in one copy
// if it is smaller. Call it first thing on a goroutine that will run the
// call path; its cost is that one copy of a shallow stack and the
// clearing of its frame.
//
//go:noinline
func Grow() {
	var buf [frame]byte
	hold(buf[:])
}

// hold takes the address of Grow's buffer, so that the compiler keeps
// the buffer in Grow's frame (b does not escape, so it stays on the
// stack) rather than discard it.
//
//go:noinline
func hold(b []byte) { _ = b[len(b)-1] }
