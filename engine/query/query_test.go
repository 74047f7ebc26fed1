package query

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/sink"
)

func defaults(q Query) *Query {
	if q.ShufflePartitions == 0 {
		q.ShufflePartitions = DefaultShufflePartitions
	}
	if q.StateStore == "" {
		q.StateStore = StateStoreMemory
	}
	if q.WatermarkPolicy == "" {
		q.WatermarkPolicy = PolicyMin
	}
	if q.Sink.Kind == "" {
		q.Sink.Kind = sink.KindForeachBatch
	}
	if q.Sources == nil {
		q.Sources = []Source{{Name: DefaultSourceName}}
	}
	return &q
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want *Query
	}{
		{
			name: "minimal",
			yaml: "dedup: {api: dropDuplicates}\n",
			want: defaults(Query{API: DropDuplicates, NoDataBatches: true}),
		},
		{
			name: "exec-format example",
			yaml: `
dedup:
  api: dropDuplicatesWithinWatermark   # comment
  keys: [id]
watermark:
  column: event_time
  delay: 10 seconds
shuffle_partitions: 4
state_store: memory
watermark_policy: min
no_data_batches: true
sink:
  kind: foreachBatch
`,
			want: defaults(Query{
				API: DropDuplicatesWithinWatermark, Keys: []string{"id"},
				Sources:       []Source{{Name: "default", Watermark: &Watermark{Column: "event_time", DelayMs: 10000}}},
				NoDataBatches: true,
			}),
		},
		{
			name: "several sources",
			yaml: `
name: payments
sources:
  - name: web
    watermark: {column: event_time, delay: 10 seconds}
  - name: mobile
    watermark: {column: event_time, delay: 20s}
  - name: batch-import
dedup: {api: dropDuplicates, keys: [id, event_time]}
watermark_policy: max
`,
			want: defaults(Query{
				Name: "payments", API: DropDuplicates, Keys: []string{"id", "event_time"},
				Sources: []Source{
					{Name: "web", Watermark: &Watermark{Column: "event_time", DelayMs: 10000}},
					{Name: "mobile", Watermark: &Watermark{Column: "event_time", DelayMs: 20000}},
					{Name: "batch-import"},
				},
				WatermarkPolicy: PolicyMax, NoDataBatches: true,
			}),
		},
		{
			name: "sources without watermarks",
			yaml: "sources: [{name: a}, {name: b}]\ndedup: {api: dropDuplicates}\n",
			want: defaults(Query{API: DropDuplicates, Sources: []Source{{Name: "a"}, {Name: "b"}}, NoDataBatches: true}),
		},
		{
			name: "table sink",
			yaml: "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table, app_id: payments-dedup-v1}\nshuffle_partitions: 1\nstate_store: pebble\nno_data_batches: false\n",
			want: defaults(Query{
				API: DropDuplicates, Keys: []string{"id"}, ShufflePartitions: 1, StateStore: StateStorePebble,
				Sink: Sink{Kind: sink.KindTable, AppID: "payments-dedup-v1"},
			}),
		},
		{
			name: "merge sink with lookback and keys",
			yaml: "dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1 hour}\nsink: {kind: merge, lookback: 7 days, keys: [id, region]}\n",
			want: defaults(Query{
				API: DropDuplicates, Keys: []string{"id"},
				Sources:       []Source{{Name: "default", Watermark: &Watermark{Column: "ts", DelayMs: 3600000}}},
				NoDataBatches: true,
				Sink:          Sink{Kind: sink.KindMerge, LookbackMs: 7 * 24 * 3600000, HasLookback: true, Keys: []string{"id", "region"}},
			}),
		},
		{
			name: "append sink, batch api, empty keys",
			yaml: "dedup: {api: batchDropDuplicates, keys: []}\nsink: {kind: append}\n",
			want: defaults(Query{API: BatchDropDuplicates, Keys: []string{}, NoDataBatches: true, Sink: Sink{Kind: sink.KindAppend}}),
		},
		{
			name: "string fields take the text as written",
			yaml: "name: 2024-01-01\ndedup: {api: dropDuplicates, keys: [1, 'true', id]}\n",
			want: defaults(Query{Name: "2024-01-01", API: DropDuplicates, Keys: []string{"1", "true", "id"}, NoDataBatches: true}),
		},
		{
			name: "anchors and aliases inside known fields",
			yaml: "watermark: &w {column: ts, delay: 0s}\ndedup: {api: dropDuplicates, keys: &k [id]}\nsink: {kind: merge, keys: *k}\n",
			want: defaults(Query{
				API: DropDuplicates, Keys: []string{"id"},
				Sources:       []Source{{Name: "default", Watermark: &Watermark{Column: "ts"}}},
				NoDataBatches: true, Sink: Sink{Kind: sink.KindMerge, Keys: []string{"id"}},
			}),
		},
		{
			name: "byte-order mark",
			yaml: "\ufeffdedup: {api: dropDuplicates}\n",
			want: defaults(Query{API: DropDuplicates, NoDataBatches: true}),
		},
		{
			name: "explicit document markers",
			yaml: "---\ndedup: {api: dropDuplicates}\n...\n",
			want: defaults(Query{API: DropDuplicates, NoDataBatches: true}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("query.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // the whole message
	}{
		{"empty", "", "query.yaml: empty document: want a query (at least dedup.api)"},
		{"only comments", "# nothing\n", "query.yaml: empty document: want a query (at least dedup.api)"},
		{"null document", "~\n", "query.yaml:1: empty document: want a query (at least dedup.api)"},
		{"two documents", "dedup: {api: dropDuplicates}\n---\ndedup: {api: dropDuplicates}\n", "query.yaml:2: more than one YAML document: want exactly one query"},
		{"not a mapping", "- a\n- b\n", "query.yaml:1: want a mapping with fields name, dedup, watermark, sources, shuffle_partitions, state_store, watermark_policy, no_data_batches, sink, drop_future_events, schema, case_sensitive, checkpoint_format_version, spark_version, spark_conf, trigger, got a list"},
		{"syntax", "dedup: {api: dropDuplicates\n", "query.yaml:1: invalid YAML: did not find expected ',' or '}'"},
		{"syntax tab", "dedup:\n\tapi: x\n", "query.yaml:2: invalid YAML: found character that cannot start any token"},
		{"missing dedup", "name: x\n", `query.yaml:1: missing required field "dedup" (e.g. dedup: {api: dropDuplicates, keys: [id]})`},
		{"missing api", "dedup:\n  keys: [id]\n", `query.yaml:1: dedup: missing required field "api" (want dropDuplicates, dropDuplicatesWithinWatermark or batchDropDuplicates)`},
		{"misspelt api", "name: q\n\n\ndedup: {api: dropDuplicate}\n", `query.yaml:4: dedup.api: unknown api "dropDuplicate" (want dropDuplicates, dropDuplicatesWithinWatermark or batchDropDuplicates)`},
		{"api case", "dedup: {api: DropDuplicates}\n", `query.yaml:1: dedup.api: unknown api "DropDuplicates" (want dropDuplicates, dropDuplicatesWithinWatermark or batchDropDuplicates)`},
		{"api null", "dedup: {api: }\n", `query.yaml:1: dedup.api: want a string, got null`},
		{"api list", "dedup: {api: [dropDuplicates]}\n", `query.yaml:1: dedup.api: want a string, got a list`},
		{"unknown top field with suggestion", "dedup: {api: dropDuplicates}\nshuffle_partition: 4\n", `query.yaml:2: unknown field "shuffle_partition" (did you mean "shuffle_partitions"?)`},
		{"unknown top field case", "Dedup: {api: dropDuplicates}\n", `query.yaml:1: unknown field "Dedup" (did you mean "dedup"?)`},
		{"unknown top field dash", "dedup: {api: dropDuplicates}\nno-data-batches: false\n", `query.yaml:2: unknown field "no-data-batches" (did you mean "no_data_batches"?)`},
		{"misplaced keys", "dedup: {api: dropDuplicates}\nkeys: [id]\n", `query.yaml:2: unknown field "keys" (did you mean dedup.keys? "keys" belongs under dedup)`},
		{"unknown top field list", "dedup: {api: dropDuplicates}\ninterval: 10s\n", `query.yaml:2: unknown field "interval" (known fields: name, dedup, watermark, sources, shuffle_partitions, state_store, watermark_policy, no_data_batches, sink, drop_future_events, schema, case_sensitive, checkpoint_format_version, spark_version, spark_conf, trigger)`},
		{"trigger not a mapping", "dedup: {api: dropDuplicates}\ntrigger: 10s\n", `query.yaml:2: trigger: want a mapping with fields real_time, got string "10s"`},
		{"unknown dedup field", "dedup:\n  api: dropDuplicates\n  key: [id]\n", `query.yaml:3: dedup: unknown field "key" (did you mean "keys"?)`},
		{"unknown watermark field", "watermark:\n  column: ts\n  delay: 1s\n  dealy: 2s\ndedup: {api: dropDuplicates}\n", `query.yaml:4: watermark: unknown field "dealy" (did you mean "delay"?)`},
		{"unknown sink field", "dedup: {api: dropDuplicates}\nsink: {kind: table, appid: x}\n", `query.yaml:2: sink: unknown field "appid" (did you mean "app_id"?)`},
		{"unknown source field", "sources:\n  - name: a\n    watermrk: {column: ts, delay: 1s}\ndedup: {api: dropDuplicates}\n", `query.yaml:3: sources[0]: unknown field "watermrk" (did you mean "watermark"?)`},
		{"duplicate top field", "dedup: {api: dropDuplicates}\nname: a\nname: b\n", `query.yaml:3: name: field given twice (first at line 2)`},
		{"duplicate nested field", "dedup:\n  api: dropDuplicates\n  api: dropDuplicates\n", `query.yaml:3: dedup.api: field given twice (first at line 2)`},
		{"merge key", "base: &b {api: dropDuplicates}\ndedup: {<<: *b}\n", `query.yaml:1: unknown field "base" (known fields: name, dedup, watermark, sources, shuffle_partitions, state_store, watermark_policy, no_data_batches, sink, drop_future_events, schema, case_sensitive, checkpoint_format_version, spark_version, spark_conf, trigger)`},
		{"merge key inside", "dedup: {<<: {api: dropDuplicates}}\n", `query.yaml:1: dedup: YAML merge keys (<<) are not supported; write the fields out`},
		{"non-scalar field name", "dedup: {api: dropDuplicates}\n? [a]\n: b\n", `query.yaml:2: field names must be plain strings, got a list`},
		{"shuffle string", "dedup: {api: dropDuplicates}\nshuffle_partitions: \"four\"\n", `query.yaml:2: shuffle_partitions: want an integer, got string "four"`},
		{"shuffle quoted number", "dedup: {api: dropDuplicates}\nshuffle_partitions: \"4\"\n", `query.yaml:2: shuffle_partitions: want an integer, got string "4"`},
		{"shuffle float", "dedup: {api: dropDuplicates}\nshuffle_partitions: 4.5\n", `query.yaml:2: shuffle_partitions: want an integer, got number 4.5`},
		{"shuffle zero", "dedup: {api: dropDuplicates}\nshuffle_partitions: 0\n", `query.yaml:2: shuffle_partitions: must be from 1 to 65536, got 0`},
		{"shuffle negative", "dedup: {api: dropDuplicates}\nshuffle_partitions: -3\n", `query.yaml:2: shuffle_partitions: must be from 1 to 65536, got -3`},
		{"shuffle huge", "dedup: {api: dropDuplicates}\nshuffle_partitions: 100000\n", `query.yaml:2: shuffle_partitions: must be from 1 to 65536, got 100000`},
		{"shuffle overflow", "dedup: {api: dropDuplicates}\nshuffle_partitions: 99999999999999999999\n", `query.yaml:2: shuffle_partitions: want an integer, got number 99999999999999999999`},
		{"state store", "dedup: {api: dropDuplicates}\nstate_store: rocksdb\n", `query.yaml:2: state_store: unknown state store "rocksdb" (want memory or pebble)`},
		{"policy", "dedup: {api: dropDuplicates}\nwatermark_policy: minimum\n", `query.yaml:2: watermark_policy: unknown watermark policy "minimum" (want min or max)`},
		{"no data batches string", "dedup: {api: dropDuplicates}\nno_data_batches: yes\n", `query.yaml:2: no_data_batches: want true or false, got string "yes"`},
		{"no data batches null", "dedup: {api: dropDuplicates}\nno_data_batches:\n", `query.yaml:2: no_data_batches: want true or false, got null`},
		{"keys scalar", "dedup: {api: dropDuplicates, keys: id}\n", `query.yaml:1: dedup.keys: want a list of column names (e.g. [id]), got string "id"`},
		{"keys null", "dedup:\n  api: dropDuplicates\n  keys:\n", `query.yaml:3: dedup.keys: want a list of column names (e.g. [id]), got null`},
		{"keys duplicate", "dedup: {api: dropDuplicates, keys: [id, ts, id]}\n", `query.yaml:1: dedup.keys[2]: column "id" listed twice`},
		{"keys empty name", "dedup: {api: dropDuplicates, keys: [id, \"\"]}\n", `query.yaml:1: dedup.keys[1]: must not be empty`},
		{"keys nested", "dedup: {api: dropDuplicates, keys: [[id]]}\n", `query.yaml:1: dedup.keys[0]: want a string, got a list`},
		{"within without watermark", "dedup:\n  api: dropDuplicatesWithinWatermark\n  keys: [id]\n", `query.yaml:2: dedup.api: dropDuplicatesWithinWatermark is not supported on streaming DataFrames/DataSets without watermark (add a top-level watermark: {column, delay} or one per source)`},
		{"within with unwatermarked sources", "sources: [{name: a}]\ndedup: {api: dropDuplicatesWithinWatermark}\n", `query.yaml:2: dedup.api: dropDuplicatesWithinWatermark is not supported on streaming DataFrames/DataSets without watermark (add a top-level watermark: {column, delay} or one per source)`},
		{"watermark not mapping", "dedup: {api: dropDuplicates}\nwatermark: 10 seconds\n", `query.yaml:2: watermark: want a mapping with fields column, delay, got string "10 seconds"`},
		{"watermark missing delay", "dedup: {api: dropDuplicates}\nwatermark: {column: ts}\n", `query.yaml:2: watermark: missing required field "delay" (e.g. delay: 10 seconds)`},
		{"watermark missing column", "dedup: {api: dropDuplicates}\nwatermark:\n  delay: 1s\n", `query.yaml:2: watermark: missing required field "column" (the event-time column of withWatermark)`},
		{"watermark empty column", "dedup: {api: dropDuplicates}\nwatermark: {column: '', delay: 1s}\n", `query.yaml:2: watermark.column: must not be empty`},
		{"negative delay", "dedup: {api: dropDuplicates}\nwatermark:\n  column: ts\n  delay: -10 seconds\n", `query.yaml:4: watermark.delay: delay threshold (-10 seconds) should not be negative`},
		{"bad delay", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 10 secs}\n", `query.yaml:2: watermark.delay: invalid interval "10 secs": invalid unit "secs": the units are year, month, week, day, hour, minute, second, millisecond and microsecond, singular or plural ("10 minutes"), or write a Go duration ("10m")`},
		{"delay number", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 10}\n", `query.yaml:2: watermark.delay: invalid interval "10": want a Spark interval such as "10 seconds" or a Go duration such as "10s"`},
		{"watermark and sources", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 1s}\nsources: [{name: a}]\n", `query.yaml:3: sources: cannot be combined with the top-level watermark (line 2): give each source its own watermark`},
		{"sources empty", "dedup: {api: dropDuplicates}\nsources: []\n", `query.yaml:2: sources: want at least one source`},
		{"sources mapping", "dedup: {api: dropDuplicates}\nsources: {web: {}}\n", `query.yaml:2: sources: want a list of sources ({name, watermark}), got a mapping`},
		{"source without name", "dedup: {api: dropDuplicates}\nsources:\n  - watermark: {column: ts, delay: 1s}\n", `query.yaml:3: sources[0]: missing required field "name"`},
		{"source empty name", "dedup: {api: dropDuplicates}\nsources: [{name: ''}]\n", `query.yaml:2: sources[0].name: must not be empty`},
		{"source duplicate name", "dedup: {api: dropDuplicates}\nsources:\n  - name: web\n  - name: web\n", `query.yaml:4: sources[1].name: source name "web" used twice (also sources[0])`},
		{"two event time columns", "dedup: {api: dropDuplicates}\nsources:\n  - name: web\n    watermark: {column: ts, delay: 1s}\n  - name: mobile\n    watermark: {column: event_time, delay: 1s}\n",
			`query.yaml:6: sources[1].watermark.column: More than one event time columns are available. Please ensure there is at most one event time column per stream. (source "web" watermarks "ts", source "mobile" watermarks "event_time")`},
		{"first source unwatermarked", "dedup: {api: dropDuplicates}\nsources:\n  - name: web\n  - name: mobile\n    watermark: {column: ts, delay: 1s}\n",
			`query.yaml:3: sources[0]: source "web" has no watermark but source "mobile" has one; Spark's union takes the event-time column from its first input, so the dedup would see no watermark: give "web" a watermark or list a watermarked source first`},
		{"sink kind", "dedup: {api: dropDuplicates}\nsink: {kind: delta}\n", `query.yaml:2: sink.kind: unknown sink kind "delta" (want foreachBatch, table, merge, append or kafka)`},
		{"app id without table", "dedup: {api: dropDuplicates}\nsink:\n  app_id: x\n", `query.yaml:3: sink.app_id: only for sink kind table (kind is foreachBatch)`},
		{"generate app id on merge", "dedup: {api: dropDuplicates}\nsink: {kind: merge, generate_app_id: true}\n", `query.yaml:2: sink.generate_app_id: only for sink kind table (kind is merge)`},
		{"generate app id with app id", "dedup: {api: dropDuplicates}\nsink: {kind: table, app_id: x, generate_app_id: true}\n", `query.yaml:2: sink.generate_app_id: cannot be combined with app_id (line 2)`},
		{"future filter without watermark", "dedup: {api: dropDuplicates}\ndrop_future_events: 1 hour\n", `query.yaml:2: drop_future_events: needs a watermark: the filter compares the event-time column with processing time`},
		{"future filter negative", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 1s}\ndrop_future_events: -1 hour\n", `query.yaml:3: drop_future_events: delay threshold (-1 hour) should not be negative`},
		{"app id empty", "dedup: {api: dropDuplicates}\nsink: {kind: table, app_id: ''}\n", `query.yaml:2: sink.app_id: must not be empty`},
		{"lookback without merge", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 1s}\nsink:\n  kind: table\n  lookback: 7 days\n", `query.yaml:5: sink.lookback: only for sink kind merge (kind is table)`},
		{"lookback without watermark", "dedup: {api: dropDuplicates}\nsink:\n  kind: merge\n  lookback: 7 days\n", `query.yaml:4: sink.lookback: needs a watermark: the lookback compares the table's event-time column, and the query has none`},
		{"lookback negative", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 1s}\nsink: {kind: merge, lookback: -7 days}\n", `query.yaml:3: sink.lookback: lookback (-7 days) should not be negative`},
		{"lookback garbage", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 1s}\nsink: {kind: merge, lookback: a week}\n", `query.yaml:3: sink.lookback: invalid interval "a week": unrecognized number "a"`},
		{"sink keys without merge", "dedup: {api: dropDuplicates}\nsink: {kind: append, keys: [id]}\n", `query.yaml:2: sink.keys: only for sink kind merge (kind is append)`},
		{"sink keys duplicate", "dedup: {api: dropDuplicates}\nsink: {kind: merge, keys: [id, id]}\n", `query.yaml:2: sink.keys[1]: column "id" listed twice`},
		{"name mapping", "name: {a: b}\ndedup: {api: dropDuplicates}\n", `query.yaml:1: name: want a string, got a mapping`},
		{"unknown alias", "dedup: {api: *nope}\n", `query.yaml:1: invalid YAML: unknown anchor 'nope' referenced`},
		{"control character", "dedup: {api: dropDuplicates}\nname: a\x01b\n", `query.yaml:2: invalid YAML: control characters are not allowed`},
		{"invalid UTF-8", "dedup: {api: dropDuplicates}\n\nname: \xff\n", `query.yaml:3: invalid YAML: invalid leading UTF-8 octet`},
		{"unterminated quote", "dedup: {api: dropDuplicates}\nname: \"abc", `query.yaml:2: invalid YAML: found unexpected end of stream`},
		{"yaml version", "%YAML 1.9\n---\ndedup: {api: dropDuplicates}\n", `query.yaml:1: invalid YAML: found incompatible YAML document`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse("query.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded (%+v), want error %q", q, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse error:\n got %s\nwant %s", err, tc.want)
			}
			var qe *Error
			if !errors.As(err, &qe) {
				t.Errorf("error %T is not *query.Error", err)
			}
		})
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "q.yaml")
	if err := os.WriteFile(path, []byte("dedup: {api: dropDuplicatez}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":1: dedup.api: unknown api") {
		t.Errorf("ParseFile error %v, want it to name %s:1", err, path)
	}
	if _, err := ParseFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("ParseFile of a missing file succeeded")
	}
}

func TestAccessors(t *testing.T) {
	q, err := Parse("q.yaml", []byte(`
sources:
  - name: web
    watermark: {column: ts, delay: 10 seconds}
  - name: csv
  - name: mobile
    watermark: {column: ts, delay: 20 seconds}
dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := q.EventTimeColumn(); got != "ts" {
		t.Errorf("EventTimeColumn = %q", got)
	}
	if got := q.DelayMs(); got != 10000 {
		t.Errorf("DelayMs = %d, want the first source's 10000", got)
	}
	if got := q.OperatorName(); got != "dedupeWithinWatermark" {
		t.Errorf("OperatorName = %q", got)
	}
	if !q.Stateful() {
		t.Error("Stateful = false")
	}
	if i, ok := q.SourceIndex("mobile"); !ok || i != 2 {
		t.Errorf("SourceIndex(mobile) = %d, %v", i, ok)
	}
	if _, ok := q.SourceIndex("default"); ok {
		t.Error("SourceIndex(default) found a source in a multi-source query")
	}
	if got := q.SourceNames(); !reflect.DeepEqual(got, []string{"web", "csv", "mobile"}) {
		t.Errorf("SourceNames = %v", got)
	}

	for _, tc := range []struct {
		yaml     string
		op       string
		stateful bool
		col      string
		delay    int64
	}{
		{"dedup: {api: dropDuplicates}", "dedupe", true, "", 0},
		{"dedup: {api: batchDropDuplicates}\nwatermark: {column: t, delay: 2s}", "", false, "t", 2000},
	} {
		q, err := Parse("q.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if q.OperatorName() != tc.op || q.Stateful() != tc.stateful || q.EventTimeColumn() != tc.col || q.DelayMs() != tc.delay {
			t.Errorf("%q: got op %q stateful %v col %q delay %d", tc.yaml, q.OperatorName(), q.Stateful(), q.EventTimeColumn(), q.DelayMs())
		}
		if i, ok := q.SourceIndex(DefaultSourceName); !ok || i != 0 {
			t.Errorf("%q: SourceIndex(default) = %d, %v", tc.yaml, i, ok)
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tc := range []struct{ word, want string }{
		{"nme", "name"},
		{"shuffle_partiton", "shuffle_partitions"},
		{"SINK", "sink"},
		{"api", ""},
		{"zzzzzzzz", ""},
	} {
		if got := suggest(tc.word, topFields); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}
