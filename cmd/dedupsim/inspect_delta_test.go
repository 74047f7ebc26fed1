package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const deltaFixtures = "../../inspect/delta/testdata"

// TestInspectDeltaExit: inspect on real Delta tables exits 1 only when a
// --keys key is held twice, 0 when clean or without --keys, 2 for a table
// it cannot read (deletion vectors, named), an unknown key column, or
// --keys on a folder that is no Delta table.
func TestInspectDeltaExit(t *testing.T) {
	bin := binary(t)
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout (code 0, 1) or stderr (2)
	}{
		{[]string{"table-clean/table", "--keys", "id"}, 0, "every key is held once"},
		{[]string{"table-new-app-id/table", "--keys", "id"}, 1, `REPLAYED txnVersion 1-1 under a new app id`},
		{[]string{"table-new-app-id/table"}, 0, "rows: 8 in 5 live file(s)"},
		{[]string{"append-replay/table", "--keys", "id,ts", "--json"}, 1, `"duplicateKeys": 2`},
		{[]string{"deletion-vectors/table", "--keys", "id"}, 2, "deletion vectors"},
		{[]string{"table-clean/table", "--keys", "nope"}, 2, `column "nope" is not in the table`},
		{[]string{"table-clean", "--keys", "id"}, 2, "is not a Delta table"},
	} {
		args := append([]string{"inspect", filepath.Join(deltaFixtures, tc.args[0])}, tc.args[1:]...)
		out, errOut, code := run(bin, args...)
		got := out
		if tc.code == 2 {
			got = errOut
		}
		if code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout: %s\nstderr: %s", tc.args, code, tc.code, tc.want, out, errOut)
		}
	}
}

// TestExecCheckDeltaTable: exec --check with a Delta table as the
// expectation: a run whose final table holds the table's keys as many
// times passes; one that holds a key another number of times exits 1 with
// the key named. The fixture is the txnAppId generated at start-up: batch 1
// replayed under a new app id.
func TestExecCheckDeltaTable(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	steps := filepath.Join(dir, "steps.jsonl")
	os.WriteFile(steps, []byte(`{"rows": [{"id":"a","ts":10},{"id":"b","ts":11}]}
{"crash": "after-sink-write"}
{"rows": [{"id":"c","ts":12},{"id":"d","ts":12}]}
{"rows": [{"id":"e","ts":14}]}
{"rows": [{"id":"f","ts":15}]}
`), 0o644)
	table := filepath.Join(deltaFixtures, "table-new-app-id/table")
	for _, tc := range []struct {
		sink string
		code int
		want string
	}{
		{"{kind: table, generate_app_id: true}", 0, ""},
		{"{kind: table}", 1, `table key ["c"] (id): the run's table holds it 1 time(s), the Delta table 2`},
		{"{kind: foreachBatch}", 2, "keeps no table"},
	} {
		q := filepath.Join(dir, "q.yaml")
		os.WriteFile(q, []byte("dedup: {api: dropDuplicates, keys: [id]}\nno_data_batches: false\nsink: "+tc.sink+"\n"), 0o644)
		_, errOut, code := run(bin, "exec", "--query", q, "--input", steps, "--out", os.DevNull, "--check", table)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, want %d with %q\n%s", tc.sink, code, tc.code, tc.want, errOut)
		}
	}
}
