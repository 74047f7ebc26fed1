package history

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/internal/suggest"
)

// MaxBytes bounds what Read decodes: a history (decompressed, when it is
// gzip-compressed) larger than this is refused. A run of the simulator's
// default cap of 20 M copies writes about 3.5 GB.
const MaxBytes int64 = 4 << 30

// The domain of instants: Spark's timestamp range, 0001-01-01T00:00:00Z to
// 9999-12-31T23:59:59.999999Z.
const (
	MinTimeUs int64 = -62_135_596_800_000_000
	MaxTimeUs int64 = 253_402_300_799_999_999
	MinTimeMs       = MinTimeUs / 1000
	MaxTimeMs       = MaxTimeUs / 1000
)

// Known values of the enumerated fields.
var (
	APIs      = []string{"dropDuplicates", "dropDuplicatesWithinWatermark", "batchDropDuplicates"}
	SinkKinds = sinkKinds()
	// OutcomeNames are the outcomes' names (Outcome.String), in order.
	OutcomeNames = []string{Emitted.String(), Duplicate.String(), Late.String(), Filtered.String()}
)

// sinkKinds are package sink's kinds, those that keep a table first (the
// order messages have always listed them in).
func sinkKinds() []string {
	var tabled, other []string
	for _, d := range sink.Kinds() {
		if d.HasTable {
			tabled = append(tabled, string(d.Kind))
		} else {
			other = append(other, string(d.Kind))
		}
	}
	return append(tabled, other...)
}

// Read loads a history saved by Write, plain or gzip-compressed (told by
// its magic bytes), of at most MaxBytes.
func Read(r io.Reader) (*History, error) { return ReadLimit(r, MaxBytes) }

// ReadLimit is Read with another bound on the (decompressed) size.
//
// Decoding is strict: one JSON object and nothing after it, no unknown
// field, no field twice in one object, valid UTF-8, numbers that fit their
// field; then every value is checked against its domain (Validate).
// Contradictions between records (an input that is not a copy, a table
// row no write kept) are the checker's: malformed-history.
func ReadLimit(r io.Reader, maxBytes int64) (*History, error) {
	br := bufio.NewReader(r)
	src := io.Reader(br)
	what := "history"
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("history: gzip: %w", err)
		}
		defer zr.Close()
		src, what = zr, "history (gzip)"
	}
	lr := &limitedReader{r: src, n: maxBytes}
	var h History
	err := jsonv2.UnmarshalRead(lr, &h, jsonv2.RejectUnknownMembers(true), jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	if lr.over {
		return nil, fmt.Errorf("%s: larger than %s decompressed, the limit", what, bytesText(maxBytes))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s", what, decodeError(err))
	}
	if err := Validate(&h); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &h, nil
}

// limitedReader reads at most n bytes and remembers when there were more.
type limitedReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		var one [1]byte
		if k, _ := l.r.Read(one[:]); k > 0 {
			l.over = true
			return 0, errors.New("history too large")
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// decodeError makes a decoder's error one line naming the byte offset and
// the field (as a JSON pointer).
func decodeError(err error) string {
	var se *jsonv2.SemanticError
	var sy *jsontext.SyntacticError
	switch {
	case errors.As(err, &sy):
		msg := fmt.Sprintf("byte offset %d", sy.ByteOffset)
		if sy.JSONPointer != "" {
			msg += fmt.Sprintf(", field %s", fieldOf(string(sy.JSONPointer)))
		}
		return msg + ": " + sy.Err.Error()
	case errors.As(err, &se):
		msg := fmt.Sprintf("byte offset %d, field %s: ", se.ByteOffset, fieldOf(string(se.JSONPointer)))
		switch {
		case se.GoType != nil && se.JSONKind == '0' && se.JSONValue != nil && intRange(se.GoType, string(se.JSONPointer)) != "":
			return msg + fmt.Sprintf("%s is not a whole number in %s", se.JSONValue, intRange(se.GoType, string(se.JSONPointer)))
		case se.Err != nil && se.GoType != nil && se.JSONValue != nil:
			return msg + fmt.Sprintf("%s does not fit type %s: %v", se.JSONValue, se.GoType, se.Err)
		case se.Err != nil:
			return msg + se.Err.Error()
		case se.GoType != nil:
			return msg + fmt.Sprintf("a JSON %s does not fit type %s", se.JSONKind, se.GoType)
		}
		return msg + strings.TrimPrefix(se.Error(), "json: ")
	}
	return err.Error()
}

// intRange is the range, in numbers, of an integer field of type t at the
// JSON pointer ptr: a copy's counters are never negative, and its times
// are instants as validate checks them ("" for a type that is no integer).
func intRange(t reflect.Type, ptr string) string {
	switch {
	case strings.HasPrefix(ptr, "/copies/") && strings.HasSuffix(ptr, "/eventTimeUs"):
		return timeRangeUs
	case strings.HasPrefix(ptr, "/copies/") && strings.HasSuffix(ptr, "/appendedAtMs"):
		return timeRangeMs
	}
	var lo, hi string
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		max := int64(math.MaxInt64 >> (64 - t.Bits()))
		lo, hi = strconv.FormatInt(-max-1, 10), strconv.FormatInt(max, 10)
		if strings.HasPrefix(ptr, "/copies/") {
			lo = "0"
		}
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		lo, hi = "0", strconv.FormatUint(math.MaxUint64>>(64-t.Bits()), 10)
	default:
		return ""
	}
	return "[" + lo + ", " + hi + "]"
}

// fieldOf turns a JSON pointer (/copies/3/eventTimeUs) into the field path
// the error messages use (copies[3].eventTimeUs).
func fieldOf(ptr string) string {
	if ptr == "" {
		return "(the document)"
	}
	var b strings.Builder
	for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			fmt.Fprintf(&b, "[%s]", p)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strings.NewReplacer("~1", "/", "~0", "~").Replace(p))
	}
	return b.String()
}

// Validate checks every value of h against its domain; the error names the
// first field out of it, with the accepted range.
func Validate(h *History) error {
	v := &validator{}
	v.check(h)
	return v.err
}

type validator struct{ err error }

func (v *validator) fail(field, format string, a ...any) {
	if v.err == nil {
		v.err = fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...))
	}
}

var (
	timeRangeMs = "[0001-01-01, 9999-12-31] in ms since 1970"
	timeRangeUs = "[0001-01-01, 9999-12-31] in µs since 1970"
)

func (v *validator) timeMs(field string, ms int64) {
	if ms < MinTimeMs || ms > MaxTimeMs {
		v.fail(field, "%d is not an instant in %s", ms, timeRangeMs)
	}
}

func (v *validator) watermarkMs(field string, ms int64) {
	if ms < 0 || ms > MaxTimeMs {
		v.fail(field, "%d is outside [0, 9999-12-31] in ms since 1970 (Spark's watermark starts at 0 and never goes below it)", ms)
	}
}

func (v *validator) nonNeg(field string, n int64) {
	if n < 0 {
		v.fail(field, "%d is negative", n)
	}
}

func (v *validator) name(field, s string) {
	switch {
	case s == "":
		v.fail(field, "empty")
	case !utf8.ValidString(s):
		v.fail(field, "not valid UTF-8")
	}
}

func (v *validator) oneOf(field, s string, allowed []string) {
	for _, a := range allowed {
		if s == a {
			return
		}
	}
	v.fail(field, "%s", notOneOf(s, allowed))
}

// notOneOf says that s is none of allowed, with a "did you mean" for the
// nearest (suggest.Best: one that differs only in case first).
func notOneOf(s string, allowed []string) string {
	msg := fmt.Sprintf("%q is not one of %s", s, strings.Join(allowed, ", "))
	if best := suggest.Best(s, allowed); best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return msg
}

func (v *validator) check(h *History) {
	if h.Version != Version {
		v.fail("version", "%d, this build reads %d", h.Version, Version)
		return
	}
	v.oneOf("api", h.API, APIs)
	seen := map[string]bool{}
	for i, k := range h.Keys {
		v.name(fmt.Sprintf("keys[%d]", i), k)
		if seen[k] {
			v.fail(fmt.Sprintf("keys[%d]", i), "%q twice", k)
		}
		seen[k] = true
	}
	if h.DelayMs < -1 || h.DelayMs > MaxTimeMs {
		v.fail("delayMs", "%d is outside -1 (no watermark) or [0ms, 9999 years]", h.DelayMs)
	}
	if h.Partitions < 0 || h.Partitions > 1<<20 {
		v.fail("partitions", "%d is outside [0, %d]", h.Partitions, 1<<20)
	}
	v.oneOf("sinkKind", h.SinkKind, SinkKinds)
	v.timeMs("healAtMs", h.HealAtMs)
	v.timeMs("endMs", h.EndMs)
	if math.IsNaN(h.ArrivalRatePerSec) || math.IsInf(h.ArrivalRatePerSec, 0) || h.ArrivalRatePerSec < 0 {
		v.fail("arrivalRatePerSec", "%v is outside [0, +inf)", h.ArrivalRatePerSec)
	}
	// The checker numbers copies, rows and list positions in 32 bits.
	if len(h.Copies) > math.MaxInt32 {
		v.fail("copies", "%d copies, more than the %d the checker can number", len(h.Copies), math.MaxInt32)
	}
	for i := range h.Copies {
		c := &h.Copies[i]
		f := fmt.Sprintf("copies[%d]", i)
		v.name(f+".event", c.Event)
		v.nonNeg(f+".copy", int64(c.CopyNo))
		v.nonNeg(f+".source", int64(c.Source))
		v.nonNeg(f+".partition", int64(c.Partition))
		v.nonNeg(f+".offset", c.Offset)
		if c.EventTimeUs < MinTimeUs || c.EventTimeUs > MaxTimeUs {
			v.fail(f+".eventTimeUs", "%d is not an instant in %s", c.EventTimeUs, timeRangeUs)
		}
		v.timeMs(f+".appendedAtMs", c.AppendedAtMs)
		if int(c.Fault) >= len(faultNames) {
			v.fail(f+".fault", "%d is not a fault of this build", c.Fault)
		}
		if v.err != nil {
			return
		}
	}
	for i := range h.Batches {
		b := &h.Batches[i]
		f := fmt.Sprintf("batches[%d]", i)
		v.nonNeg(f+".batchId", b.BatchID)
		v.timeMs(f+".atMs", b.AtMs)
		for j, o := range b.Outcomes {
			if !o.Valid() {
				v.fail(fmt.Sprintf("%s.outcomes[%d]", f, j), "%s is not one of %s", o, strings.Join(OutcomeNames, ", "))
			}
		}
		v.watermarkMs(f+".lateWatermarkMs", b.LateWatermarkMs)
		v.watermarkMs(f+".watermarkMs", b.WatermarkMs)
		v.watermarkMs(f+".nextWatermarkMs", b.NextWatermarkMs)
		v.timeMs(f+".maxEventTimeMs", b.MaxEventTimeMs)
		v.nonNeg(f+".numRowsTotal", b.NumRowsTotal)
		v.nonNeg(f+".numRowsUpdated", b.NumRowsUpdated)
		v.nonNeg(f+".numRowsRemoved", b.NumRowsRemoved)
		if v.err != nil {
			return
		}
	}
	for i, c := range h.Crashes {
		f := fmt.Sprintf("crashes[%d]", i)
		v.timeMs(f+".atMs", c.AtMs)
		v.name(f+".point", c.Point)
		if c.BatchID < -1 {
			v.fail(f+".batchId", "%d is below -1 (-1: the driver died outside a batch)", c.BatchID)
		}
	}
	for i, r := range h.Restarts {
		v.timeMs(fmt.Sprintf("restarts[%d].atMs", i), r.AtMs)
	}
	for i, w := range h.Writes {
		f := fmt.Sprintf("sinkWrites[%d]", i)
		v.nonNeg(f+".batchId", w.BatchID)
		v.timeMs(f+".atMs", w.AtMs)
	}
	for k, n := range h.Coverage {
		v.name("coverage key", k)
		v.nonNeg(fmt.Sprintf("coverage[%q]", k), int64(n))
	}
	for i, name := range h.Faults {
		v.name(fmt.Sprintf("faultsEnabled[%d]", i), name)
	}
	if l := h.Live; l != nil {
		v.oneOf("live.cluster", l.Cluster, []string{"kfake", "local", "external", "testcontainers"})
		v.oneOf("live.engine", l.Engine, []string{"process", "inproc"})
		if math.IsNaN(l.TriggerMs) || math.IsInf(l.TriggerMs, 0) || l.TriggerMs < 0 {
			v.fail("live.triggerMs", "%v is outside [0, +inf)", l.TriggerMs)
		}
		for _, x := range []struct {
			f string
			n int
		}{{"engineProcesses", l.EngineProcesses}, {"killedAtCrashPoints", l.KilledAtPoints}, {"killedAtRandom", l.KilledAtRandom},
			{"failedExits", l.FailedExits}, {"brokerRestarts", l.BrokerRestarts}, {"droppedAcks", l.DroppedAcks}, {"inferredWrites", l.InferredWrites}} {
			v.nonNeg("live."+x.f, int64(x.n))
		}
	}
}
