package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dedupsim/dedupsim/engine/query"
)

// shape is what the rules need to know about the query a checkpoint ran.
type shape struct {
	api          string
	apiKnown     bool
	batchAPI     bool // batchDropDuplicates: per-batch dedup, no state
	withinWM     bool // dropDuplicatesWithinWatermark
	hasWatermark bool // a streaming operator with a watermark (late filter, eviction)
	timeInKey    bool // the event time is part of the dedup key
	delayMs      int64
}

func newShape(api string, delayMs int64, timeInKey bool) shape {
	s := shape{api: api, delayMs: delayMs}
	switch query.API(api) {
	case query.DropDuplicates:
		s.apiKnown, s.hasWatermark, s.timeInKey = true, delayMs >= 0, timeInKey
	case query.DropDuplicatesWithinWatermark:
		s.apiKnown, s.withinWM, s.hasWatermark, s.timeInKey = true, true, delayMs >= 0, timeInKey
	case query.BatchDropDuplicates:
		s.apiKnown, s.batchAPI = true, true
	}
	return s
}

// shapeFromQuery parses a query YAML recorded in the history (the initial
// query of a shape change, or a fresh restart's query).
func shapeFromQuery(text string) (shape, error) {
	q, err := query.Parse("query", []byte(text))
	if err != nil {
		return shape{}, err
	}
	delay := int64(-1)
	col := q.EventTimeColumn()
	if col != "" {
		delay = q.DelayMs()
	}
	// dropDuplicates() with no key columns keys on every column, the event
	// time included (spark-semantics.md §3.2).
	inKey := q.API == query.DropDuplicates && col != "" && (len(q.Keys) == 0 || slices.Contains(q.Keys, col))
	return newShape(string(q.API), delay, inKey), nil
}

func (s *shape) stateful() bool { return s.apiKnown && !s.batchAPI }

// evicting: the APIs whose state is bounded by the watermark.
func (s *shape) evicting() bool { return s.stateful() && s.hasWatermark && (s.withinWM || s.timeInKey) }

// retentionMs is how long a key stays in state: delay + trigger with the
// event time in the key, 2 x delay + trigger for WithinWatermark.
func (s *shape) retentionMs(triggerMs int64) int64 {
	if s.withinWM {
		return satAdd(satMul(s.delayMs, 2), triggerMs)
	}
	return satAdd(s.delayMs, triggerMs)
}

func (s *shape) name() string {
	if s.api == "" {
		return "the api"
	}
	return s.api
}

// guarantee states the API's promise in one phrase.
func (s *shape) guarantee() string {
	switch {
	case !s.apiKnown:
		return "unknown api: judged as never evicting"
	case s.batchAPI:
		return "no two copies emitted by one batch"
	case s.timeInKey:
		return "no two copies with the same event time emitted"
	case s.withinWM && s.hasWatermark:
		return fmt.Sprintf("no two copies less than the delay (%s) apart emitted", Dur(s.delayMs))
	case s.hasWatermark:
		return "the event time is not in the key, so state is never evicted: no copy emitted twice"
	default:
		return "no watermark, so state is never evicted: no copy emitted twice"
	}
}

// sh is the shape of checkpoint epoch e.
func (c *checker) sh(e int) *shape {
	if e >= 0 && e < len(c.shapes) {
		return &c.shapes[e]
	}
	return &c.final
}

// describe names the query shape(s) for a finding's message.
func (c *checker) describe() string {
	if c.mixedShapes {
		return "the query of each checkpoint (the shape changed)"
	}
	return fmt.Sprintf("%s's guarantee (%s)", c.final.name(), c.final.guarantee())
}

// resolveShapes gives each checkpoint epoch its query shape: the last one
// uses the history's fields (the final query); an earlier one uses the query
// it was started with (InitialQuery for the first, the opening fresh
// restart's Query for later ones), or the final fields when none is recorded.
func (c *checker) resolveShapes(openers []string) {
	h := c.h
	c.final = newShape(h.API, h.DelayMs, h.EventTimeInKey)
	c.shapes = make([]shape, c.counts.Checkpoints)
	for e := range c.shapes {
		c.shapes[e] = c.final
		if e == len(c.shapes)-1 {
			continue
		}
		text := ""
		if e == 0 {
			text = h.InitialQuery
		} else if e-1 < len(openers) {
			text = openers[e-1]
		}
		if text == "" {
			continue
		}
		s, err := shapeFromQuery(text)
		if err != nil {
			c.note("checkpoint %d: its query does not parse (%v); judged with the final query", e, err)
			continue
		}
		c.shapes[e] = s
		if s != c.final {
			c.mixedShapes = true
		}
	}
	seen := map[shape]bool{}
	for _, s := range c.shapes {
		if seen[s] {
			continue
		}
		seen[s] = true
		if !s.apiKnown {
			c.bad(Example{Detail: fmt.Sprintf("unknown api %q: every duplicate emission within a checkpoint is judged a violation", s.api)})
		}
		if s.withinWM && s.delayMs < 0 {
			c.bad(Example{Detail: "dropDuplicatesWithinWatermark without a watermark (delayMs < 0) is rejected by Spark; duplicates are judged as if state were never evicted"})
		}
	}
	// The recorders write one key per event: the first key column that is
	// not the event time holds the event id, further key columns values
	// derived from it. A key of the event time alone is the one case where
	// two events can share a key.
	if h.EventTimeInKey && len(h.Keys) == 1 {
		c.note("dedup keys [%s] are the event time alone: two events with one event time share a key, while the checker models the key as the event id plus the event time", strings.Join(h.Keys, ", "))
	}
}
