package progress

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/dedupsim/dedupsim/internal/duration"
)

// Plan is what an event log's SQL plan says of a query's dedup (the
// SparkListenerSQLExecutionStart of each micro-batch, docs/diagnose.md
// A.2c): the operator, its key columns as the query wrote them, and the
// watermark's column and delay. Progress records carry none of it.
type Plan struct {
	// API is dropDuplicates (StreamingDeduplicate) or
	// dropDuplicatesWithinWatermark (StreamingDeduplicateWithinWatermark).
	API string `json:"api"`
	// Keys are the dedup key columns in the plan's order.
	Keys []string `json:"keys"`
	// EventTime is the watermarked column, DelayMs its delay (HasDelay:
	// the plan says it).
	EventTime string `json:"eventTimeColumn,omitempty"`
	DelayMs   int64  `json:"delayMs,omitempty"`
	HasDelay  bool   `json:"-"`
}

var (
	// StreamingDeduplicate [id#0, ts#3-T30000ms], state info [ checkpoint = ..., runId = <uuid>, ...
	planDedup = regexp.MustCompile(`StreamingDeduplicate(WithinWatermark)? \[([^\]]*)\], state info \[ checkpoint = [^,]*, runId = ([0-9a-f-]{36})`)
	// EventTimeWatermark <uuid>, ts#3: timestamp, 30 seconds
	planWatermark = regexp.MustCompile(`EventTimeWatermark [0-9a-f-]{36}, ([^#"]+)#\d+: [a-z_]+, ([^"\\]+?)(?:\\n|")`)
	// -T30000ms: an attribute's watermark delay metadata.
	planDelay = regexp.MustCompile(`-T(\d+)ms$`)
)

// planLine reads the dedup of a SQL execution's plan, once per run.
func (c *collector) planLine(line []byte) {
	m := planDedup.FindSubmatch(line)
	if m == nil {
		return
	}
	run := string(m[3])
	if c.plans == nil {
		c.plans = map[string]Plan{}
	}
	if _, ok := c.plans[run]; ok {
		return
	}
	p := Plan{API: "dropDuplicates"}
	if len(m[1]) > 0 {
		p.API = "dropDuplicatesWithinWatermark"
	}
	for _, a := range strings.Split(string(m[2]), ", ") {
		name, rest, ok := strings.Cut(a, "#")
		if !ok || name == "" {
			continue
		}
		if d := planDelay.FindStringSubmatch(rest); d != nil {
			p.EventTime = name
			if ms, err := duration.Delay(d[1] + "ms"); err == nil {
				p.DelayMs, p.HasDelay = ms, true
			}
		}
		p.Keys = append(p.Keys, name)
	}
	if w := planWatermark.FindSubmatch(line); w != nil && p.EventTime == "" {
		p.EventTime = string(bytes.TrimSpace(w[1]))
		if ms, err := duration.Delay(strings.TrimSpace(string(w[2]))); err == nil {
			p.DelayMs, p.HasDelay = ms, true
		}
	}
	c.plans[run] = p
}
