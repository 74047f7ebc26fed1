package main

import "testing"

// TestCaptureBadInput is the bad-input corpus of capture, analyze --from-kafka
// and exec --check / --record: every flag out of its domain exits 2 with
// one line naming it, before any broker is dialled (port 1 has none).
func TestCaptureBadInput(t *testing.T) {
	k := []string{"--bootstrap", "127.0.0.1:1", "--topic", "payments"}
	c := func(args ...string) []string {
		return append(append([]string{"capture", "--out", "$DIR/out.jsonl"}, k...), args...)
	}
	exp := map[string]string{
		"q.yaml":  "dedup: {api: dropDuplicates, keys: [id]}\n",
		"s.jsonl": `{"rows": [{"id": 1}]}` + "\n",
	}
	with := func(name, body string) map[string]string {
		m := map[string]string{name: body}
		for k, v := range exp {
			m[k] = v
		}
		return m
	}
	ex := func(args ...string) []string {
		return append([]string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl"}, args...)
	}
	cases := []badCase{
		{name: "capture/no out", args: append([]string{"capture"}, k...), code: 2, want: []string{"capture: --out is required"}},
		{name: "capture/no topic", args: []string{"capture", "--out", "$DIR/o", "--bootstrap", "h:1"}, code: 2, want: []string{"capture: --bootstrap and --topic are required"}},
		{name: "capture/bootstrap no port", args: []string{"capture", "--out", "$DIR/o", "--bootstrap", "host", "--topic", "t"}, code: 2, want: []string{`--bootstrap "host": want HOST:PORT`}},
		{name: "capture/bootstrap empty entry", args: []string{"capture", "--out", "$DIR/o", "--bootstrap", "h:1,,h:2", "--topic", "t"}, code: 2, want: []string{"want HOST:PORT[,HOST:PORT...]"}},
		{name: "capture/start latest", args: c("--start", "latest"), code: 2, want: []string{"--start latest: only the end may be latest"}},
		{name: "capture/end earliest", args: c("--end", "earliest"), code: 2, want: []string{"--end earliest: only the start may be earliest"}},
		{name: "capture/start negative", args: c("--start", "-5"), code: 2, want: []string{"--start -5: an offset is >= 0"}},
		{name: "capture/start word", args: c("--start", "yesterday"), code: 2, want: []string{`--start "yesterday": "yesterday" is not P:N`}},
		{name: "capture/start bad time", args: c("--start", "2024-13-01T00:00:00Z"), code: 2, want: []string{`--start "2024-13-01T00:00:00Z"`, "month out of range"}},
		{name: "capture/end partition twice", args: c("--end", "0:5,0:6"), code: 2, want: []string{"partition 0 given twice"}},
		{name: "capture/end negative partition", args: c("--end", "-1:5"), code: 2, want: []string{"partitions and offsets are >= 0"}},
		{name: "capture/partitions word", args: c("--topic-partitions", "0,x"), code: 2, want: []string{`--topic-partitions "0,x": "x" is not a partition number`}},
		{name: "capture/partitions twice", args: c("--topic-partitions", "1,1"), code: 2, want: []string{"partition 1 given twice"}},
		{name: "capture/value format", args: c("--value-format", "avro"), code: 2, want: []string{`--value-format "avro": want json or raw`}},
		{name: "capture/trigger without steps", args: c("--trigger", "30s"), code: 2, want: []string{"--trigger and --max-offsets cut micro-batches: they need --as-steps"}},
		{name: "capture/steps without batching", args: c("--as-steps"), code: 2, want: []string{"--as-steps needs --trigger"}},
		{name: "capture/trigger and max-offsets", args: c("--as-steps", "--trigger", "30s", "--max-offsets", "5"), code: 2, want: []string{"--trigger and --max-offsets: give one"}},
		{name: "capture/trigger 0", args: c("--as-steps", "--trigger", "0s"), code: 2, want: []string{"out of range"}},
		{name: "capture/trigger 25h", args: c("--as-steps", "--trigger", "25h"), code: 2, want: []string{"--trigger 25h0m0s: out of range, want [1ms, 24h]"}},
		{name: "capture/trigger negative", args: c("--as-steps", "--trigger", "-1s"), code: 2, want: []string{"out of range, want [1ms, 24h]"}},
		{name: "capture/max-offsets 0", args: c("--as-steps", "--max-offsets", "0"), code: 2, want: []string{"out of range"}},
		{name: "capture/max-offsets huge", args: c("--as-steps", "--max-offsets", "9223372036854775807"), code: 2, want: []string{"out of range, want [1, 2^40]"}},
		{name: "capture/kafka-timeout 0", args: c("--kafka-timeout", "0s"), code: 2, want: []string{"--kafka-timeout 0s: out of range, want [1ms, 24h]"}},
		{name: "capture/sasl misspelt", args: c("--sasl-mechanism", "SCRAM-SHA256", "--sasl-user", "u"), code: 2, want: []string{`--sasl-mechanism "SCRAM-SHA256": unknown (did you mean SCRAM-SHA-256`}},
		{name: "capture/sasl no user", args: c("--sasl-mechanism", "PLAIN"), code: 2, want: []string{"--sasl-mechanism PLAIN needs --sasl-user"}},
		{name: "capture/sasl user without mechanism", args: c("--sasl-user", "u"), code: 2, want: []string{"need --sasl-mechanism"}},
		{name: "capture/tls cert without key", files: map[string]string{"c.pem": "x"}, args: c("--tls-cert", "$DIR/c.pem"), code: 2, want: []string{"--tls-cert and --tls-key go together"}},
		{name: "capture/tls ca missing", args: c("--tls-ca", "$DIR/none.pem"), code: 2, want: []string{"--tls-ca: open $DIR/none.pem"}},
		{name: "capture/tls ca not pem", files: map[string]string{"ca.pem": "junk"}, args: c("--tls-ca", "$DIR/ca.pem"), code: 2, want: []string{"no PEM certificate in it"}},
		{name: "capture/unknown flag", args: c("--trigerr", "30s"), code: 2, want: []string{"unknown flag: --trigerr"}},
		{name: "capture/an argument", args: append(c(), "extra"), code: 2, want: []string{`unknown command "extra"`}},
		{name: "capture/out folder missing", args: append([]string{"capture", "--out", "$DIR/none/out.jsonl"}, k...), code: 2, want: []string{"folder $DIR/none does not exist"}},
		{name: "capture/partial without resume", files: map[string]string{".out.jsonl.capture-partial": "# x\n"}, args: c(), code: 2, want: []string{"an interrupted capture left $DIR/.out.jsonl.capture-partial: give --resume"}},
		{name: "capture/partial of other settings", files: map[string]string{".out.jsonl.capture-partial": "# other\n"}, args: c("--resume"), code: 2, want: []string{".out.jsonl.capture-partial:1: the capture was made with other settings"}},
		{name: "capture/no broker", args: c("--kafka-timeout", "300ms"), code: 1, want: []string{"capture: kafka: list the log start offsets of topic payments at 127.0.0.1:1"}},
		{name: "analyze/kafka and a file", args: append([]string{"analyze", "--from-kafka", "$DIR/e.jsonl"}, k...), code: 2, want: []string{"analyze: --from-kafka reads a topic: give no EVENTS file"}},
		{name: "analyze/topic without kafka", args: []string{"analyze", "$DIR/e.jsonl", "--topic", "t"}, code: 2, want: []string{"analyze: --topic reads a topic: it needs --from-kafka"}},
		{name: "analyze/kafka without topic", args: []string{"analyze", "--from-kafka", "--bootstrap", "h:1"}, code: 2, want: []string{"analyze: --bootstrap and --topic are required"}},
		{name: "analyze/kafka value format", args: append([]string{"analyze", "--from-kafka", "--value-format", "xml"}, k...), code: 2, want: []string{`analyze: --value-format "xml": want json or raw`}},
		{name: "analyze/kafka start", args: append([]string{"analyze", "--from-kafka", "--start", "x:1"}, k...), code: 2, want: []string{`analyze: --start "x:1"`}},
		{name: "exec/check missing", files: exp, args: ex("--check", "$DIR/none.jsonl"), code: 2, want: []string{"exec: --check: open $DIR/none.jsonl"}},
		{name: "exec/check unknown field", files: with("e.jsonl", `{"batch": 0, "numOutputRow": 1}`), args: ex("--check", "$DIR/e.jsonl"), code: 2, want: []string{"e.jsonl:1:", `unknown object member name "numOutputRow"`}},
		{name: "exec/check batch order", files: with("e.jsonl", "{\"batch\": 1}\n{\"batch\": 0}\n"), args: ex("--check", "$DIR/e.jsonl"), code: 2, want: []string{"e.jsonl:2: batch 0 after batch 1 (line 1)"}},
		{name: "exec/check negative", files: with("e.jsonl", `{"run": {"numRowsTotal": -1}}`), args: ex("--check", "$DIR/e.jsonl"), code: 2, want: []string{"e.jsonl:1: numRowsTotal -1: want a count >= 0"}},
		{name: "exec/check two kinds", files: with("e.jsonl", `{"batch": 0, "table": []}`), args: ex("--check", "$DIR/e.jsonl"), code: 2, want: []string{`want exactly one of "batch", "run", "table" or a property ("unique", "no-loss", "max-state-keys", "late-rows")`}},
		{name: "exec/check repeated", files: with("e.jsonl", `{"batch": 0, "batch": 0}`), args: ex("--check", "$DIR/e.jsonl"), code: 2, want: []string{`duplicate object member name "batch"`}},
		{name: "exec/check bad utf8", files: with("e.jsonl", "{\"batch\": 0, \"emitted\": [\"\xff\"]}"), args: ex("--check", "$DIR/e.jsonl"), code: 2, want: []string{"e.jsonl:1:", "invalid UTF-8"}},
		{name: "exec/check not met", files: with("e.jsonl", `{"batch": 0, "emitted": [2]}`), args: ex("--check", "$DIR/e.jsonl"), code: 1, want: []string{"batch 0 ($DIR/e.jsonl:1): emitted keys: missing 2", "unexpected 1", "exec: --check $DIR/e.jsonl: 2 differences"}},
		{name: "exec/record is check", files: with("e.jsonl", ""), args: ex("--check", "$DIR/e.jsonl", "--record", "$DIR/e.jsonl"), code: 2, want: []string{"--record $DIR/e.jsonl is the same file as --check $DIR/e.jsonl"}},
		{name: "exec/record folder missing", files: exp, args: ex("--record", "$DIR/none/r.jsonl"), code: 2, want: []string{"exec: --record $DIR/none/r.jsonl: folder $DIR/none does not exist"}},
		{name: "exec/record a folder", files: with("d/x", ""), args: ex("--record", "$DIR/d"), code: 2, want: []string{"exec: --record $DIR/d is a symbolic link or not a regular file"}},
	}
	t.Logf("%d cases", badInputCorpus(t, cases))
}
