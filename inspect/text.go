package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/internal/duration"
)

// JSON is the report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// NoWatermark says the checkpoint shows no watermark at all: no
// operator's state holds an event time (or expiry), and the watermark is
// still 0.
func (r *Report) NoWatermark() bool {
	if r.BatchWatermarkMs != 0 || r.NextBatchWatermarkMs != 0 || len(r.Operators) == 0 {
		return false
	}
	for _, o := range r.Operators {
		if o.EventTime != "" {
			return false
		}
	}
	return true
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "checkpoint %s\n", r.Checkpoint)
	fmt.Fprintf(w, "  query id: %s\n", r.QueryID)
	pending := ""
	if r.Pending {
		pending = fmt.Sprintf(" (batch %d in flight: offsets written, no commit)", r.LastOffsetBatch)
	}
	fmt.Fprintf(w, "  last batch: offsets %d, committed %d%s\n", r.LastOffsetBatch, r.LastCommitBatch, pending)
	if r.NoWatermark() {
		fmt.Fprintf(w, "  watermark: none: no operator's state holds an event time and the offset log's batchWatermarkMs never left 0 (the query has no withWatermark before its dedup, so nothing is evicted)\n")
	} else {
		fmt.Fprintf(w, "  watermark: batch %d ran with %s; the next batch runs with %s\n", r.LastOffsetBatch, msText(r.BatchWatermarkMs), msText(r.NextBatchWatermarkMs))
	}
	if r.BatchTimestampMs > 0 {
		fmt.Fprintf(w, "  last trigger: %s\n", msText(r.BatchTimestampMs))
	}
	for i, o := range r.SourceOffsets {
		fmt.Fprintf(w, "  source %d offset: %s\n", i, o)
	}
	keys := make([]string, 0, len(r.Conf))
	for k := range r.Conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  pinned %s = %s\n", k, r.Conf[k])
	}
	format := ""
	if r.CheckpointFormat == 2 {
		format = " (state checkpoint format v2: files chosen by the checkpoint ids of the commit log)"
	}
	fmt.Fprintf(w, "  state store: %s%s\n", r.Provider, format)
	for _, o := range r.Operators {
		fmt.Fprintf(w, "  operator %d %s (store %s): %d partitions, %d keys at state version %d\n", o.ID, o.Name, o.StoreName, o.NumPartitions, o.Keys, o.Version)
		fmt.Fprintf(w, "    key schema:   %s\n    value schema: %s\n", o.KeySchema, o.ValueSchema)
		if o.EventTime != "" {
			fmt.Fprintf(w, "    event time: %s", o.EventTime)
			if o.DelayMs > 0 {
				fmt.Fprintf(w, " (watermark delay %s)", time.Duration(o.DelayMs)*time.Millisecond)
			}
			fmt.Fprintln(w)
		}
		for _, p := range o.Partitions {
			rng := ""
			if p.HasRange {
				rng = fmt.Sprintf(", %s %s .. %s", o.EventTime, usText(p.MinUs), usText(p.MaxUs))
			}
			id := ""
			if p.CheckpointID != "" {
				id = ", checkpoint id " + p.CheckpointID
			}
			if p.Ignored > 0 {
				id += fmt.Sprintf(", %d ignored", p.Ignored)
			}
			fmt.Fprintf(w, "    partition %d: %d keys%s (from %s, %d files%s)\n", p.ID, p.Keys, rng, p.From, p.Files, id)
		}
		if o.KeysWithSeveralTimes > 0 {
			fmt.Fprintf(w, "    %d key(s) held under more than one %s: re-stamped retries that dropDuplicates on (id, event time) let through; dropDuplicatesWithinWatermark would have caught them (seed 000)\n", o.KeysWithSeveralTimes, o.EventTime)
			if len(o.SeveralTimesExamples) > 0 {
				fmt.Fprintf(w, "      for example: %s\n", strings.Join(o.SeveralTimesExamples, "; "))
			}
		}
	}
	for _, m := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", m)
	}
}

func msText(ms int64) string { return fmt.Sprintf("%d ms (%s)", ms, duration.Stamp(ms)) }

func usText(us int64) string { return duration.StampMicros(us) }
