package diagnose

import "github.com/dedupsim/dedupsim/engine/query"

// FromQuery sets what the query itself says (--query): the watermark
// delay, the smallest of its sources', and real-time mode, with its
// trigger, or micro-batches (RealTimeMs -1).
func (o *Options) FromQuery(q *query.Query) {
	for _, s := range q.Sources {
		if s.Watermark != nil && (o.DelayMs == 0 || s.Watermark.DelayMs < o.DelayMs) {
			o.DelayMs = s.Watermark.DelayMs
		}
	}
	o.RealTimeMs = q.RealTimeMs
	if o.RealTimeMs == 0 {
		o.RealTimeMs = -1 // the query says micro-batches
	}
}
