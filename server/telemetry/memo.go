package telemetry

import (
	"maps"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// memo keeps what recording needs for each combination of attribute
// values (a metric's options, a span's name and start options, an
// event's options), made once, so that recording allocates nothing for
// it. The combinations are few: every value comes from a bounded set
// (that is the cardinality rule of this package). A memo keeps at most
// maxMemo of them, and makes the others each time: a bound in case a
// set is larger than it should be. The zero value is empty and ready.
//
// Reading is a load of an immutable map: no lock, nothing written that
// another core reads, since every request reads memos several times and
// almost never adds to one. Adding copies the map.
type memo[K comparable, V any] struct {
	mu sync.Mutex // serializes adding
	m  atomic.Pointer[map[K]V]
}

const maxMemo = 4096

// lookup returns the value of k if it is kept.
func (c *memo[K, V]) lookup(k K) (V, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// get returns the value of k, made by make the first time.
func (c *memo[K, V]) get(k K, make func(K) V) V {
	if v, ok := c.lookup(k); ok {
		return v
	}
	v := make(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	var next map[K]V
	if old := c.m.Load(); old != nil {
		if kept, ok := (*old)[k]; ok {
			return kept // made meanwhile
		}
		if len(*old) >= maxMemo {
			return v
		}
		next = maps.Clone(*old)
	} else {
		next = map[K]V{}
	}
	next[k] = v
	c.m.Store(&next)
	return v
}

// measurement is the options of one attribute combination of an
// instrument, as the variadic arguments of Add and Record (a slice passed
// on as such is not copied, so passing one allocates nothing), and the
// attributes the span of the same request gets at its end, if any.
type measurement struct {
	add  []metric.AddOption
	rec  []metric.RecordOption
	span []attribute.KeyValue
}

// newMeasurement returns the measurement of attrs, whose span attributes
// are span.
func newMeasurement(attrs, span []attribute.KeyValue) *measurement {
	o := metric.WithAttributeSet(attribute.NewSet(attrs...))
	return &measurement{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}, span: span}
}

// sums is a counter that counts in memory and is reported when the
// meter provider collects (an observable counter's callback, see
// Telemetry.observe): a count on the hot path is an atomic add on a
// cell, where a synchronous counter's Add would look up the attribute
// set, lock its aggregation and offer an exemplar, once for every
// decision of every request. Its series are the attribute sets counted
// so far, as a synchronous counter's are (none before the first count);
// it has no exemplars. The zero value is ready.
type sums[K comparable] struct {
	cells    memo[K, *cell]
	overflow atomic.Pointer[cell] // counts beyond maxMemo attribute sets
}

// cell is one series of a sums.
type cell struct {
	n   atomic.Int64
	opt []metric.ObserveOption
}

func newCell(set attribute.Set) *cell {
	return &cell{opt: []metric.ObserveOption{metric.WithAttributeSet(set)}}
}

// overflowSet is the attribute set of the counts beyond maxMemo
// attribute sets, as the OpenTelemetry SDK names its own overflow.
var overflowSet = attribute.NewSet(attribute.Bool("otel.metric.overflow", true))

// cell returns the cell of k, whose attributes attrs makes the first
// time.
func (s *sums[K]) cell(k K, attrs func(K) []attribute.KeyValue) *cell {
	if c, ok := s.cells.lookup(k); ok {
		return c
	}
	s.cells.get(k, func(k K) *cell { return newCell(attribute.NewSet(attrs(k)...)) })
	if c, ok := s.cells.lookup(k); ok {
		return c
	}
	// Not kept: the memo is full.
	s.overflow.CompareAndSwap(nil, newCell(overflowSet))
	return s.overflow.Load()
}

// observe reports every series of s to o as inst.
func (s *sums[K]) observe(o metric.Observer, inst metric.Int64Observable) {
	if m := s.cells.m.Load(); m != nil {
		for _, c := range *m {
			o.ObserveInt64(inst, c.n.Load(), c.opt...)
		}
	}
	if c := s.overflow.Load(); c != nil {
		o.ObserveInt64(inst, c.n.Load(), c.opt...)
	}
}
