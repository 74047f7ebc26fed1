package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/internal/yamlstrict"
)

// refuseBase is a valid scenario of four lines; every case appends to it,
// so its first line is line 5.
const refuseBase = `query:
  dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
  watermark: {column: ts, delay: 10 seconds}
  sink: {kind: table}
`

// refused is one bad scenario file: the text after refuseBase (or the
// whole file when whole is set), the line and field the error must name
// and a fragment of its message.
type refused struct {
	name  string
	text  string
	whole bool
	line  int
	field string
	want  string
}

// refusedCases is every refused field of the scenario format (issue 10
// item 5, issue 11 item 9). Each error is an *yamlstrict.Error, which the CLI exits 2
// for (bad input).
var refusedCases = []refused{
	// The file as a whole.
	{name: "second document", text: "---\nname: other\n", line: 5, want: "second YAML document"},
	{name: "empty file", text: "", whole: true, want: "empty file"},
	{name: "not a mapping", text: "- a\n- b\n", whole: true, want: "a scenario is a YAML mapping"},
	{name: "invalid UTF-8", text: "name: caf\xe9\n", line: 5, want: "invalid UTF-8"},
	{name: "too big", text: "description: " + strings.Repeat("x", 1<<20) + "\n", want: "at most 1 MiB"},
	{name: "syntax", text: "fault_phase: 1m\n  heal_phase: 2m\n", line: 6, want: "invalid YAML"},
	{name: "tag int", text: "sources:\n  - name: default\n    rate: {per_sec: !!int 5}\n", line: 7, field: "sources[0].rate.per_sec", want: "YAML tags such as !!int"},
	{name: "tag str", text: "max_copies: !!str 10\n", line: 5, field: "max_copies", want: "YAML tags"},
	{name: "local tag", text: "fault_phase: !minutes 5\n", line: 5, field: "fault_phase", want: "YAML tags"},
	{name: "binary tag", text: "description: !!binary aGVsbG8=\n", line: 5, field: "description", want: "YAML tags"},
	{name: "anchor", text: "fault_phase: &p 1m\nheal_phase: *p\n", line: 5, field: "fault_phase", want: "anchors"},
	{name: "merge key", text: "sources:\n  - name: default\n    <<: {partitions: 2}\n", line: 7, want: "field sources[0].<< not found"},
	{name: "key twice", text: "fault_phase: 1m\nfault_phase: 2m\n", line: 6, field: "fault_phase", want: "given twice (first at line 5)"},
	{name: "complex key", text: "? [a, b]\n: 1\n", line: 5, want: "a key must be a plain name"},
	{name: "unknown field", text: "fault_phse: 1m\n", line: 5, want: "field fault_phse not found: did you mean fault_phase?"},
	{name: "unknown field far", text: "colour: red\n", line: 5, want: "fields here: name, description"},
	{name: "nested unknown field", text: "sources:\n  - name: default\n    rate: {per_se: 10}\n", line: 7, want: "field sources[0].rate.per_se not found: did you mean per_sec?"},

	// Top level.
	{name: "name path", text: "name: ../../../x\n", line: 5, field: "name", want: "[A-Za-z0-9._-], not starting with '.'"},
	{name: "name slash", text: "name: a/b\n", line: 5, field: "name", want: "[A-Za-z0-9._-]"},
	{name: "name newline", text: "name: \"a\\nb\"\n", line: 5, field: "name", want: "[A-Za-z0-9._-]"},
	{name: "name dot", text: "name: .hidden\n", line: 5, field: "name", want: "not starting with '.'"},
	{name: "name dash", text: "name: -x\n", line: 5, field: "name", want: "or '-'"},
	{name: "name long", text: "name: " + strings.Repeat("n", 129) + "\n", line: 5, field: "name", want: "1 to 128"},
	{name: "name list", text: "name: [a]\n", line: 5, field: "name", want: "want a string, got a list"},
	{name: "description list", text: "description: [a]\n", line: 5, field: "description", want: "want a string"},
	{name: "source null", text: "source:\n", line: 5, field: "source", want: "no value"},
	{name: "query number", text: "shape_change_query: 5\n", line: 5, field: "shape_change_query", want: "want the query as a mapping"},
	{name: "query empty", text: "", whole: true, want: "empty file"},
	{name: "shape query sink", text: "shape_change_query:\n  dedup: {api: dropDuplicates, keys: [id]}\n  sink: {kind: append}\n", line: 5, field: "shape_change_query", want: "sink kind append"},
	{name: "shape query error line", text: "shape_change_query:\n  dedup: {api: dropDuplicates, keys: [id]}\n  sink: {kind: tabel}\n", line: 7, field: "shape_change_query", want: "sink.kind"},
	{name: "shape query sources", text: "shape_change_query:\n  dedup: {api: dropDuplicates, keys: [id]}\n  sources: [{name: web}]\n", line: 5, field: "shape_change_query", want: "reads sources web"},
	{name: "start format", text: "start: 2026-01-01\n", line: 5, field: "start", want: "RFC 3339"},
	{name: "start early", text: "start: 1960-01-01T00:00:00Z\n", line: 5, field: "start", want: "[1970-01-01T00:00:00Z, 9000-01-01T00:00:00Z]"},
	{name: "start late", text: "start: 9999-01-01T00:00:00Z\n", line: 5, field: "start", want: "9000-01-01"},
	{name: "start empty", text: "start: \"\"\n", line: 5, field: "start", want: `"" leaves the field unset`},
	{name: "trigger 1ns", text: "trigger_interval: 1ns\n", line: 5, field: "trigger_interval", want: "not a whole number of milliseconds"},
	{name: "trigger 1500us", text: "trigger_interval: 1500us\n", line: 5, field: "trigger_interval", want: "whole number of milliseconds"},
	{name: "trigger 0", text: "trigger_interval: 0s\n", line: 5, field: "trigger_interval", want: "0s leaves the field unset, which means the default 1s; want [1ms, 24h]"},
	{name: "trigger long", text: "trigger_interval: 2d\n", line: 5, field: "trigger_interval", want: "2d: want [1ms, 24h]"},
	{name: "trigger bare number", text: "trigger_interval: 5\n", line: 5, field: "trigger_interval", want: "has no unit"},
	{name: "trigger negative", text: "trigger_interval: -1s\n", line: 5, field: "trigger_interval", want: "negative"},
	{name: "trigger spark sub-ms", text: "trigger_interval: 500 microseconds\n", line: 5, field: "trigger_interval", want: "below 1ms"},
	{name: "trigger overflow", text: "trigger_interval: 100000000000000000d\n", line: 5, field: "trigger_interval", want: "between 0 and 106751d"},
	{name: "trigger word", text: "trigger_interval: soon\n", line: 5, field: "trigger_interval", want: "not a duration"},
	{name: "trigger list", text: "trigger_interval: [1s]\n", line: 5, field: "trigger_interval", want: "want a duration such as 30s, got a list"},
	{name: "fault phase zero", text: "fault_phase: 0s\n", line: 5, field: "fault_phase", want: "default 5m; want [1ms, 366d]"},
	{name: "fault phase long", text: "fault_phase: 400d\n", line: 5, field: "fault_phase", want: "400d: want [1ms, 366d]"},
	{name: "heal below trigger", text: "trigger_interval: 10s\nheal_phase: 1s\n", line: 6, field: "heal_phase", want: "shorter than trigger_interval 10s"},
	{name: "phases over a year", text: "fault_phase: 200d\nheal_phase: 200d\n", line: 6, field: "heal_phase", want: "at most 366d"},
	{name: "downtime zero", text: "downtime: 0s\n", line: 5, field: "downtime", want: "default 10s; want [1ms, 24h]"},
	{name: "downtime 1ns", text: "downtime: 1ns\n", line: 5, field: "downtime", want: "whole number of milliseconds"},
	{name: "max copies zero", text: "max_copies: 0\n", line: 5, field: "max_copies", want: "default 20000000; want [1, 2147483647]"},
	{name: "max copies float", text: "max_copies: 1e12\n", line: 5, field: "max_copies", want: "want a whole number, got 1e12"},
	{name: "max copies overflow", text: "max_copies: 99999999999999999999\n", line: 5, field: "max_copies", want: "want a whole number"},
	{name: "max copies negative", text: "max_copies: -5\n", line: 5, field: "max_copies", want: "-5: want [1, 2147483647]"},
	{name: "max copies exceeded", text: "max_copies: 10\n", line: 5, field: "max_copies", want: "above the limit of 10 copies"},
	{name: "swarm number", text: "swarm: 1\n", line: 5, field: "swarm", want: "want true or false, got 1"},
	{name: "omit progress yes", text: "omit_progress: yes\n", line: 5, field: "omit_progress", want: `want true or false, got "yes"`},

	// sources[].
	{name: "sources string", text: "sources: default\n", line: 5, field: "sources", want: "want a list"},
	{name: "source empty item", text: "sources:\n  -\n", line: 6, field: "sources[0]", want: "an empty list item"},
	{name: "source twice", text: "sources:\n  - name: default\n  - name: default\n", line: 7, field: "sources[1].name", want: "described twice (also sources[0])"},
	{name: "source misspelt", text: "sources:\n  - name: defualt\n", line: 6, field: "sources[0].name", want: "did you mean default?"},
	{name: "topic", text: "sources:\n  - name: default\n    topic: a b\n", line: 7, field: "sources[0].topic", want: "letters, digits, '.', '_' or '-'"},
	{name: "topic empty", text: "sources:\n  - name: default\n    topic: \"\"\n", line: 7, field: "sources[0].topic", want: `the default "default"`},
	{name: "partitions zero", text: "sources:\n  - name: default\n    partitions: 0\n", line: 7, field: "sources[0].partitions", want: "default 4; want [1, 1024]"},
	{name: "partitions many", text: "sources:\n  - name: default\n    partitions: 5000\n", line: 7, field: "sources[0].partitions", want: "5000: want [1, 1024]"},
	{name: "partitions fraction", text: "sources:\n  - name: default\n    partitions: 1.5\n", line: 7, field: "sources[0].partitions", want: "whole number"},
	{name: "partitioner", text: "sources:\n  - name: default\n    partitioner: roundrobin\n", line: 7, field: "sources[0].partitioner", want: "did you mean round_robin?"},
	{name: "profile", text: "sources:\n  - name: default\n    rate: {profile: diurnl}\n", line: 7, field: "sources[0].rate.profile", want: "want constant, diurnal or bursts; did you mean diurnal?"},
	{name: "per sec NaN", text: "sources:\n  - name: default\n    rate: {per_sec: .nan}\n", line: 7, field: "sources[0].rate.per_sec", want: "want a finite number"},
	{name: "per sec Inf", text: "sources:\n  - name: default\n    rate: {per_sec: .inf}\n", line: 7, field: "sources[0].rate.per_sec", want: "want a finite number"},
	{name: "per sec overflow", text: "sources:\n  - name: default\n    rate: {per_sec: 1e400}\n", line: 7, field: "sources[0].rate.per_sec", want: `want a number, got "1e400"`},
	{name: "per sec negative", text: "sources:\n  - name: default\n    rate: {per_sec: -1}\n", line: 7, field: "sources[0].rate.per_sec", want: "-1: want (0, 10000000] events per second"},
	{name: "per sec zero", text: "sources:\n  - name: default\n    rate: {per_sec: 0}\n", line: 7, field: "sources[0].rate.per_sec", want: "default 100"},
	{name: "per sec huge", text: "sources:\n  - name: default\n    rate: {per_sec: 2e7}\n", line: 7, field: "sources[0].rate.per_sec", want: "2e+07: want (0, 10000000]"},
	{name: "per sec string", text: "sources:\n  - name: default\n    rate: {per_sec: \"100\"}\n", line: 7, field: "sources[0].rate.per_sec", want: `want a number, got "100"`},
	{name: "amplitude", text: "sources:\n  - name: default\n    rate: {profile: diurnal, amplitude: 1.5}\n", line: 7, field: "sources[0].rate.amplitude", want: "1.5: want (0, 1]"},
	{name: "amplitude zero", text: "sources:\n  - name: default\n    rate: {profile: diurnal, amplitude: 0}\n", line: 7, field: "sources[0].rate.amplitude", want: "default 0.5"},
	{name: "amplitude not diurnal", text: "sources:\n  - name: default\n    rate: {amplitude: 0.5}\n", line: 7, field: "sources[0].rate.amplitude", want: "applies to rate.profile diurnal only"},
	{name: "period 1ns", text: "sources:\n  - name: default\n    rate: {profile: diurnal, period: 1ns}\n", line: 7, field: "sources[0].rate.period", want: "whole number of milliseconds"},
	{name: "period zero", text: "sources:\n  - name: default\n    rate: {profile: diurnal, period: 0s}\n", line: 7, field: "sources[0].rate.period", want: "default 1d; want [1ms, 366d]"},
	{name: "period long", text: "sources:\n  - name: default\n    rate: {profile: diurnal, period: 400d}\n", line: 7, field: "sources[0].rate.period", want: "want [1ms, 366d]"},
	{name: "burst factor", text: "sources:\n  - name: default\n    rate: {profile: bursts, burst_factor: 0.5}\n", line: 7, field: "sources[0].rate.burst_factor", want: "0.5: want [1, 1000]"},
	{name: "burst factor not bursts", text: "sources:\n  - name: default\n    rate: {burst_factor: 5}\n", line: 7, field: "sources[0].rate.burst_factor", want: "applies to rate.profile bursts only"},
	{name: "burst every zero", text: "sources:\n  - name: default\n    rate: {profile: bursts, burst_every: 0s}\n", line: 7, field: "sources[0].rate.burst_every", want: "default 10m"},
	{name: "burst length long", text: "sources:\n  - name: default\n    rate: {profile: bursts, burst_length: 367d}\n", line: 7, field: "sources[0].rate.burst_length", want: "want [1ms, 366d]"},
	{name: "keys kind", text: "sources:\n  - name: default\n    keys: {kind: boundd}\n", line: 7, field: "sources[0].keys.kind", want: "did you mean bounded?"},
	{name: "keys size huge", text: "sources:\n  - name: default\n    keys: {kind: bounded, size: 1000000000}\n", line: 7, field: "sources[0].keys.size", want: "want [1, 100000000] ids"},
	{name: "keys size zero", text: "sources:\n  - name: default\n    keys: {kind: bounded, size: 0}\n", line: 7, field: "sources[0].keys.size", want: "default 1000"},
	{name: "keys size fresh", text: "sources:\n  - name: default\n    keys: {size: 5}\n", line: 7, field: "sources[0].keys.size", want: "applies to keys.kind bounded only"},
	{name: "producers zero", text: "sources:\n  - name: default\n    producers: 0\n", line: 7, field: "sources[0].producers", want: "default 100; want [1, 1000000]"},
	{name: "producers many", text: "sources:\n  - name: default\n    producers: 2000000\n", line: 7, field: "sources[0].producers", want: "want [1, 1000000]"},
	{name: "send delay without kind", text: "sources:\n  - name: default\n    send_delay: {mean: 5s}\n", line: 7, field: "sources[0].send_delay.kind", want: "required when send_delay is given"},
	{name: "send delay kind", text: "sources:\n  - name: default\n    send_delay: {kind: normal}\n", line: 7, field: "sources[0].send_delay.kind", want: "did you mean lognormal?"},
	{name: "send delay mean negative", text: "sources:\n  - name: default\n    send_delay: {kind: fixed, mean: -1s}\n", line: 7, field: "sources[0].send_delay.mean", want: "negative"},
	{name: "send delay mean long", text: "sources:\n  - name: default\n    send_delay: {kind: fixed, mean: 400d}\n", line: 7, field: "sources[0].send_delay.mean", want: "want [0s, 366d]"},
	{name: "send delay sigma zero", text: "sources:\n  - name: default\n    send_delay: {kind: lognormal, mean: 1s, sigma: 0}\n", line: 7, field: "sources[0].send_delay.sigma", want: "default 1; want (0, 5]"},
	{name: "send delay sigma big", text: "sources:\n  - name: default\n    send_delay: {kind: lognormal, mean: 1s, sigma: 9}\n", line: 7, field: "sources[0].send_delay.sigma", want: "9: want (0, 5]"},
	{name: "send delay sigma not lognormal", text: "sources:\n  - name: default\n    send_delay: {kind: fixed, sigma: 2}\n", line: 7, field: "sources[0].send_delay.sigma", want: "applies to kind lognormal only"},
	{name: "send delay max below mean", text: "sources:\n  - name: default\n    send_delay: {kind: uniform, mean: 2s, max: 1s}\n", line: 7, field: "sources[0].send_delay.max", want: "below mean"},
	{name: "send delay max not uniform", text: "sources:\n  - name: default\n    send_delay: {kind: fixed, max: 1s}\n", line: 7, field: "sources[0].send_delay.max", want: "applies to kind uniform only"},
	{name: "timestamp format", text: "sources:\n  - name: default\n    timestamp_format: rfc\n", line: 7, field: "sources[0].timestamp_format", want: "want seconds or rfc3339"},
	{name: "timestamp precision long", text: "sources:\n  - name: default\n    timestamp_precision: 2h\n", line: 7, field: "sources[0].timestamp_precision", want: "want 0s (none) or [1ms, 1h]"},
	{name: "timestamp precision 1ns", text: "sources:\n  - name: default\n    timestamp_precision: 1ns\n", line: 7, field: "sources[0].timestamp_precision", want: "whole number of milliseconds"},

	// faults.
	{name: "faults list", text: "faults: [crash-random]\n", line: 5, field: "faults", want: "want a mapping of fault name to knobs"},
	{name: "fault unknown", text: "faults:\n  producer-retyr: {}\n", line: 6, field: "faults.producer-retyr", want: "unknown fault: did you mean producer-retry?"},
	{name: "fault far", text: "faults:\n  meteor: {}\n", line: 6, field: "faults.meteor", want: "want producer-retry, producer-retry-restamped"},
	{name: "fault twice", text: "faults:\n  crash-random: {}\n  crash-random: {rate: 0.1}\n", line: 7, field: "faults.crash-random", want: "given twice"},
	{name: "fault value", text: "faults:\n  producer-retry: 5\n", line: 6, field: "faults.producer-retry", want: "want a mapping of knob to value"},
	{name: "knob unknown", text: "faults:\n  producer-retry: {probabilty: 0.1}\n", line: 6, field: "faults.producer-retry.probabilty", want: "unknown knob: did you mean probability?"},
	{name: "knob probability high", text: "faults:\n  producer-retry: {probability: 0.7}\n", line: 6, field: "faults.producer-retry.probability", want: "0.7: want a number in [0, 0.5]"},
	{name: "knob NaN", text: "faults:\n  producer-retry: {probability: .nan}\n", line: 6, field: "faults.producer-retry.probability", want: "want a number in [0, 0.5]"},
	{name: "knob string number", text: "faults:\n  crash-random: {rate: \"0.1\"}\n", line: 6, field: "faults.crash-random.rate", want: "want a number in [0.005, 0.3]"},
	{name: "knob int fraction", text: "faults:\n  producer-retry: {copies_max: 2.5}\n", line: 6, field: "faults.producer-retry.copies_max", want: "2.5: want a whole number in [1, 5]"},
	{name: "knob duration short", text: "faults:\n  producer-retry: {gap_ms: 5ms}\n", line: 6, field: "faults.producer-retry.gap_ms", want: "5ms: want [10ms, 10m]"},
	{name: "knob duration ms number", text: "faults:\n  producer-retry: {gap_ms: 5}\n", line: 6, field: "faults.producer-retry.gap_ms", want: "5: want [10ms, 10m]"},
	{name: "knob duration 1ns", text: "faults:\n  producer-retry: {gap_ms: 1ns}\n", line: 6, field: "faults.producer-retry.gap_ms", want: "whole number of milliseconds"},
	{name: "knob duration overflow", text: "faults:\n  producer-retry: {gap_ms: 100000000000000000d}\n", line: 6, field: "faults.producer-retry.gap_ms", want: "between 0 and 106751d"},
	{name: "knob duration list", text: "faults:\n  producer-retry: {gap_ms: [1]}\n", line: 6, field: "faults.producer-retry.gap_ms", want: "got a list"},
	{name: "knob choice", text: "faults:\n  producer-retry: {gap: lognormall}\n", line: 6, field: "faults.producer-retry.gap", want: "want fixed, exponential or lognormal (did you mean lognormal?)"},
	{name: "knob bool", text: "faults:\n  source-silence: {}\n  lagging-input: {dead: yes}\n", line: 7, field: "faults.lagging-input.dead", want: "want true or false"},
	{name: "knob none", text: "faults:\n  torn-write: {probability: 0.5, rate: 1}\n", line: 6, field: "faults.torn-write.rate", want: "unknown knob"},
	{name: "fault requires", text: "faults:\n  torn-write: {}\n", line: 5, field: "faults", want: "requires crash-random"},
	{name: "fault not applicable", text: "faults:\n  lagging-input: {}\n", line: 6, field: "faults.lagging-input", want: "at least two sources"},
	{name: "fault source index", text: "faults:\n  source-silence: {source: 3}\n", line: 6, field: "faults.source-silence.source", want: "want -1 (drawn) or [0, 0]"},

	// columns[].
	{name: "columns mapping", text: "columns: {name: x}\n", line: 5, field: "columns", want: "want a list"},
	{name: "column name", text: "columns:\n  - {name: a-b}\n", line: 6, field: "columns[0].name", want: "a letter or '_'"},
	{name: "column is id", text: "columns:\n  - {name: id}\n", line: 6, field: "columns[0].name", want: "the id column"},
	{name: "column is event time", text: "columns:\n  - {name: ts}\n", line: 6, field: "columns[0].name", want: "the event-time column"},
	{name: "column twice", text: "columns:\n  - {name: x}\n  - {name: x}\n", line: 7, field: "columns[1].name", want: "listed twice"},
	{name: "column type", text: "columns:\n  - {name: amount, type: doubel}\n", line: 6, field: "columns[0].type", want: "did you mean double?"},
	{name: "column bytes zero", text: "columns:\n  - {name: note, bytes: 0}\n", line: 6, field: "columns[0].bytes", want: "default 16; want [1, 65536]"},
	{name: "column bytes huge", text: "columns:\n  - {name: note, bytes: 100000}\n", line: 6, field: "columns[0].bytes", want: "want [1, 65536]"},
	{name: "column bytes long", text: "columns:\n  - {name: n, type: long, bytes: 5}\n", line: 6, field: "columns[0].bytes", want: "only for type string"},
	{name: "column field", text: "columns:\n  - name: x\n    typo: 1\n", line: 7, want: "field columns[0].typo not found: did you mean type?"},
	{name: "column key on payload", text: "columns:\n  - {name: user}\n", whole: true, want: ""},

	// check.
	{name: "state margin NaN", text: "check:\n  state_margin: .nan\n", line: 6, field: "check.state_margin", want: "want a finite number"},
	{name: "state margin negative", text: "check:\n  state_margin: -1\n", line: 6, field: "check.state_margin", want: "-1: want (0, 1000000]"},
	{name: "state margin huge", text: "check:\n  state_margin: 2e6\n", line: 6, field: "check.state_margin", want: "2e6: want (0, 1000000]"},
	{name: "state margin zero", text: "check:\n  state_margin: 0\n", line: 6, field: "check.state_margin", want: "a tiny value such as 0.001"},
	{name: "growth fraction", text: "check:\n  growth_fraction: -0.1\n", line: 6, field: "check.growth_fraction", want: "want (0, 1000000]"},
	{name: "max examples zero", text: "check:\n  max_examples: 0\n", line: 6, field: "check.max_examples", want: "want [1, 1000]"},
	{name: "max examples many", text: "check:\n  max_examples: 5000\n", line: 6, field: "check.max_examples", want: "want [1, 1000]"},
	{name: "stall span 1ns", text: "check:\n  stall_span: 1ns\n", line: 6, field: "check.stall_span", want: "whole number of milliseconds"},
	{name: "stall span zero", text: "check:\n  stall_span: 0s\n", line: 6, field: "check.stall_span", want: "want [1ms, 366d]"},
	{name: "check field", text: "check:\n  state_margn: 1\n", line: 6, want: "did you mean state_margin?"},

	// expect.
	{name: "exactly once yes", text: "expect:\n  exactly_once: yes\n", line: 6, field: "expect.exactly_once", want: `want true or false, got "yes"`},
	{name: "exactly once string", text: "expect:\n  exactly_once: \"true\"\n", line: 6, field: "expect.exactly_once", want: "want true or false"},
	{name: "findings list", text: "expect:\n  findings: [lost]\n", line: 6, field: "expect.findings", want: "want a mapping of finding kind"},
	{name: "finding unknown", text: "expect:\n  findings:\n    lsot: present\n", line: 7, field: "expect.findings.lsot", want: "unknown finding kind: did you mean lost?"},
	{name: "finding condition", text: "expect:\n  findings:\n    lost: maybe\n", line: 7, field: "expect.findings.lost", want: `"maybe": want present, absent or a bound`},
	{name: "finding negative", text: "expect:\n  findings:\n    lost: \"-1\"\n", line: 7, field: "expect.findings.lost", want: "want present, absent or a bound"},
	{name: "finding overflow", text: "expect:\n  findings:\n    lost: \">= 99999999999999999999\"\n", line: 7, field: "expect.findings.lost", want: "whole number"},
	{name: "finding twice", text: "expect:\n  findings:\n    lost: absent\n    lost: present\n", line: 8, field: "expect.findings.lost", want: "given twice"},
	{name: "finding list", text: "expect:\n  findings:\n    lost: [1]\n", line: 7, field: "expect.findings.lost", want: "a list: want present"},
	{name: "unquoted >=", text: "expect:\n  findings:\n    lost: >= 10\n", line: 7, want: `quote it, lost: ">= 10"`},
	{name: "unquoted >", text: "expect:\n  findings:\n    late-dropped: > 5\n", line: 7, want: `quote it, late-dropped: "> 5"`},
	{name: "unquoted >5", text: "expect:\n  findings:\n    lost: >5\n", line: 7, field: "expect.findings.lost", want: `YAML reads >5 as a block scalar`},
	{name: "faults fired unknown", text: "expect:\n  faults_fired: [crash-randm]\n", line: 6, field: "expect.faults_fired[0]", want: "did you mean crash-random?"},
	{name: "faults fired twice", text: "expect:\n  faults_fired: [crash-random, crash-random]\n", line: 6, field: "expect.faults_fired[1]", want: "listed twice"},
	{name: "expect field", text: "expect:\n  exactly_onse: true\n", line: 6, want: "did you mean exactly_once?"},
}

func TestRefusedFields(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range refusedCases {
		if seen[tc.name] {
			t.Fatalf("two cases named %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			text := refuseBase + tc.text
			if tc.whole {
				text = tc.text
			}
			if tc.name == "column key on payload" {
				text = "query:\n  dedup: {api: dropDuplicates, keys: [id, user]}\ncolumns:\n  - {name: user}\n"
				tc.line, tc.field, tc.want = 4, "columns[0].name", "a dedup key"
			}
			_, err := Parse("s.yaml", []byte(text))
			var e *yamlstrict.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want a *yamlstrict.Error", err, err)
			}
			if e.File != "s.yaml" || e.Line != tc.line || e.Field != tc.field || !strings.Contains(e.Msg, tc.want) {
				t.Fatalf("got %q\n(line %d, field %q), want line %d, field %q, message with %q", e.Error(), e.Line, e.Field, tc.line, tc.field, tc.want)
			}
			if strings.Contains(e.Error(), "\n") {
				t.Fatalf("a multi-line message: %q", e.Error())
			}
			if strings.ContainsAny(tc.field, "._[") && strings.Count(e.Error(), tc.field) > 1 {
				t.Errorf("the field is named twice: %q", e.Error())
			}
		})
	}
}

// TestAcceptedEdges: values at the edges of their domains load.
func TestAcceptedEdges(t *testing.T) {
	for _, text := range []string{
		"trigger_interval: 1ms\nheal_phase: 1ms\n",
		"trigger_interval: 24h\nheal_phase: 1d\nfault_phase: 1ms\n",
		"fault_phase: 183d\nheal_phase: 183d\nsources:\n  - name: default\n    rate: {per_sec: 0.001}\n",
		"downtime: 24h\n",
		"start: 1970-01-01T00:00:00Z\n",
		"start: 9000-01-01T00:00:00Z\n",
		"sources:\n  - name: default\n    rate: {per_sec: 1e-14}\n",
		"sources:\n  - name: default\n    rate: {per_sec: 10000}\n",
		"sources:\n  - name: default\n    rate: {profile: diurnal, amplitude: 1, period: 1ms}\n",
		"sources:\n  - name: default\n    rate: {profile: bursts, per_sec: 0.01, burst_factor: 1000, burst_every: 1ms, burst_length: 366d}\n",
		"sources:\n  - name: default\n    send_delay: {kind: fixed, mean: 0s}\n    timestamp_precision: 0s\n",
		"sources:\n  - name: default\n    send_delay: {kind: uniform, mean: 1s, max: 1s}\n    timestamp_precision: 1h\n",
		"sources:\n  - name: default\n    send_delay: {kind: lognormal, mean: 1s, sigma: 5}\n    partitions: 1024\n    producers: 1000000\n",
		"sources:\n  - name: default\n    keys: {kind: bounded, size: 1}\n",
		"faults:\n  producer-retry: {probability: 0.5, copies_max: 5, gap_ms: 10, gap: fixed}\n  crash-random:\n",
		"faults:\n  producer-retry: {gap_ms: 10m, offline_min_ms: 1m, offline_max_ms: 1d}\n",
		"check:\n  state_margin: 1e6\n  growth_fraction: 0.001\n  max_examples: 1000\n  stall_span: 366d\n",
		"columns:\n  - {name: _x, type: long}\n  - {name: note, bytes: 65536}\n  - {name: ok, type: boolean}\n",
		"expect:\n  exactly_once: false\n  findings:\n    lost: \"== 0\"\n    late-dropped: \"<= 3\"\n    sink-lost: \"< 5\"\n    table-duplicate: 0\n  faults_fired: [sim/replay, producer-retry/offline]\n",
		"name: a.B_c-1\n",
	} {
		if _, err := Parse("s.yaml", []byte(refuseBase+text)); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}
