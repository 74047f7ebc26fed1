package trace_test

import (
	"bytes"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

// TestTableSinkTxnLine: the table sink's final line lists the committed
// writes (txnAppId, txnVersion) in commit order, as Delta's log holds one
// txn action per commit: a batch replayed after a crash past the sink
// write commits nothing, so version 1 appears once. Other kinds have no
// txn list.
func TestTableSinkTxnLine(t *testing.T) {
	stepsText := []byte(`{"rows": [{"id":"a","ts":1}]}
{"crash": "after-sink-write"}
{"rows": [{"id":"b","ts":2}]}
{"rows": [{"id":"c","ts":3}]}
`)
	for _, tc := range []struct{ sink, want string }{
		{"{kind: table, app_id: app}", `{"table":[{"id":"a","ts":1},{"id":"b","ts":2},{"id":"c","ts":3}],"txn":[{"appId":"app","version":0},{"appId":"app","version":1},{"appId":"app","version":2}]}`},
		{"{kind: append}", `{"table":[{"id":"a","ts":1},{"id":"b","ts":2},{"id":"b","ts":2},{"id":"c","ts":3}]}`},
	} {
		q, err := query.Parse("q.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\nno_data_batches: false\nsink: "+tc.sink+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		st, err := steps.ParseTyped("s.jsonl", stepsText, q)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := trace.Run(q, st, trace.Options{Checkpoint: fsys.NewMem(), Out: &out}); err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
		if got := string(lines[len(lines)-1]); got != tc.want {
			t.Errorf("%s: final line\n got %s\nwant %s", tc.sink, got, tc.want)
		}
	}
}
