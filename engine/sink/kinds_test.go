package sink

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/internal/suggest"
)

// TestKinds: the kinds, their order (messages list them so) and what each
// is; saved histories and query files name them.
func TestKinds(t *testing.T) {
	if got := Names(); !slices.Equal(got, []string{"foreachBatch", "table", "merge", "append", "kafka"}) {
		t.Fatalf("Names() = %v", got)
	}
	type want struct {
		hasTable, versioned bool
		options             []string
		desc                string
		flags               []string
	}
	for k, w := range map[Kind]want{
		KindForeachBatch: {false, false, nil, "ForeachBatchSink", []string{"plain"}},
		KindTable:        {true, true, []string{"app_id", "generate_app_id"}, "TableSink[txnAppId=app]", []string{"transactional", "table"}},
		KindMerge:        {true, false, []string{"lookback", "keys"}, "MergeSink", []string{"merge"}},
		KindAppend:       {true, false, nil, "AppendSink", []string{"plain"}},
		KindKafka:        {false, false, nil, SparkKafkaTable, []string{"plain"}},
	} {
		d, ok := Lookup(k)
		if !ok {
			t.Fatalf("Lookup(%s) failed", k)
		}
		var flags []string
		for _, x := range d.Durable {
			flags = append(flags, x.Flag)
		}
		if d.RealTime != (k == KindKafka) || d.CountsOutput != (k == KindKafka) || (d.SparkSink == SparkKafkaTable) != (k == KindKafka) || d.SparkSink == "" {
			t.Errorf("%s: Spark sink %q, real-time %v", k, d.SparkSink, d.RealTime)
		}
		if d.Kind != k || d.HasTable != w.hasTable || d.Versioned != w.versioned || !slices.Equal(d.Options, w.options) || !slices.Equal(flags, w.flags) {
			t.Errorf("%s: %+v", k, d)
		}
		s := d.New(Settings{Kind: k, AppID: "app", MatchKeys: []string{"id"}})
		if s.Description() != w.desc {
			t.Errorf("%s: New gives %s, want %s", k, s.Description(), w.desc)
		}
		if _, tabled := s.(Tabled); tabled != w.hasTable {
			t.Errorf("%s: New gives a Tabled sink: %v, HasTable %v", k, tabled, w.hasTable)
		}
	}
	for _, k := range []Kind{"", "Table", "delta", "foreachbatch"} {
		if _, ok := Lookup(k); ok {
			t.Errorf("Lookup(%q) succeeded", k)
		}
	}
}

// TestFlags: the `engine --sink` values, in the order its messages list
// them, and what each realises.
func TestFlags(t *testing.T) {
	if got := suggest.OrList(Flags()); got != "plain, transactional, table or merge" {
		t.Fatalf("flags %q", got)
	}
	for flag, w := range map[string]struct {
		kind  Kind
		store Store
	}{"plain": {KindForeachBatch, Kafka}, "transactional": {KindTable, Kafka}, "table": {KindTable, Pebble}, "merge": {KindMerge, Pebble}} {
		d, x, ok := LookupFlag(flag)
		if !ok || d.Kind != w.kind || x.Store != w.store || x.Flag != flag {
			t.Errorf("LookupFlag(%s) = %s %+v %v", flag, d.Kind, x, ok)
		}
	}
	if _, _, ok := LookupFlag("append"); ok {
		t.Error("append is a kind, not a flag")
	}
	if got := FlagsOn(Pebble); !slices.Equal(got, []string{"table", "merge"}) {
		t.Errorf("FlagsOn(Pebble) = %v", got)
	}
	if got := FlagsOn(Kafka); !slices.Equal(got, []string{"plain", "transactional"}) {
		t.Errorf("FlagsOn(Kafka) = %v", got)
	}
	// A harness's choice of store (live's --table-sink): the table kind
	// has both, the others keep their only one.
	for _, tc := range []struct {
		kind  Kind
		store Store
		flag  string
	}{
		{KindTable, Pebble, "table"}, {KindTable, Kafka, "transactional"},
		{KindMerge, Pebble, "merge"}, {KindMerge, Kafka, "merge"},
		{KindAppend, Pebble, "plain"}, {KindForeachBatch, Pebble, "plain"},
	} {
		d, _ := Lookup(tc.kind)
		if got := d.DurableOn(tc.store).Flag; got != tc.flag {
			t.Errorf("%s on %s: %s, want %s", tc.kind, tc.store, got, tc.flag)
		}
	}
}

func TestTaking(t *testing.T) {
	for option, want := range map[string][]Kind{"app_id": {KindTable}, "generate_app_id": {KindTable}, "lookback": {KindMerge}, "keys": {KindMerge}, "kind": nil} {
		if got := Taking(option); !slices.Equal(got, want) {
			t.Errorf("Taking(%s) = %v, want %v", option, got, want)
		}
	}
	if got := suggest.OrList([]Kind{KindTable}); got != "table" {
		t.Errorf("OrList one = %q", got)
	}
	if got := suggest.OrList([]string{}); got != "" {
		t.Errorf("OrList none = %q", got)
	}
	if got := suggest.OrList([]string{"a", "b"}); got != "a or b" {
		t.Errorf("OrList two = %q", got)
	}
}

// TestCopies: a caller cannot change the registry through a result.
func TestCopies(t *testing.T) {
	d, _ := Lookup(KindTable)
	d.Options[0] = "x"
	d.Durable[0].Flag = "x"
	Kinds()[1].Options[1] = "x"
	if d2, _ := Lookup(KindTable); d2.Options[0] != "app_id" || d2.Options[1] != "generate_app_id" || d2.Durable[0].Flag != "transactional" {
		t.Fatalf("registry changed: %+v", d2)
	}
}

// TestMergeKey: the match columns of a row, and an error naming sink.keys
// for a row without one.
func TestMergeKey(t *testing.T) {
	key := MergeKey(Settings{MatchKeys: []string{"id", "region"}, EventTimeColumn: "ts"})
	a, err := key(row.Row{Data: json.RawMessage(`{"id":"a","ts":1,"region":"eu"}`)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := key(row.Row{Data: json.RawMessage(`{"region":"eu","ts":2,"id":"a","x":1}`)})
	c, _ := key(row.Row{Data: json.RawMessage(`{"id":"a","ts":1,"region":"us"}`)})
	if string(a) != string(b) || string(a) == string(c) {
		t.Errorf("keys %q %q %q", a, b, c)
	}
	if _, err := key(row.Row{Data: json.RawMessage(`{"id":"b","ts":2}`)}); err == nil || !strings.Contains(err.Error(), `sink.keys: missing key column "region"`) {
		t.Errorf("err = %v", err)
	}
}
