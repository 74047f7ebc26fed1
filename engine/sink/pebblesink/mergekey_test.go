package pebblesink_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
)

// Issue 10 item 6: a row without a sink.keys column fails the merge (it
// used to be matched on the dedup key instead), and nothing of the batch
// is inserted.
func TestMergeRowWithoutSinkKey(t *testing.T) {
	q := newQuery(query.Sink{Kind: sink.KindMerge, Keys: []string{"id", "region"}})
	s := open(t, t.TempDir(), q)
	defer closeSink(t, s)
	good := row.Row{Data: json.RawMessage(`{"id":"a","ts":1,"region":"eu"}`)}
	bad := row.Row{Data: json.RawMessage(`{"id":"b","ts":2}`)}
	add(t, s, sink.Batch{ID: 0, Rows: []row.Row{good}})
	err := s.AddBatch(sink.Batch{ID: 1, Rows: []row.Row{good, bad}})
	if err == nil || !strings.Contains(err.Error(), `sink.keys: missing key column "region"`) {
		t.Fatalf("err = %v", err)
	}
	if got := len(s.Table()); got != 1 {
		t.Fatalf("table has %d rows after the failed merge, want 1", got)
	}
}
