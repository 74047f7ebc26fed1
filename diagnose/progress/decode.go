package progress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// rawProgress is a StreamingQueryProgress as jsonValue writes it (A.1) or
// as the event log's Jackson bean dump does (A.2c): the fields both have,
// the rates as raw JSON (a number, or Jackson's "NaN" string), the offsets
// as raw JSON (a value, or a string holding JSON).
type rawProgress struct {
	ID                     *string            `json:"id"`
	RunID                  *string            `json:"runId"`
	Name                   *string            `json:"name"`
	Timestamp              *string            `json:"timestamp"`
	BatchID                *int64             `json:"batchId"`
	BatchDuration          *int64             `json:"batchDuration"`
	NumInputRows           *int64             `json:"numInputRows"`
	InputRowsPerSecond     json.RawMessage    `json:"inputRowsPerSecond"`
	ProcessedRowsPerSecond json.RawMessage    `json:"processedRowsPerSecond"`
	DurationMs             map[string]int64   `json:"durationMs"`
	EventTime              map[string]string  `json:"eventTime"`
	StateOperators         []rawStateOperator `json:"stateOperators"`
	Sources                []rawSource        `json:"sources"`
	Sink                   *struct {
		NumOutputRows *int64 `json:"numOutputRows"`
	} `json:"sink"`
}

type rawStateOperator struct {
	OperatorName              *string          `json:"operatorName"`
	NumRowsTotal              *int64           `json:"numRowsTotal"`
	NumRowsUpdated            *int64           `json:"numRowsUpdated"`
	AllUpdatesTimeMs          *int64           `json:"allUpdatesTimeMs"`
	NumRowsRemoved            *int64           `json:"numRowsRemoved"`
	AllRemovalsTimeMs         *int64           `json:"allRemovalsTimeMs"`
	CommitTimeMs              *int64           `json:"commitTimeMs"`
	MemoryUsedBytes           *int64           `json:"memoryUsedBytes"`
	NumRowsDroppedByWatermark *int64           `json:"numRowsDroppedByWatermark"`
	NumShufflePartitions      *int64           `json:"numShufflePartitions"`
	NumStateStoreInstances    *int64           `json:"numStateStoreInstances"`
	CustomMetrics             map[string]int64 `json:"customMetrics"`
}

type rawSource struct {
	Description        *string         `json:"description"`
	StartOffset        json.RawMessage `json:"startOffset"`
	EndOffset          json.RawMessage `json:"endOffset"`
	NumInputRows       *int64          `json:"numInputRows"`
	InputRowsPerSecond json.RawMessage `json:"inputRowsPerSecond"`
}

// timeLayout is ProgressReporter.formatTimestamp's pattern, UTC.
const timeLayout = "2006-01-02T15:04:05.000Z"

// maxRecord bounds one record's JSON (a progress with many operators and
// sources is a few KiB; 4 MiB is far beyond any).
const maxRecord = 4 << 20

// fieldError names the field a record was refused for.
type fieldError struct{ field, reason string }

func (e *fieldError) Error() string { return e.field + ": " + e.reason }

func bad(field, format string, a ...any) error {
	return &fieldError{field, fmt.Sprintf(format, a...)}
}

// decodeRaw decodes one record's JSON (one object, nothing after it).
func decodeRaw(b []byte, r *rawProgress) error {
	if err := json.Unmarshal(b, r); err != nil {
		return jsonReason(err)
	}
	return nil
}

func (r rawProgress) check() (Progress, error) {
	p := Progress{BatchDurationMs: -1, InputRowsPerSecond: -1, ProcessedRowsPerSecond: -1, SinkOutputRows: -1}
	var err error
	if p.ID, err = uuidField("id", r.ID); err != nil {
		return p, err
	}
	if p.RunID, err = uuidField("runId", r.RunID); err != nil {
		return p, err
	}
	if r.Name != nil {
		p.Name = *r.Name
	}
	if r.Timestamp == nil {
		return p, bad("timestamp", "missing")
	}
	if p.TimestampMs, err = parseTime("timestamp", *r.Timestamp); err != nil {
		return p, err
	}
	if r.BatchID == nil {
		return p, bad("batchId", "missing")
	}
	if p.BatchID = *r.BatchID; p.BatchID < 0 {
		return p, bad("batchId", "%d is negative: want a whole number >= 0", p.BatchID)
	}
	for k, v := range r.DurationMs {
		if v < 0 {
			return p, bad("durationMs."+k, "%d ms is negative", v)
		}
	}
	if len(r.DurationMs) == 0 {
		return p, bad("durationMs", "missing: Spark writes it for every trigger (an idle one has latestOffset and triggerExecution), so this record cannot be told an executed batch or an idle trigger")
	}
	_, ran := r.DurationMs["addBatch"]
	switch {
	case r.BatchDuration != nil && *r.BatchDuration < 0:
		return p, bad("batchDuration", "%d ms is negative", *r.BatchDuration)
	case r.BatchDuration != nil:
		p.BatchDurationMs = *r.BatchDuration
	default:
		if v, ok := r.DurationMs["triggerExecution"]; ok {
			p.BatchDurationMs = v
		}
	}
	if p.InputRowsPerSecond, err = rate("inputRowsPerSecond", r.InputRowsPerSecond); err != nil {
		return p, err
	}
	if p.ProcessedRowsPerSecond, err = rate("processedRowsPerSecond", r.ProcessedRowsPerSecond); err != nil {
		return p, err
	}
	if p.EventTime, err = eventTime(r.EventTime); err != nil {
		return p, err
	}
	if r.StateOperators == nil {
		return p, bad("stateOperators", "missing (Spark always writes it, [ ] when the query has none)")
	}
	for i, so := range r.StateOperators {
		s, err := so.check(fmt.Sprintf("stateOperators[%d]", i))
		if err != nil {
			return p, err
		}
		p.StateOperators = append(p.StateOperators, s)
	}
	if r.Sources == nil {
		return p, bad("sources", "missing")
	}
	var sum int64
	rateSum, rates := 0.0, 0
	for i, rs := range r.Sources {
		s, err := rs.check(fmt.Sprintf("sources[%d]", i))
		if err != nil {
			return p, err
		}
		sum = satAdd(sum, s.NumInputRows)
		if s.InputRowsPerSecond >= 0 {
			rateSum, rates = rateSum+s.InputRowsPerSecond, rates+1
		}
		p.Sources = append(p.Sources, s)
	}
	// The event log's bean dump has no top-level rates either: the sum
	// over the sources, as the method computes it.
	if len(r.InputRowsPerSecond) == 0 && rates == len(r.Sources) && rates > 0 {
		p.InputRowsPerSecond = rateSum
	}
	// The event log's bean dump has no numInputRows: it is a method, the
	// sum over the sources (A.2c).
	p.NumInputRows = sum
	if r.NumInputRows != nil {
		if *r.NumInputRows < 0 {
			return p, bad("numInputRows", "%d is negative", *r.NumInputRows)
		}
		if *r.NumInputRows != sum && len(r.Sources) > 0 {
			return p, bad("numInputRows", "%d is not the sum of sources[].numInputRows (%d)", *r.NumInputRows, sum)
		}
		p.NumInputRows = *r.NumInputRows
	}
	if !ran {
		// Spark's idle trigger (no batch run, no addBatch phase) has no
		// rows in and resets numRowsUpdated and numRowsDroppedByWatermark
		// to 0 (A.1); a record with any of them is not idle, and without
		// addBatch it is not a whole executed batch either.
		if p.NumInputRows > 0 {
			return p, bad("durationMs.addBatch", "missing while numInputRows is %d: an idle trigger has no rows in, and an executed batch has an addBatch phase", p.NumInputRows)
		}
		for i, s := range p.StateOperators {
			if s.NumRowsUpdated > 0 || s.NumRowsDroppedByWatermark > 0 {
				return p, bad("durationMs.addBatch", "missing while stateOperators[%d] updated %d and dropped %d rows: an idle trigger has 0 of both", i, s.NumRowsUpdated, s.NumRowsDroppedByWatermark)
			}
		}
		p.Idle = true
	}
	if r.Sink != nil && r.Sink.NumOutputRows != nil {
		if *r.Sink.NumOutputRows < -1 {
			return p, bad("sink.numOutputRows", "%d: want -1 (unknown) or a count", *r.Sink.NumOutputRows)
		}
		p.SinkOutputRows = *r.Sink.NumOutputRows
	}
	return p, nil
}

func (so rawStateOperator) check(at string) (StateOperator, error) {
	var s StateOperator
	if so.OperatorName == nil {
		return s, bad(at+".operatorName", "missing")
	}
	s.OperatorName = *so.OperatorName
	for _, f := range []struct {
		name string
		v    *int64
		dst  *int64
		req  bool
	}{
		{"numRowsTotal", so.NumRowsTotal, &s.NumRowsTotal, true},
		{"numRowsUpdated", so.NumRowsUpdated, &s.NumRowsUpdated, true},
		{"allUpdatesTimeMs", so.AllUpdatesTimeMs, &s.AllUpdatesTimeMs, false},
		{"numRowsRemoved", so.NumRowsRemoved, &s.NumRowsRemoved, false},
		{"allRemovalsTimeMs", so.AllRemovalsTimeMs, &s.AllRemovalsTimeMs, false},
		{"commitTimeMs", so.CommitTimeMs, &s.CommitTimeMs, false},
		{"memoryUsedBytes", so.MemoryUsedBytes, &s.MemoryUsedBytes, false},
		{"numRowsDroppedByWatermark", so.NumRowsDroppedByWatermark, &s.NumRowsDroppedByWatermark, false},
		{"numShufflePartitions", so.NumShufflePartitions, &s.NumShufflePartitions, false},
		{"numStateStoreInstances", so.NumStateStoreInstances, &s.NumStateStoreInstances, false},
	} {
		switch {
		case f.v == nil && f.req:
			return s, bad(at+"."+f.name, "missing")
		case f.v == nil:
		case *f.v < 0:
			return s, bad(at+"."+f.name, "%d is negative: want a whole number >= 0", *f.v)
		default:
			*f.dst = *f.v
		}
	}
	if v, ok := so.CustomMetrics["numDroppedDuplicateRows"]; ok && v < 0 {
		return s, bad(at+".customMetrics.numDroppedDuplicateRows", "%d is negative", v)
	}
	s.DroppedDuplicateRows = -1
	if v, ok := so.CustomMetrics["numDroppedDuplicateRows"]; ok {
		s.DroppedDuplicateRows = v
	}
	s.StoreProvider = providerOf(so.CustomMetrics)
	return s, nil
}

func (rs rawSource) check(at string) (Source, error) {
	var s Source
	if rs.NumInputRows == nil {
		return s, bad(at+".numInputRows", "missing")
	}
	if s.NumInputRows = *rs.NumInputRows; s.NumInputRows < 0 {
		return s, bad(at+".numInputRows", "%d is negative", s.NumInputRows)
	}
	var err error
	if s.InputRowsPerSecond, err = rate(at+".inputRowsPerSecond", rs.InputRowsPerSecond); err != nil {
		return s, err
	}
	for _, o := range []struct {
		name string
		raw  json.RawMessage
	}{{"startOffset", rs.StartOffset}, {"endOffset", rs.EndOffset}} {
		if !validOffset(o.raw) {
			return s, bad(at+"."+o.name, "want an offset: JSON, a string holding JSON, or null")
		}
	}
	return s, nil
}

// validOffset: an offset is a JSON value (jsonValue), a string (the
// event log's bean dump, or an offset that is not JSON), null or absent.
func validOffset(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || json.Valid(raw)
}

// rate reads a rate: a number (raw double or one decimal, A.1), absent
// (Spark drops NaN and infinities) or Jackson's "NaN"/"Infinity" strings:
// -1 for "not a number".
func rate(field string, raw json.RawMessage) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return -1, nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil && (s == "NaN" || s == "Infinity" || s == "-Infinity") {
			return -1, nil
		}
		return 0, bad(field, "%s is not a number", quote(raw))
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, bad(field, "%s is not a finite number", quote(raw))
	}
	if v < 0 {
		return 0, bad(field, "%g rows/s is negative", v)
	}
	return v, nil
}

func eventTime(m map[string]string) (EventTime, error) {
	var e EventTime
	for k, v := range m {
		ms, err := parseTime("eventTime."+k, v)
		if err != nil {
			return e, err
		}
		switch k {
		case "min":
			e.MinMs, e.HasMin = ms, true
		case "max":
			e.MaxMs, e.HasMax = ms, true
		case "avg":
			e.AvgMs, e.HasAvg = ms, true
		case "watermark":
			e.WatermarkMs, e.HasWatermark = ms, true
		}
	}
	if e.HasMin && e.HasMax && e.MinMs > e.MaxMs {
		return e, bad("eventTime", "min %s is after max %s", m["min"], m["max"])
	}
	return e, nil
}

// minYear and maxYear bound the timestamps accepted: Spark's timestamps
// span years 1 to 9999 (its DateTimeUtils; docs/exit-codes.md: a watermark
// beyond 9999 is corrupt); anything outside is corruption. The bound is on
// the UTC year, so an offset cannot carry a time past it.
const minYear, maxYear = 1, 9999

func parseTime(field, s string) (int64, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		// Spark always writes millis and Z; accept RFC 3339 from tools
		// that re-serialised the record.
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return 0, bad(field, "%q is not a time like 2026-12-01T08:45:12.123Z", truncate(s, 40))
		}
	}
	if y := t.UTC().Year(); y < minYear || y > maxYear {
		return 0, bad(field, "%q is year %d in UTC, outside Spark's timestamps (years 1 to 9999): corrupt", truncate(s, 40), y)
	}
	return t.UnixMilli(), nil
}

// uuidField checks a query or run id: a UUID string.
func uuidField(field string, s *string) (string, error) {
	if s == nil {
		return "", bad(field, "missing")
	}
	v := *s
	if len(v) != 36 || v[8] != '-' || v[13] != '-' || v[18] != '-' || v[23] != '-' ||
		strings.Trim(strings.ReplaceAll(strings.ToLower(v), "-", ""), "0123456789abcdef") != "" {
		return "", bad(field, "%q is not a UUID like 0f1e2d3c-...", truncate(v, 40))
	}
	return strings.ToLower(v), nil
}

// jsonReason makes a decoding error one short reason naming the field.
func jsonReason(err error) error {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		f := e.Field
		if f == "" {
			f = "record"
		}
		return bad(f, "want %s, got a JSON %s", e.Type, e.Value)
	case *json.SyntaxError:
		return bad("record", "not JSON: %v (byte %d)", e, e.Offset)
	}
	return bad("record", "not JSON: %v", err)
}

// quote is the start of b as valid UTF-8, at most QuoteLen bytes.
func quote(b []byte) string { return truncate(string(b), QuoteLen) }

func truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func satAdd(a, b int64) int64 {
	if s := a + b; (s > a) == (b > 0) {
		return s
	}
	return math.MaxInt64
}
