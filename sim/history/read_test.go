package history

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

const good = `{"version":1,"seed":1,"query":"","api":"dropDuplicates","keys":["id"],"delayMs":1000,"partitions":1,"sinkKind":"table","eventTimeInKey":false,"healAtMs":0,"endMs":3000,"arrivalRatePerSec":1,` +
	`"copies":[{"event":"a","copy":0,"source":0,"partition":0,"offset":0,"eventTimeUs":1000000,"appendedAtMs":1000}],` +
	`"batches":[{"batchId":0,"atMs":1000,"input":[0],"outcomes":["emitted"],"lateWatermarkMs":0,"watermarkMs":0,"nextWatermarkMs":0,"maxEventTimeMs":1000,"numRowsTotal":1,"numRowsUpdated":1,"numRowsRemoved":0,"progress":{"batchId":0}}],` +
	`"crashes":[],"restarts":[],"sinkWrites":[{"batchId":0,"atMs":1000,"rows":[0],"kept":1}],"table":[0],"hasTable":true,"faultsEnabled":[],"coverage":{}}`

func gz(t *testing.T, data string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(data))
	w.Close()
	return b.String()
}

// TestReadIsStrict: one JSON object, no unknown or repeated field, nothing
// after it, every value in its domain; the error names the field.
func TestReadIsStrict(t *testing.T) {
	if h, err := Read(strings.NewReader(good)); err != nil || len(h.Copies) != 1 || string(h.Batches[0].Progress) != `{"batchId":0}` {
		t.Fatalf("good history: %v", err)
	}
	if _, err := Read(strings.NewReader(good + "\n\n")); err != nil {
		t.Fatalf("trailing whitespace: %v", err)
	}
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"trailing garbage", good + "x", []string{"byte offset"}},
		{"a second object", good + good, []string{"byte offset"}},
		{"duplicate key", strings.Replace(good, `"seed":1,`, `"seed":1,"seed":2,`, 1), []string{"duplicate", "seed"}},
		{"duplicate key in a copy", strings.Replace(good, `"copy":0,`, `"copy":0,"copy":1,`, 1), []string{"duplicate", "copy"}},
		{"unknown field", strings.Replace(good, `"seed":1,`, `"sead":1,`, 1), []string{"sead"}},
		{"wrong case", strings.Replace(good, `"seed":1,`, `"Seed":1,`, 1), []string{"Seed"}},
		{"wrong type", strings.Replace(good, `"offset":0`, `"offset":"0"`, 1), []string{"copies[0].offset"}},
		{"fraction in an int", strings.Replace(good, `"offset":0`, `"offset":1.5`, 1), []string{"copies[0].offset"}},
		{"invalid UTF-8", strings.Replace(good, `"event":"a"`, "\"event\":\"a\xff\"", 1), []string{"UTF-8"}},
		{"version", strings.Replace(good, `"version":1`, `"version":2`, 1), []string{"version", "2"}},
		{"unknown api", strings.Replace(good, `"api":"dropDuplicates"`, `"api":"dropduplicates"`, 1), []string{"api", `did you mean "dropDuplicates"`}},
		{"unknown sink kind", strings.Replace(good, `"sinkKind":"table"`, `"sinkKind":"delta"`, 1), []string{"sinkKind", "table, merge, append, foreachBatch"}},
		{"absurd event time", strings.Replace(good, `"eventTimeUs":1000000`, `"eventTimeUs":9223372036854775807`, 1), []string{"copies[0].eventTimeUs", "9999-12-31"}},
		{"event time beyond 64 bits", strings.Replace(good, `"eventTimeUs":1000000`, `"eventTimeUs":-9223372036854775809`, 1), []string{"copies[0].eventTimeUs", "is not a whole number in [0001-01-01, 9999-12-31] in µs since 1970"}},
		{"append time not whole", strings.Replace(good, `"appendedAtMs":1000`, `"appendedAtMs":-1.5`, 1), []string{"copies[0].appendedAtMs", "is not a whole number in [0001-01-01, 9999-12-31] in ms since 1970"}},
		{"negative watermark", strings.Replace(good, `"lateWatermarkMs":0`, `"lateWatermarkMs":-5`, 1), []string{"batches[0].lateWatermarkMs"}},
		{"unknown outcome", strings.Replace(good, `"outcomes":["emitted"]`, `"outcomes":["kept"]`, 1), []string{"batches[0].outcomes[0]"}},
		{"negative offset", strings.Replace(good, `"offset":0`, `"offset":-1`, 1), []string{"copies[0].offset", "negative"}},
		// The fault and the counters are held in a byte and 32 bits.
		{"unknown fault", strings.Replace(good, `"appendedAtMs":1000}`, `"appendedAtMs":1000,"fault":"Producer-Retry"}`, 1), []string{"copies[0].fault", `did you mean "producer-retry"`}},
		{"copy number beyond 32 bits", strings.Replace(good, `"copy":0,`, `"copy":2147483648,`, 1), []string{"copies[0].copy", "2147483648 is not a whole number in [0, 2147483647]"}},
		{"partition beyond 32 bits", strings.Replace(good, `"partition":0,`, `"partition":-2147483649,`, 1), []string{"copies[0].partition", "[0, 2147483647]"}},
		{"source in exponent form", strings.Replace(good, `"source":0,`, `"source":1e10,`, 1), []string{"copies[0].source", "1e10 is not a whole number in [0, 2147483647]"}},
		{"input row beyond 32 bits", strings.Replace(good, `"input":[0]`, `"input":[4294967296]`, 1), []string{"batches[0].input[0]", "[-2147483648, 2147483647]"}},
		{"negative seed", strings.Replace(good, `"seed":1,`, `"seed":-1,`, 1), []string{"seed", "[0, 18446744073709551615]"}},
		{"misspelt fault", strings.Replace(good, `"appendedAtMs":1000}`, `"appendedAtMs":1000,"fault":"producer-rety"}`, 1), []string{"copies[0].fault", `did you mean "producer-retry"`}},
		{"a number as the fault", strings.Replace(good, `"appendedAtMs":1000}`, `"appendedAtMs":1000,"fault":3}`, 1), []string{"copies[0].fault", `a fault is a name in quotes such as "producer-retry", not 3`}},
		{"null as the fault", strings.Replace(good, `"appendedAtMs":1000}`, `"appendedAtMs":1000,"fault":null}`, 1), []string{"copies[0].fault", "not null"}},
		{"invalid UTF-8 in the fault", strings.Replace(good, `"appendedAtMs":1000}`, "\"appendedAtMs\":1000,\"fault\":\"x\xff\"}", 1), []string{"copies[0].fault", "UTF-8"}},
		{"misspelt outcome", strings.Replace(good, `"outcomes":["emitted"]`, `"outcomes":["emited"]`, 1), []string{"batches[0].outcomes[0]", `did you mean "emitted"`}},
		{"a number as an outcome", strings.Replace(good, `"outcomes":["emitted"]`, `"outcomes":[1]`, 1), []string{"batches[0].outcomes[0]", `an outcome is a name in quotes such as "emitted", not 1`}},
		{"empty event", strings.Replace(good, `"event":"a"`, `"event":""`, 1), []string{"copies[0].event", "empty"}},
		{"delay below -1", strings.Replace(good, `"delayMs":1000`, `"delayMs":-2`, 1), []string{"delayMs"}},
		{"negative batch id", strings.Replace(good, `"batchId":0,"atMs":1000,"rows"`, `"batchId":-3,"atMs":1000,"rows"`, 1), []string{"sinkWrites[0].batchId"}},
		{"not json", "<html>", []string{"byte offset 0"}},
		{"empty", "", []string{"history"}},
		{"a gzip stream cut short", gz(t, good)[:40], []string{"history (gzip)"}},
		{"gzip then garbage", gz(t, good) + "garbage", []string{"history (gzip)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.data))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}

// TestReadGzip: a gzip-compressed history reads like the plain one; the
// decompressed size is bounded.
func TestReadGzip(t *testing.T) {
	h, err := Read(strings.NewReader(gz(t, good)))
	if err != nil || len(h.Copies) != 1 {
		t.Fatalf("gzip: %v", err)
	}
	// A small bound: a bomb (a few bytes that inflate to megabytes) is
	// refused without inflating past it.
	bomb := gz(t, strings.Repeat(" ", 8<<20)+good)
	if len(bomb) > 64<<10 {
		t.Fatalf("bomb of %d bytes", len(bomb))
	}
	if _, err := ReadLimit(strings.NewReader(bomb), 1<<20); err == nil || !strings.Contains(err.Error(), "larger than 1 MiB decompressed") {
		t.Fatalf("bomb: %v", err)
	}
	if _, err := ReadLimit(strings.NewReader(good), int64(len(good))); err != nil {
		t.Fatalf("exactly at the bound: %v", err)
	}
	if _, err := ReadLimit(strings.NewReader(good), int64(len(good)-1)); err == nil {
		t.Fatal("one byte over the bound was accepted")
	}
}

func TestRoundTrip(t *testing.T) {
	h, err := Read(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := h.Write(&b); err != nil {
		t.Fatal(err)
	}
	h2, err := Read(&b)
	if err != nil {
		t.Fatalf("a written history does not read back: %v", err)
	}
	if len(h2.Writes) != 1 || h2.Table[0] != 0 || !h2.HasTable {
		t.Fatalf("%+v", h2)
	}
}

// TestFaultAndOutcomeRoundTrip: every catalogue fault and every outcome
// reads back as written, by name.
func TestFaultAndOutcomeRoundTrip(t *testing.T) {
	for i, name := range faultNames {
		f, ok := FaultOf(name)
		if !ok || int(f) != i || f.String() != name {
			t.Fatalf("fault %q: %d, %v", name, f, ok)
		}
		b, err := Copy{Event: "a", Fault: f}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		h, err := Read(strings.NewReader(strings.Replace(good, `{"event":"a","copy":0,"source":0,"partition":0,"offset":0,"eventTimeUs":1000000,"appendedAtMs":1000}`, strings.Replace(string(b), `"eventTimeUs":0,"appendedAtMs":0`, `"eventTimeUs":1000000,"appendedAtMs":1000`, 1), 1)))
		if err != nil {
			t.Fatalf("fault %q: %v", name, err)
		}
		if h.Copies[0].Fault != f {
			t.Fatalf("fault %q read back as %q", name, h.Copies[0].Fault)
		}
	}
	for _, name := range OutcomeNames {
		h, err := Read(strings.NewReader(strings.Replace(good, `"outcomes":["emitted"]`, `"outcomes":["`+name+`"]`, 1)))
		if err != nil {
			t.Fatalf("outcome %q: %v", name, err)
		}
		if got := h.Batches[0].Outcomes[0].String(); got != name {
			t.Fatalf("outcome %q read back as %q", name, got)
		}
	}
	if _, err := (Outcomes{0}).MarshalJSON(); err == nil {
		t.Fatal("outcome 0 written")
	}
	if _, err := Fault(200).MarshalJSON(); err == nil {
		t.Fatal("fault 200 written")
	}
}

// TestReadEscapedNames: a fault or an outcome written with escapes reads
// as its name.
func TestReadEscapedNames(t *testing.T) {
	data := strings.Replace(good, `"appendedAtMs":1000}`, `"appendedAtMs":1000,"fault":"producer\u002dretry"}`, 1)
	data = strings.Replace(data, `"outcomes":["emitted"]`, `"outcomes":["\u0065mitted"]`, 1)
	h, err := Read(strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if h.Copies[0].Fault != MustFault("producer-retry") || h.Batches[0].Outcomes[0] != Emitted {
		t.Fatalf("%v %v", h.Copies[0].Fault, h.Batches[0].Outcomes)
	}
}
