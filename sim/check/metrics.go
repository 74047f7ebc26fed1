package check

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dedupsim/dedupsim/sim/history"
)

// progressFigures is the part of a Spark progress record the checker reads.
type progressFigures struct {
	NumInputRows   *int64 `json:"numInputRows"`
	StateOperators []struct {
		NumRowsTotal              *int64           `json:"numRowsTotal"`
		NumRowsUpdated            *int64           `json:"numRowsUpdated"`
		NumRowsDroppedByWatermark *int64           `json:"numRowsDroppedByWatermark"`
		CustomMetrics             map[string]int64 `json:"customMetrics"`
	} `json:"stateOperators"`
}

// checkMetrics: the progress figures of each authoritative batch agree with
// its row fates (a late drop or duplicate the metrics do not show is one a
// user cannot alert on). For a streaming operator numRowsUpdated = rows
// emitted (§2.5); numInputRows = rows read; numRowsDroppedByWatermark = late
// rows; customMetrics.numDroppedDuplicateRows = duplicate rows.
func (c *checker) checkMetrics() {
	h := c.h
	var ex []Example
	unparsed := 0
	for _, i := range c.authByTime {
		b := &h.Batches[i]
		var emitted, dup, late int64
		for _, r := range c.rows.of(i) {
			switch r.outcome {
			case history.Emitted:
				emitted++
			case history.Duplicate:
				dup++
			case history.Late:
				late++
			}
		}
		var bad []string
		stateful := c.sh(c.epochOf[i]).stateful()
		if stateful && b.NumRowsUpdated != emitted {
			bad = append(bad, fmt.Sprintf("numRowsUpdated %d but %d rows emitted", b.NumRowsUpdated, emitted))
		}
		if len(b.Progress) > 0 && string(b.Progress) != "null" {
			var p progressFigures
			if err := json.Unmarshal(b.Progress, &p); err != nil {
				unparsed++
			} else {
				if p.NumInputRows != nil && *p.NumInputRows != int64(len(b.Input)) {
					bad = append(bad, fmt.Sprintf("progress numInputRows %d but %d rows read", *p.NumInputRows, len(b.Input)))
				}
				if stateful && len(p.StateOperators) > 0 {
					op := p.StateOperators[0]
					if v := op.NumRowsDroppedByWatermark; v != nil && *v != late {
						bad = append(bad, fmt.Sprintf("progress numRowsDroppedByWatermark %d but %d rows dropped as late", *v, late))
					}
					if v, ok := op.CustomMetrics["numDroppedDuplicateRows"]; ok && v != dup {
						bad = append(bad, fmt.Sprintf("progress numDroppedDuplicateRows %d but %d rows dropped as duplicates", v, dup))
					}
					if v := op.NumRowsUpdated; v != nil && *v != emitted {
						bad = append(bad, fmt.Sprintf("progress numRowsUpdated %d but %d rows emitted", *v, emitted))
					}
					if v := op.NumRowsTotal; v != nil && *v != b.NumRowsTotal {
						bad = append(bad, fmt.Sprintf("progress numRowsTotal %d but the batch records %d", *v, b.NumRowsTotal))
					}
				}
			}
		}
		if len(bad) > 0 {
			ex = append(ex, Example{Batches: []int64{b.BatchID}, Detail: fmt.Sprintf("batch %d at %s: %s", b.BatchID, c.at(b.AtMs), strings.Join(bad, "; "))})
		}
	}
	if unparsed > 0 {
		c.note("metrics-mismatch: %d progress records did not parse and were skipped", unparsed)
	}
	c.add(MetricsMismatch, len(ex), fmt.Sprintf("%d batches report progress figures that disagree with their rows' fates (late drops or duplicates a dashboard would not see)", len(ex)), ex)
}
