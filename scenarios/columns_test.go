package scenarios

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/sim"
)

// userQueryScenario is a scenario written from a production query, not
// from the catalogue: two key columns (event_id, tenant), the watermark on
// event_ts, payload columns, and re-stamped retries beyond the delay under
// dropDuplicates on (event_id, tenant, event_ts), which the API does not
// catch: the copies are different keys.
const userQueryScenario = `name: user-query
query:
  dedup: {api: dropDuplicates, keys: [event_id, tenant, event_ts]}
  watermark: {column: event_ts, delay: 30 seconds}
  shuffle_partitions: 2
  sink: {kind: table}
trigger_interval: 1s
fault_phase: 40s
heal_phase: 20s
sources:
  - name: default
    rate: {per_sec: 80}
columns:
  - {name: amount, type: double}
  - {name: customer_id, type: long}
  - {name: note, bytes: 64}
faults:
  producer-retry-restamped: {probability: 0.05, gap: fixed, gap_ms: 2s}
expect:
  exactly_once: true
  findings:
    duplicate-emitted-outside-guarantee: ">= 10"
    duplicate-emitted: absent
    table-duplicate: ">= 10"
    lost: absent
`

// TestUserQueryColumns: a scenario keyed on the user's own columns loads,
// runs and meets its expectations on two seeds, and its rows carry those
// columns.
func TestUserQueryColumns(t *testing.T) {
	s, err := Parse("user-query.yaml", []byte(userQueryScenario))
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []uint64{1, 2} {
		r, err := Run(s, seed, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Passed {
			t.Errorf("seed %d: %s\n%s", seed, r.Report.Verdict.Summary, unmet(r))
		}
		if got := strings.Join(r.History.Keys, ","); got != "event_id,tenant,event_ts" {
			t.Errorf("seed %d: history keys %s", seed, got)
		}
	}
	wl, err := sim.Schedule(s.Config, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := "event_id,event_ts,tenant,amount,customer_id,note,_copy"
	if got := strings.Join(wl.Columns, ","); got != want {
		t.Fatalf("columns %s, want %s", got, want)
	}
	var m map[string]any
	if err := json.Unmarshal(wl.Rows[0], &m); err != nil {
		t.Fatal(err)
	}
	if m["event_id"] != wl.Copies[0].Event || m["tenant"] != "tenant:"+wl.Copies[0].Event || len(m["note"].(string)) != 64 {
		t.Fatalf("row %s of copy %+v", wl.Rows[0], wl.Copies[0])
	}
}
