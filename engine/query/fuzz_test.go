package query

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// render writes q back as QUERY.yaml, every field explicit, so that parsing
// the result must give q again.
func render(q *Query) string {
	var b strings.Builder
	quote := strconv.Quote // a YAML double-quoted scalar accepts Go's escapes for these inputs
	list := func(cols []string) string {
		parts := make([]string, len(cols))
		for i, c := range cols {
			parts[i] = quote(c)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	wm := func(w *Watermark) string {
		return fmt.Sprintf("{column: %s, delay: %q}", quote(w.Column), fmt.Sprintf("%d milliseconds", w.DelayMs))
	}
	fmt.Fprintf(&b, "name: %s\n", quote(q.Name))
	if q.Keys != nil {
		fmt.Fprintf(&b, "dedup: {api: %s, keys: %s}\n", q.API, list(q.Keys))
	} else {
		fmt.Fprintf(&b, "dedup: {api: %s}\n", q.API)
	}
	if len(q.Sources) == 1 && q.Sources[0].Name == DefaultSourceName {
		if w := q.Sources[0].Watermark; w != nil {
			fmt.Fprintf(&b, "watermark: %s\n", wm(w))
		}
	} else {
		b.WriteString("sources:\n")
		for _, s := range q.Sources {
			fmt.Fprintf(&b, "  - name: %s\n", quote(s.Name))
			if s.Watermark != nil {
				fmt.Fprintf(&b, "    watermark: %s\n", wm(s.Watermark))
			}
		}
	}
	fmt.Fprintf(&b, "shuffle_partitions: %d\nstate_store: %s\nwatermark_policy: %s\nno_data_batches: %v\n",
		q.ShufflePartitions, q.StateStore, q.WatermarkPolicy, q.NoDataBatches)
	fmt.Fprintf(&b, "sink:\n  kind: %s\n", q.Sink.Kind)
	if q.Sink.AppID != "" {
		fmt.Fprintf(&b, "  app_id: %s\n", quote(q.Sink.AppID))
	}
	if q.Sink.HasLookback {
		fmt.Fprintf(&b, "  lookback: \"%d milliseconds\"\n", q.Sink.LookbackMs)
	}
	if q.Sink.Keys != nil {
		fmt.Fprintf(&b, "  keys: %s\n", list(q.Sink.Keys))
	}
	if q.Schema != nil {
		fmt.Fprintf(&b, "schema: %s\n", quote(q.Schema.String()))
	}
	return b.String()
}

// printable reports whether strconv.Quote output is also a valid YAML
// double-quoted scalar meaning the same string (true for printable ASCII).
func printable(q *Query) bool {
	ok := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] >= 0x7f {
				return false
			}
		}
		return true
	}
	all := append([]string{q.Name, q.Sink.AppID}, q.Keys...)
	all = append(all, q.Sink.Keys...)
	if q.Schema != nil {
		all = append(all, q.Schema.Names()...)
	}
	for _, s := range q.Sources {
		all = append(all, s.Name)
		if s.Watermark != nil {
			all = append(all, s.Watermark.Column)
		}
	}
	for _, s := range all {
		if !ok(s) {
			return false
		}
	}
	return true
}

func FuzzParseQuery(f *testing.F) {
	seeds := []string{
		"",
		"dedup: {api: dropDuplicates}\n",
		"dedup:\n  api: dropDuplicatesWithinWatermark\n  keys: [id]\nwatermark:\n  column: event_time\n  delay: 10 seconds\nshuffle_partitions: 2\n",
		"sources:\n  - name: web\n    watermark: {column: ts, delay: 10 seconds}\n  - name: mobile\n    watermark: {column: ts, delay: 20s}\ndedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark_policy: max\n",
		"dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1 hour}\nsink: {kind: merge, lookback: 7 days, keys: [id]}\n",
		"dedup: {api: batchDropDuplicates}\nsink: {kind: table, app_id: x}\nno_data_batches: false\nstate_store: pebble\n",
		"x: &a [*a]\n",
		"dedup: {api: dropDuplicate}\n",
		"dedup: {<<: {api: dropDuplicates}}\n",
		"watermark: {column: ts, delay: INTERVAL '1' DAY}\ndedup: {api: dropDuplicates}\n",
		"dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1s}\nschema: \"id STRING, ts TIMESTAMP, `a b` DOUBLE NOT NULL\"\n",
		"dedup: {api: dropDuplicates}\nschema: [\"id BIGINT\", {ts: timestamp}, {name: x, type: boolean}]\n",
		"dedup: {api: dropDuplicates, keys: [idd]}\nschema: \"id STRING\"\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := Parse("fuzz.yaml", data)
		if err != nil {
			var qe *Error
			if !errors.As(err, &qe) {
				t.Fatalf("error %T %q is not *query.Error", err, err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(q.Sources) == 0 || q.ShufflePartitions < 1 || q.ShufflePartitions > MaxShufflePartitions {
			t.Fatalf("invariant broken: %+v", q)
		}
		if q.API == DropDuplicatesWithinWatermark && q.EventTimeColumn() == "" {
			t.Fatalf("within-watermark query without watermark accepted: %+v", q)
		}
		if q.DelayMs() < 0 || (q.Sink.HasLookback && q.Sink.LookbackMs < 0) {
			t.Fatalf("negative delay accepted: %+v", q)
		}
		if q.EventTimeColumn() != "" && q.Sources[0].Watermark == nil {
			t.Fatalf("first source has no watermark but the query has one: %+v", q)
		}
		if !printable(q) {
			return
		}
		text := render(q)
		q2, err := Parse("render.yaml", []byte(text))
		if err != nil {
			t.Fatalf("re-parse of rendered query failed: %v\n%s", err, text)
		}
		if !reflect.DeepEqual(q, q2) {
			t.Fatalf("round trip changed the query:\n got %+v\nwant %+v\n%s", q2, q, text)
		}
	})
}
