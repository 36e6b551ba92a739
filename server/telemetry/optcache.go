package telemetry

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// optCache keeps the measurement option of each attribute combination an
// instrument records, so that recording allocates nothing for its
// attributes. The combinations are few: every value comes from a
// bounded set (that is the cardinality rule of this package).
type optCache[K comparable] struct {
	mu sync.RWMutex
	m  map[K]metric.MeasurementOption
}

// get returns the option of k, made from attrs(k) the first time.
func (c *optCache[K]) get(k K, attrs func(K) []attribute.KeyValue) metric.MeasurementOption {
	c.mu.RLock()
	o, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return o
	}
	o = metric.WithAttributeSet(attribute.NewSet(attrs(k)...))
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]metric.MeasurementOption{}
	}
	c.m[k] = o
	c.mu.Unlock()
	return o
}
