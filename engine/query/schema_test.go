package query

import (
	"strings"
	"testing"
)

func TestSchemaField(t *testing.T) {
	for in, want := range map[string]string{
		"dedup: {api: dropDuplicates, keys: [id]}\nschema: \"id STRING, ts TIMESTAMP\"\n":                                  "id STRING, ts TIMESTAMP",
		"dedup: {api: dropDuplicates}\nschema: [\"id STRING\", {ts: TIMESTAMP}, {name: n, type: bigint}]\n":                "id STRING, ts TIMESTAMP, n BIGINT",
		"dedup: {api: dropDuplicates}\nschema:\n  - {name: name, type: STRING}\n  - {type: DOUBLE}\n":                      "name STRING, type DOUBLE",
		"dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1s}\nschema: \"id STRING, ts BIGINT\"\n": "id STRING, ts BIGINT",
	} {
		q, err := Parse("q.yaml", []byte(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := q.Schema.String(); got != want {
			t.Errorf("%q: schema %q, want %q", in, got, want)
		}
	}
}

func TestSchemaErrors(t *testing.T) {
	for in, want := range map[string]string{
		"dedup: {api: dropDuplicates}\nschema: 3\n":                                                       `q.yaml:2: schema: want a Spark DDL string ("id STRING, ts TIMESTAMP") or a list of columns, got integer 3`,
		"dedup: {api: dropDuplicates}\nschema: \"id STRNG\"\n":                                            `q.yaml:2: schema: at character 4: unknown type "STRNG" (did you mean STRING?)`,
		"dedup: {api: dropDuplicates}\nschema: []\n":                                                      "q.yaml:2: schema: want at least one column",
		"dedup: {api: dropDuplicates}\nschema: [\"a STRING\", {a: BIGINT}]\n":                             `q.yaml:2: schema[1]: column "a" given twice`,
		"dedup: {api: dropDuplicates}\nschema: [{a: DECIMAL}]\n":                                          "q.yaml:2: schema[0].a: type DECIMAL is not modelled by dedupsim (modelled: STRING, BIGINT, INT, DOUBLE, BOOLEAN, TIMESTAMP)",
		"dedup: {api: dropDuplicates}\nschema: [{name: a, typ: STRING}]\n":                                `q.yaml:2: schema[0]: unknown field "typ" (did you mean "type"?)`,
		"dedup: {api: dropDuplicates}\nschema: [{name: a}]\n":                                             `q.yaml:2: schema[0].name: unknown type "a"`,
		"dedup: {api: dropDuplicates}\nschema: [[a]]\n":                                                   `q.yaml:2: schema[0]: want a column: "name TYPE", {name: TYPE} or {name: N, type: T}, got a list`,
		"dedup: {api: dropDuplicates, keys: [idd]}\nschema: \"id STRING\"\n":                              `q.yaml:2: schema: key column "idd" is not a column of the schema (id) (did you mean "id"?)`,
		"dedup: {api: dropDuplicates}\nwatermark: {column: t, delay: 1s}\nschema: \"ts TIMESTAMP\"\n":     `q.yaml:3: schema: event-time column "t" is not a column of the schema (ts)`,
		"dedup: {api: dropDuplicates}\nwatermark: {column: t, delay: 1s}\nschema: \"t BOOLEAN\"\n":        `q.yaml:3: schema: event-time column "t" is BOOLEAN: withWatermark needs a TIMESTAMP`,
		"dedup: {api: dropDuplicates, keys: [a]}\nsink: {kind: merge, keys: [b]}\nschema: \"a STRING\"\n": `q.yaml:3: schema: sink match column "b" is not a column of the schema (a)`,
	} {
		_, err := Parse("q.yaml", []byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant %s", in, err, want)
		}
	}
}
