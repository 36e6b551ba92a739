package telemetry

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestSumsReportWhatWasCounted counts in a sums from several goroutines,
// beyond maxMemo attribute sets, and collects it through a real meter
// provider: every kept set reports its own count, and the counts beyond
// the bound are one otel.metric.overflow series, so no count is lost.
func TestSumsReportWhatWasCounted(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	// Above maxMemo: the SDK's own limit (2,000 series) would fold the
	// series before this test could see them.
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithCardinalityLimit(2*maxMemo))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	m := mp.Meter("test")
	inst, err := m.Int64ObservableCounter("test.counts")
	if err != nil {
		t.Fatal(err)
	}
	var s sums[int]
	if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s.observe(o, inst)
		return nil
	}, inst); err != nil {
		t.Fatal(err)
	}
	attrs := func(k int) []attribute.KeyValue { return []attribute.KeyValue{attribute.Int("k", k)} }
	const extra = 10
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for k := range maxMemo + extra {
				s.cell(k, attrs).n.Add(1)
			}
		})
	}
	wg.Wait()
	s.cell(7, attrs).n.Add(1)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				key := "overflow"
				if v, ok := dp.Attributes.Value("k"); ok {
					key = strconv.FormatInt(v.AsInt64(), 10)
				}
				got[key] = dp.Value
			}
		}
	}
	if len(got) != maxMemo+1 {
		t.Fatalf("%d series, want %d kept and one overflow", len(got), maxMemo)
	}
	if got["7"] != 5 || got["0"] != 4 || got[strconv.Itoa(maxMemo-1)] != 4 {
		t.Errorf("counts of kept sets: 7=%d 0=%d last=%d, want 5, 4, 4", got["7"], got["0"], got[strconv.Itoa(maxMemo-1)])
	}
	if got["overflow"] != 4*extra {
		t.Errorf("overflow counted %d, want %d", got["overflow"], 4*extra)
	}
}
