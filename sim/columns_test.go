package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/record"
)

// A production query pasted as is: keys on event_id (and a tenant), a
// watermark on event_ts, payload columns beside them (issue 11, item 5).
const userColumnsQuery = `dedup: {api: dropDuplicatesWithinWatermark, keys: [event_id, tenant]}
watermark: {column: event_ts, delay: 10 seconds}
shuffle_partitions: 2
sink: {kind: merge, keys: [event_id]}
`

func userColumnsConfig() Config {
	cfg := exportConfig(userColumnsQuery, 40, map[string]faults.Knobs{
		faults.ProducerRetry:          {"probability": 0.1, "copies_max": 2, "gap_ms": "2s"},
		faults.ProducerRetryRestamped: {"probability": 0.05, "gap_ms": "20s"},
		faults.DuplicateAppend:        {"probability": 0.05},
		faults.CrashAfterSinkWrite:    {"rate": 0.05},
	})
	cfg.Columns = []Column{{Name: "amount", Type: ColumnDouble}, {Name: "note", Bytes: 40}, {Name: "customer", Type: ColumnLong}, {Name: "vip", Type: ColumnBoolean}}
	return cfg
}

// TestUserColumnsRows: rows carry the query's own columns in the layout's
// order, the further key column is derived from the event id, payload is
// the same on every copy of an event, and the key the simulator hands the
// engine is what row.Decoder makes of the row.
func TestUserColumnsRows(t *testing.T) {
	cfg := userColumnsConfig()
	wl, err := Schedule(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	wantCols := []string{"event_id", "event_ts", "tenant", "amount", "note", "customer", "vip", record.CopyColumn}
	if wl.IDColumn != "event_id" || wl.EventColumn != "event_ts" || strings.Join(wl.Columns, ",") != strings.Join(wantCols, ",") {
		t.Fatalf("layout: id %s, event %s, columns %v; want %v", wl.IDColumn, wl.EventColumn, wl.Columns, wantCols)
	}
	q, err := query.Parse("q", []byte(userColumnsQuery))
	if err != nil {
		t.Fatal(err)
	}
	dec := row.NewDecoder(q.Keys, q.EventTimeColumn())
	lay := &rowLayout{idCol: "event_id", eventCol: "event_ts", keyCols: []string{"tenant"}}
	keys := newLayoutKeyEncoder(q, lay)
	payload := map[string]string{}
	retried := 0
	for i, c := range wl.Copies {
		data := wl.Rows[i]
		// Column order, byte for byte.
		var names []string
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("row %s: not an object", data)
		}
		vals := map[string]any{}
		for d.More() {
			k, _ := d.Token()
			var v any
			if err := d.Decode(&v); err != nil {
				t.Fatalf("row %s: %v", data, err)
			}
			names = append(names, k.(string))
			vals[k.(string)] = v
		}
		if strings.Join(names, ",") != strings.Join(wantCols, ",") {
			t.Fatalf("row %s: columns %v, want %v", data, names, wantCols)
		}
		if vals["event_id"] != c.Event || vals["tenant"] != "tenant:"+c.Event || vals[record.CopyColumn] != json.Number(strconv.Itoa(i)) {
			t.Fatalf("row %s of copy %+v", data, c)
		}
		if n := vals["note"].(string); len(n) != 40 {
			t.Fatalf("row %s: note of %d bytes, want 40", data, len(n))
		}
		if v := vals["vip"]; v != true && v != false {
			t.Fatalf("row %s: vip %v", data, v)
		}
		// The payload is the event's, whatever the copy.
		start := bytes.Index(data, []byte(`,"amount":`))
		end := bytes.Index(data, []byte(`,"_copy":`))
		p := string(data[start:end])
		if prev, seen := payload[c.Event]; seen {
			retried++
			if prev != p {
				t.Fatalf("event %s: payload %s on one copy, %s on another", c.Event, prev, p)
			}
		}
		payload[c.Event] = p
		// The pre-built key is the decoder's.
		ref := rowRef{eventUs: c.EventTimeUs, idLen: uint8(len(c.Event)), tsOff: uint8(len(`","event_ts":`))}
		ref.tsLen = uint8(bytes.IndexByte(data[len(`{"event_id":"`)+len(c.Event)+len(`","event_ts":`):], ','))
		var want row.Row
		if err := dec.Decode(data, &want); err != nil {
			t.Fatal(err)
		}
		if got := keys.appendKey(nil, data, ref); !bytes.Equal(got, want.Key) {
			t.Fatalf("row %s: key %q, the decoder's %q", data, got, want.Key)
		}
	}
	if retried == 0 {
		t.Fatal("no event had two copies: the payload check proved nothing")
	}
	// Payload values differ between events (they are derived, not fixed).
	distinct := map[string]bool{}
	for _, p := range payload {
		distinct[p] = true
	}
	if len(distinct) < len(payload)*9/10 {
		t.Fatalf("%d distinct payloads for %d events", len(distinct), len(payload))
	}
}

// TestUserColumnsRunAndExport: the run keyed on event_id is checked like
// any other (retries within the delay are dropped, the merge sink keeps
// the table unique), and its exported exec trace carries the same rows and
// replays batch for batch.
func TestUserColumnsRunAndExport(t *testing.T) {
	cfg := userColumnsConfig()
	h := run(t, cfg, 3)
	if len(h.Crashes) == 0 {
		t.Fatal("no crash: the export's replay path is untested")
	}
	opt, err := ExportOptionsFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	qy, st, err := ExportTraceWith(h, opt)
	if err != nil {
		t.Fatal(err)
	}
	wl, err := Schedule(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range min(200, len(wl.Rows)) {
		if !bytes.Contains(st, wl.Rows[i]) {
			t.Fatalf("the trace lacks the row of copy %d, %s", i, wl.Rows[i])
		}
	}
	// Every row exec reads is the simulator's row, byte for byte.
	r := replayTrace(t, qy, st)
	for _, rec := range r.recs {
		for _, in := range rec.Input {
			c := copyIndex(in.Data)
			if !bytes.Equal(in.Data, wl.Rows[c]) {
				t.Fatalf("exec row %s, the simulator's %s", in.Data, wl.Rows[c])
			}
		}
	}
	compareReplay(t, h, r, opt, -1<<63, 1<<63-1, true)
	// Without the config the export still keys right: the key columns come
	// from the history's query; only the payload is left out.
	qy0, st0, err := ExportTrace(h)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(st0, []byte(`"amount"`)) || !bytes.Contains(st0, []byte(`"tenant":"tenant:`)) {
		t.Fatal("an export without options: want the key columns and no payload")
	}
	compareReplay(t, h, replayTrace(t, qy0, st0), ExportOptions{}, -1<<63, 1<<63-1, true)
}

// TestDefaultLayoutUnchanged: a query keyed on id keeps the rows every
// saved history and trace has, {"id":...,"ts":...,"_copy":N}.
func TestDefaultLayoutUnchanged(t *testing.T) {
	p, err := testConfig(tableQuery, nil).prepare()
	if err != nil {
		t.Fatal(err)
	}
	a := &arena{}
	e := newLayoutEncoder(p.layout, false)
	ref := e.encode(a, []byte("e0-42"), 1_767_225_600_123_456, 17)
	if got := string(a.chunks[ref.chunk][ref.off : ref.off+ref.dataLen]); got != `{"id":"e0-42","ts":1767225600.123456,"_copy":17}` {
		t.Fatalf("row %s", got)
	}
	if p.layout.extraBytes() != 0 {
		t.Fatalf("extra bytes %d for the default layout", p.layout.extraBytes())
	}
}

// TestColumnsRefused: column layouts the simulator refuses, each naming
// the field.
func TestColumnsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		cols        []Column
		path, want  string
	}{
		{"payload named as a key", userColumnsQuery, []Column{{Name: "tenant"}}, "columns[0].name", "dedup key"},
		{"payload named as the event time", userColumnsQuery, []Column{{Name: "event_ts"}}, "columns[0].name", "event-time column"},
		{"hidden column", userColumnsQuery, []Column{{Name: record.CopyColumn}}, "columns[0].name", "hidden"},
		{"twice", userColumnsQuery, []Column{{Name: "a"}, {Name: "a"}}, "columns[1].name", "twice"},
		{"bad name", userColumnsQuery, []Column{{Name: "a b"}}, "columns[0].name", "letter"},
		{"bad type", userColumnsQuery, []Column{{Name: "a", Type: "int"}}, "columns[0].type", "string, long, double or boolean"},
		{"bytes on a long", userColumnsQuery, []Column{{Name: "a", Type: ColumnLong, Bytes: 3}}, "columns[0].bytes", "only for type string"},
		{"huge string", userColumnsQuery, []Column{{Name: "a", Bytes: 1 << 20}}, "columns[0].bytes", "[1, 65536]"},
		{"key on the hidden column", "dedup: {api: dropDuplicates, keys: [_copy]}\n", nil, "query", "hidden"},
		{"key name the simulator cannot write", "dedup: {api: dropDuplicates, keys: [\"a\\\"b\"]}\n", nil, "query", "letter"},
		{"event time is the id", "dedup: {api: dropDuplicates, keys: [ts]}\nwatermark: {column: id, delay: 1 second}\n", nil, "", ""},
		{"merge keys on a missing column", strings.Replace(userColumnsQuery, "keys: [event_id]}", "keys: [order_id]}", 1), nil, "query", "order_id"},
	} {
		cfg := userColumnsConfig()
		cfg.Query, cfg.Columns = QueryText(tc.query), tc.cols
		err := cfg.Validate()
		if tc.path == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != tc.path || !strings.Contains(fe.Msg, tc.want) {
			t.Errorf("%s: error %v, want a FieldError at %s saying %q", tc.name, err, tc.path, tc.want)
		}
	}
}

// TestFieldErrorPaths: a value outside its domain names its field (as a
// scenario file writes it) and the range in human units.
func TestFieldErrorPaths(t *testing.T) {
	for _, tc := range []struct {
		mutate     func(*Config)
		path, want string
	}{
		{func(c *Config) { c.TriggerInterval = Duration(time.Microsecond) }, "trigger_interval", "[1ms, 24h]"},
		{func(c *Config) { c.TriggerInterval = Duration(1500 * time.Microsecond) }, "trigger_interval", "whole number of milliseconds"},
		{func(c *Config) { c.Downtime = Duration(-time.Second) }, "downtime", "[1ms, 24h]"},
		{func(c *Config) { c.FaultPhase = Duration(400 * 24 * time.Hour) }, "fault_phase", "[1ms, 366d]"},
		{func(c *Config) { c.Start = "1969-12-31T23:59:59Z" }, "start", "1970-01-01T00:00:00Z"},
		{func(c *Config) { c.Sources[0].Rate.PerSec = 2e7 }, "sources[0].rate.per_sec", "(0, 10000000]"},
		{func(c *Config) { c.Sources[0].Rate.Period = Duration(time.Microsecond) }, "sources[0].rate.period", "[1ms, 366d]"},
		{func(c *Config) { c.Sources[0].Rate.Profile = "diurnl" }, "sources[0].rate.profile", "constant, diurnal or bursts"},
		{func(c *Config) { c.Sources = append(c.Sources, c.Sources[0]) }, "sources[1].name", "described twice"},
		{func(c *Config) { c.Sources[0].Producers = 2_000_000 }, "sources[0].producers", "[1, 1000000]"},
		{func(c *Config) { c.Sources[0].SendDelay = Dist{Kind: DistUniform, Mean: Duration(time.Second)} }, "sources[0].send_delay.max", "below mean"},
		{func(c *Config) { c.MaxCopies = -1 }, "max_copies", "[1, 2147483647]"},
	} {
		cfg := testConfig(tableQuery, nil)
		tc.mutate(&cfg)
		var fe *FieldError
		if err := cfg.Validate(); !errors.As(err, &fe) || fe.Path != tc.path || !strings.Contains(fe.Msg, tc.want) {
			t.Errorf("%s: error %v, want %q", tc.path, err, tc.want)
		}
	}
}
