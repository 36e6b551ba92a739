package telemetry

import (
	"sync"

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
type memo[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

const maxMemo = 4096

// lookup returns the value of k if it is kept.
func (c *memo[K, V]) lookup(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

// get returns the value of k, made by make the first time.
func (c *memo[K, V]) get(k K, make func(K) V) V {
	if v, ok := c.lookup(k); ok {
		return v
	}
	v := make(k)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]V{}
	}
	if len(c.m) < maxMemo {
		c.m[k] = v
	}
	c.mu.Unlock()
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
