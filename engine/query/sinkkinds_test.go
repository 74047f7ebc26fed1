package query

import (
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/sink"
)

// TestSinkKindsFromDescriptors: the parser takes the kinds and the fields
// each kind takes from package sink's descriptors: every field a kind takes
// is one the parser reads, each is refused for every other kind, and every
// kind parses.
func TestSinkKindsFromDescriptors(t *testing.T) {
	if !slices.Equal(sinkKinds, sink.Names()) {
		t.Fatalf("sinkKinds %v", sinkKinds)
	}
	values := map[string]string{"app_id": "app", "generate_app_id": "true", "lookback": "1 day", "keys": "[id]"}
	for _, d := range sink.Kinds() {
		text := "dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1s}\nsink: {kind: " + string(d.Kind) + "}\n"
		if _, err := Parse("q.yaml", []byte(text)); err != nil {
			t.Errorf("%s: %v", d.Kind, err)
		}
		for _, o := range d.Options {
			if !slices.Contains(sinkFields, o) || values[o] == "" {
				t.Errorf("%s takes sink.%s, which the parser does not read", d.Kind, o)
			}
		}
		for option, v := range values {
			text := "dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1s}\nsink: {kind: " + string(d.Kind) + ", " + option + ": " + v + "}\n"
			q, err := Parse("q.yaml", []byte(text))
			switch {
			case d.Takes(option) && err != nil:
				t.Errorf("%s %s: %v", d.Kind, option, err)
			case !d.Takes(option) && (err == nil || !strings.Contains(err.Error(), "sink."+option+": only for sink kind ")):
				t.Errorf("%s %s: err = %v", d.Kind, option, err)
			case err == nil && q.SinkSettings().Kind != d.Kind:
				t.Errorf("%s: settings %+v", d.Kind, q.SinkSettings())
			}
		}
	}
}

// TestSinkSettings: the merge sink matches on sink.keys, else the dedup
// keys, decoding rows with the query's event-time column.
func TestSinkSettings(t *testing.T) {
	q, err := Parse("q.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1s}\nsink: {kind: merge, lookback: 2 seconds}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := q.SinkSettings()
	if s.Kind != sink.KindMerge || !slices.Equal(s.MatchKeys, []string{"id"}) || s.EventTimeColumn != "ts" || !s.HasLookback || s.LookbackMs != 2000 {
		t.Errorf("settings %+v", s)
	}
	q, err = Parse("q.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: merge, keys: [id, region]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := q.SinkSettings(); !slices.Equal(s.MatchKeys, []string{"id", "region"}) || s.EventTimeColumn != "" || s.HasLookback {
		t.Errorf("settings %+v", s)
	}
	q, err = Parse("q.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table, app_id: app}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := q.SinkSettings(); s.Kind != sink.KindTable || s.AppID != "app" || s.GenerateAppID {
		t.Errorf("settings %+v", s)
	}
}
