// Package analyze is steps 2 to 4 of seed 000's checklist run over a trace
// of real events: measure the duplicate rate and the gap between the first
// and the last copy of each id, choose the watermark delay from that gap
// (a percentile plus a margin), and size the state at that delay with
// sizing.Compute.
//
// # Input
//
// JSON Lines, one event per line, in arrival order; blank lines and lines
// starting with # are skipped. Each event has the key column(s), an event
// time (a JSON number since the epoch, in seconds by default or in
// Options.TimeUnit, or an RFC 3339 string, as row.ParseEventTime reads it)
// and optionally an arrival (processing) time in the same forms. Without an
// arrival column the arrival order is the line order, and arrival
// distances are counted in events. A line may hold at most MaxLineBytes.
//
// # Figures
//
// The gap of a key with copies is the distance between its earliest and its
// latest copy: in event time, which is what dropDuplicatesWithinWatermark
// guarantees (copies are deduplicated while that distance is smaller than
// the delay), and in arrival (the arrival column, or the events between
// them). Quantiles are nearest-rank. The recommended delay is the Percentile
// of the event-time gap x (1 + Margin), rounded up by RoundDelay (and at
// least MinDelay, at most sizing.MaxDelay: a gap x (1 + Margin) beyond it
// saturates there, and a gap of MaxDelay or more gets no delay at all, so
// the delay is never below the gap; all of it is computed in float
// microseconds, so no figure wraps).
//
// The state at that delay is sizing.Compute at the sizing rate (the same
// rate for both APIs: with the event time in the keys, each copy stamped
// with a new time is one more key, which adds at most the duplicate rate).
// State follows the peak, not the average, so the sizing rate is a
// percentile (RatePercentile, p99) of the distinct keys per tumbling window
// of event time (RateWindow, a minute; windows without events left out),
// never below the mean, or Options.Rate when given. The mean is distinct
// keys over the time the trace covers: the span of the arrival column if
// there is one, else the distance between the median event times of the
// first and the last full block scaled to all events (blind to a few
// stragglers at either end), else the earliest to the latest event time; a
// burst followed by hours of sparse retries has a mean far below its peak.
// Lateness is how far an event time is behind the newest event time before
// it in the file: the watermark drops events later than the delay.
//
// # Bounded memory
//
// Per key the analyzer keeps a 24-byte record (the key's 64-bit hash, its
// first copy's event time and arrival) in a FIFO ring, indexed by an
// open-addressing table of 8-byte slots kept 37.5% to 75% full: 35 to 45
// bytes per key (measured: 42.6 B/key at 1 million keys, 37.8 at 10
// million). A key with copies also has a 40-byte record of its earliest and
// latest copy. The ring holds at most Options.MaxKeys keys: beyond it the
// key seen first is evicted (its figures are final from then on) and
// remembered in Bloom filters of 2 x 2 bytes per MaxKeys, so that its later
// copies are counted as "beyond the window" rather than as new keys, with
// the expected number of false positives reported. Gaps go into
// log-bucketed histograms of fixed size, and so do the per-window key
// counts, from a ring of one counter per window within RateTolerance of the
// newest (11 KB at the default minute). Memory is therefore bounded by
// MaxKeys whatever the length of the input: about 380 MB for 10 million
// distinct keys at a 0.4% duplicate rate; when every key has copies, up to
// about 125 bytes per key (measured: 87), 2.5 GB at the default 20 million.
//
// Keys are compared by a 64-bit hash of their encoded bytes (FNV-1a, then
// splitmix64's finaliser). Two distinct keys collide with probability
// 2^-64, so among n keys in the window the chance that any two collide is
// about n^2 / 2^65: 3e-8 for 1 million keys, 3e-6 for 10 million, 1e-5 for
// 20 million. A collision merges two keys: one extra copy is counted.
//
// # Impossible timestamps
//
// An event time before the epoch (negative) is impossible. An event time in
// the future is impossible too: with an arrival column, more than
// FutureTolerance (default 1 hour) ahead of the event's own arrival time;
// without one, more than FutureTolerance (default 24 hours) ahead of the
// median event time of its block of BlockEvents consecutive events. The
// median of a block stands for "now" in a file in arrival order: it ignores
// the few wild values it must detect, and a day of slack leaves ordinary
// lateness, disorder and time-zone slips alone. Such events are counted and
// left out of every other figure, as seed 000 advises filtering them before
// withWatermark: one of them would drag the watermark forward.
package analyze

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/sizing"
)

// Defaults of Options.
const (
	DefaultMaxKeys    = 20_000_000
	DefaultPercentile = 99.99
	DefaultMargin     = 0.25
	// DefaultFutureToleranceArrival is the future tolerance with an
	// arrival column: an event stamped more than an hour after it arrived.
	DefaultFutureToleranceArrival = time.Hour
	// DefaultFutureToleranceMedian is the tolerance without one, against
	// the median event time of the event's block.
	DefaultFutureToleranceMedian = 24 * time.Hour
	// BlockEvents is the size of a block for the median rule.
	BlockEvents = 1000
	// maxExamples is how many skipped bad lines are quoted.
	maxExamples = 10
	// MaxLineBytes caps one input line: 16 MiB, 16 times Kafka's default
	// largest message (message.max.bytes, about 1 MB). A longer line is
	// refused even with SkipBad: it means the input is not JSON Lines
	// (a file without newlines, /dev/zero), and holding it would make
	// memory depend on the input.
	MaxLineBytes = 16 << 20
)

// Options configure an analysis.
type Options struct {
	File    string   // name used in error messages and the report
	Keys    []string // key columns (at least one)
	Time    string   // event-time column
	Arrival string   // arrival-time column; "" for line order
	// MaxKeys caps the keys kept (default DefaultMaxKeys).
	MaxKeys int
	// SkipBad counts and reports bad lines instead of failing on the first.
	SkipBad bool
	// FutureTolerance: how far ahead an event time may be (0: default).
	FutureTolerance time.Duration
	Percentile      float64 // of the event-time gap (default 99.99)
	// Margin: delay = percentile x (1 + Margin). 0 is no margin; the CLI's
	// default is DefaultMargin.
	Margin      float64
	BytesPerKey float64 // for the state estimate (default 100)
	Partitions  int     // for the state estimate (default 200)
	// TimeUnit of epoch numbers in the event-time and arrival columns.
	TimeUnit TimeUnit
	// RateWindow is the window of event time distinct keys are counted in
	// (default DefaultRateWindow); RatePercentile the percentile of the
	// per-window rates the state is sized from (default 99).
	RateWindow     time.Duration
	RatePercentile float64
	// Rate, if set, is the key rate the state is sized from instead.
	Rate float64
	// Progress, if set, is called by Run every 65,536 lines with the lines
	// and bytes read so far.
	Progress func(lines, bytes int64)
	// Replay, when set, replays the state of both APIs at Delay with one
	// micro-batch per Trigger (default DefaultTrigger) of the clock (see
	// replay.go); Report.State holds the curves. OnBatch, if set, sees
	// every batch of the replay.
	Replay bool
	Delay  time.Duration
	// DelayBasis says where Delay comes from, for the report.
	DelayBasis string
	Trigger    time.Duration
	OnBatch    func(ReplayBatch)
}

// LineError is a bad input line.
type LineError struct {
	File  string
	Line  int64
	Field string // the offending column; "" when the line is not a JSON object
	Err   error
}

func (e *LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %s: %v", e.File, e.Line, e.Field, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// pending is a parsed event waiting for its block to be complete.
type pending struct {
	hash    uint64
	et, arr int64
}

// dup is what is kept of a key once it has a second copy: 40 bytes.
type dup struct {
	etMin, etMax   int64
	arrMin, arrMax int64
	copies         int64
}

// column is one column checked on its own when a line is bad.
type column struct {
	name string
	dec  *row.Decoder
}

// Analyzer consumes events one line at a time; Finish returns the report.
type Analyzer struct {
	opt     Options
	dec     *row.Decoder
	arrDec  *row.Decoder
	columns []column
	tol     int64 // future tolerance, µs
	r       row.Row

	lines, events, bad int64
	badExamples        []string

	block   []pending
	scratch []int64
	flushed int64 // events whose block is complete
	blocks  int   // full blocks
	// Medians of full blocks for the key rate: the first and the last,
	// and how often one fell below the one before.
	firstMed, lastMed int64
	firstMid, lastMid float64
	medDrops          int

	beforeEpoch, future int64
	analysed            int64
	minET, maxET        int64
	minArr, maxArr      int64
	runMax              int64 // newest event time so far, for lateness

	win *window
	// dups are the records of keys with copies, indexed by their ring
	// record's et once promoted; free lists those of evicted keys.
	dups            []dup
	free            []int32
	distinct, extra int64
	beyond, evicted int64
	expFalse, fp    float64
	lookups         int64
	copies          [4]int64
	maxCopies       int64
	gapET, gapArr   Hist
	late            Hist
	finished        bool
	keysWithCopies  int64
	rate            *rateWindows
	// unitDec decodes every column as a key when TimeUnit is not seconds:
	// the key items, then the time's, then the arrival's.
	unitDec   *row.Decoder
	timeInKey []bool // which key columns are the event-time column
	keyBuf    []byte
	itemBuf   [][]byte
	replay    *replay
}

// New checks the options and fills in their defaults (a zero field is its
// default). A value outside its domain is an error naming the flag and its
// range in human units.
func New(opt Options) (*Analyzer, error) {
	if err := opt.fill(); err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	a := &Analyzer{
		opt:   opt,
		tol:   opt.FutureTolerance.Microseconds(),
		block: make([]pending, 0, BlockEvents),
		win:   newWindow(opt.MaxKeys),
		rate:  newRateWindows(opt.RateWindow),
	}
	if opt.Replay {
		a.replay = newReplay(opt.Delay, opt.Trigger, opt.MaxKeys, opt.OnBatch)
	}
	et := func(c string) string { return c }
	if opt.TimeUnit == Seconds {
		a.dec = row.NewDecoder(opt.Keys, opt.Time)
		if opt.Arrival != "" {
			a.arrDec = row.NewDecoder([]string{opt.Arrival}, opt.Arrival)
		}
	} else {
		cols := append(slices.Clone(opt.Keys), opt.Time)
		if opt.Arrival != "" {
			cols = append(cols, opt.Arrival)
		}
		a.unitDec = row.NewDecoder(cols, "")
		for _, k := range opt.Keys {
			a.timeInKey = append(a.timeInKey, k == opt.Time)
		}
		// Per-column decoders only name the culprit of a structural error;
		// values are read by unitTime.
		et = func(string) string { return "" }
	}
	for _, c := range append(slices.Clone(opt.Keys), opt.Time, opt.Arrival) {
		if c == "" || slices.ContainsFunc(a.columns, func(x column) bool { return x.name == c }) {
			continue
		}
		e := ""
		if c == opt.Time || c == opt.Arrival {
			e = et(c)
		}
		a.columns = append(a.columns, column{name: c, dec: row.NewDecoder([]string{c}, e)})
	}
	return a, nil
}

// fill checks every option against its domain and sets the defaults.
func (o *Options) fill() error {
	if len(o.Keys) == 0 {
		return errors.New("--key names no column")
	}
	for i, k := range o.Keys {
		if k == "" {
			return errors.New("--key has an empty column name")
		}
		if slices.Contains(o.Keys[:i], k) {
			return fmt.Errorf("--key names %q twice", k)
		}
	}
	if o.Time == "" {
		return errors.New("--time names no column")
	}
	if o.File == "" {
		o.File = "-"
	}
	if o.MaxKeys == 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.MaxKeys < 1 || o.MaxKeys > MaxKeysLimit {
		return sizing.RangeError("max-keys", strconv.Itoa(o.MaxKeys), MaxKeysRange)
	}
	if o.Percentile == 0 {
		o.Percentile = DefaultPercentile
	}
	if !(o.Percentile > 0 && o.Percentile <= 100) {
		return sizing.RangeError("percentile", sizing.Num(o.Percentile), PercentileRange)
	}
	if !(o.Margin >= 0 && o.Margin <= MaxMargin) {
		return sizing.RangeError("margin", sizing.Num(o.Margin), MarginRange)
	}
	if o.FutureTolerance == 0 {
		o.FutureTolerance = DefaultFutureToleranceMedian
		if o.Arrival != "" {
			o.FutureTolerance = DefaultFutureToleranceArrival
		}
	}
	if o.FutureTolerance < MinFutureTolerance || o.FutureTolerance > MaxFutureTolerance {
		return sizing.RangeError("future-tolerance", o.FutureTolerance.String(), FutureToleranceRange)
	}
	if o.BytesPerKey == 0 {
		o.BytesPerKey = 100
	}
	if err := sizing.CheckBytesPerKey("bytes-per-key", o.BytesPerKey); err != nil {
		return err
	}
	if o.Partitions == 0 {
		o.Partitions = 200
	}
	if err := sizing.CheckPartitions("partitions", o.Partitions); err != nil {
		return err
	}
	if o.TimeUnit < Seconds || o.TimeUnit > Microseconds {
		return fmt.Errorf("--time-unit %d: want s, ms or us", o.TimeUnit)
	}
	if o.RateWindow == 0 {
		o.RateWindow = DefaultRateWindow
	}
	if o.RateWindow < MinRateWindow || o.RateWindow > MaxRateWindow {
		return sizing.RangeError("rate-window", o.RateWindow.String(), RateWindowRange)
	}
	if o.RatePercentile == 0 {
		o.RatePercentile = DefaultRatePercentile
	}
	if !(o.RatePercentile > 0 && o.RatePercentile <= 100) {
		return sizing.RangeError("rate-percentile", sizing.Num(o.RatePercentile), PercentileRange)
	}
	if o.Rate != 0 {
		if err := sizing.CheckRate("rate", o.Rate); err != nil {
			return err
		}
	}
	if o.Replay {
		if o.Trigger == 0 {
			o.Trigger = DefaultTrigger
		}
		if o.Trigger < MinTrigger || o.Trigger > MaxTrigger || o.Trigger%time.Millisecond != 0 {
			return sizing.RangeError("trigger", o.Trigger.String(), TriggerRange+", whole milliseconds")
		}
		if o.Delay < 0 || o.Delay > sizing.MaxDelay || o.Delay%time.Millisecond != 0 {
			return sizing.RangeError("delay", o.Delay.String(), sizing.DelayRange+", whole milliseconds")
		}
	}
	return nil
}

// Line takes one line of input (without or with its newline). Blank lines
// and # comments are skipped. A bad line is a *LineError, or with SkipBad
// counted and quoted in the report.
func (a *Analyzer) Line(data []byte) error {
	if a.finished {
		return errors.New("analyze: Line after Finish")
	}
	a.lines++
	if len(data) > MaxLineBytes {
		return a.lineTooLong()
	}
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] == '#' {
		return nil
	}
	h, et, arr, err := a.parse(t)
	if err != nil {
		if !a.opt.SkipBad {
			return err
		}
		a.bad++
		if len(a.badExamples) < maxExamples {
			a.badExamples = append(a.badExamples, err.Error())
		}
		return nil
	}
	a.events++
	if a.opt.Arrival == "" {
		arr = a.events
	}
	a.block = append(a.block, pending{hash: h, et: et, arr: arr})
	if len(a.block) == BlockEvents {
		a.flush()
	}
	return nil
}

func (a *Analyzer) parse(t []byte) (h uint64, et, arr int64, err error) {
	if a.unitDec != nil {
		return a.parseUnit(t)
	}
	if err := a.dec.Decode(t, &a.r); err != nil {
		return 0, 0, 0, a.diagnose(t, err)
	}
	if a.r.EventTimeNull {
		return 0, 0, 0, a.lineError(a.opt.Time, errors.New("event time is null"))
	}
	h, et = hashKey(a.r.Key), a.r.EventTime
	if a.arrDec != nil {
		if err := a.arrDec.Decode(t, &a.r); err != nil {
			return 0, 0, 0, a.diagnose(t, err)
		}
		if a.r.EventTimeNull {
			return 0, 0, 0, a.lineError(a.opt.Arrival, errors.New("arrival time is null"))
		}
		arr = a.r.EventTime
	}
	return h, et, arr, nil
}

// parseUnit is parse for epoch numbers in milliseconds or microseconds:
// every column is decoded as a key item, the time items are read in the
// unit, and the key is rebuilt as row encodes it with the event-time
// column in it (by its microseconds, so 10000 and "1970-01-01T00:00:10Z"
// are one key, as in seconds).
func (a *Analyzer) parseUnit(t []byte) (h uint64, et, arr int64, err error) {
	if err := a.unitDec.Decode(t, &a.r); err != nil {
		return 0, 0, 0, a.diagnose(t, err)
	}
	rest := a.r.Key
	items := a.keyBuf[:0]
	keyItems := a.itemBuf[:0]
	for range a.opt.Keys {
		_, _, item, r, err := keyItem(rest)
		if err != nil {
			return 0, 0, 0, a.lineError("", err)
		}
		keyItems, rest = append(keyItems, item), r
	}
	read := func(col string, what string) (int64, error) {
		tag, payload, _, r, err := keyItem(rest)
		if err != nil {
			return 0, a.lineError(col, err)
		}
		rest = r
		us, null, err := unitTime(tag, payload, a.opt.TimeUnit)
		if err != nil {
			return 0, a.lineError(col, err)
		}
		if null {
			return 0, a.lineError(col, errors.New(what+" is null"))
		}
		return us, nil
	}
	if et, err = read(a.opt.Time, "event time"); err != nil {
		return 0, 0, 0, err
	}
	if a.opt.Arrival != "" {
		if arr, err = read(a.opt.Arrival, "arrival time"); err != nil {
			return 0, 0, 0, err
		}
	}
	for i, item := range keyItems {
		if a.timeInKey[i] {
			items = row.AppendKeyEventTime(items, et, false)
		} else {
			items = append(items, item...)
		}
	}
	a.keyBuf, a.itemBuf = items, keyItems[:0]
	return hashKey(items), et, arr, nil
}

func (a *Analyzer) lineTooLong() *LineError {
	return &LineError{File: a.opt.File, Line: a.lines, Err: fmt.Errorf("line longer than %d MiB, the limit of one event (is this JSON Lines? a file without newlines, or /dev/zero, reads as one endless line)", MaxLineBytes>>20)}
}

func (a *Analyzer) lineError(field string, err error) *LineError {
	return &LineError{File: a.opt.File, Line: a.lines, Field: field, Err: err}
}

// diagnose names the column a decode error is about: a line that is not a
// JSON object has none; otherwise each column is decoded on its own and
// the first that fails is the culprit.
func (a *Analyzer) diagnose(t []byte, err error) error {
	if t[0] != '{' || !json.Valid(t) {
		return a.lineError("", err)
	}
	var r row.Row
	for _, c := range a.columns {
		e := c.dec.Decode(t, &r)
		if e == nil {
			continue
		}
		msg := e.Error()
		q := strconv.Quote(c.name)
		switch {
		case strings.HasPrefix(msg, "missing "):
			msg = "missing" + presentFields(t)
		case strings.HasPrefix(msg, "column "+q+" "):
			msg = strings.TrimPrefix(msg, "column "+q+" ")
		default:
			msg = strings.TrimPrefix(msg, "event-time column "+q+": ")
		}
		if a.opt.TimeUnit == Seconds && strings.Contains(msg, "seconds is out of range") {
			msg += "; epoch milliseconds or microseconds? give --time-unit ms or us"
		}
		return a.lineError(c.name, errors.New(msg))
	}
	return a.lineError("", err)
}

// presentFields lists the fields a row has, for a column it lacks: the
// flag (--key, --time) likely names one of them in another spelling.
func presentFields(t []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil || len(m) == 0 {
		return "; the row has no field"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	if len(names) > 20 {
		names = append(names[:20], fmt.Sprintf("and %d more", len(names)-20))
	}
	return "; the row's fields: " + strings.Join(names, ", ")
}

// flush classifies a complete block's events against its median and feeds
// the possible ones to the key tracker, in order.
func (a *Analyzer) flush() {
	b := a.block
	if len(b) == 0 {
		return
	}
	a.scratch = a.scratch[:0]
	for _, p := range b {
		a.scratch = append(a.scratch, p.et)
	}
	slices.Sort(a.scratch)
	med := a.scratch[(len(b)-1)/2]
	// Only full blocks count for the key rate: the last, partial block
	// may hold a handful of stragglers.
	if len(b) == BlockEvents {
		mid := float64(a.flushed) + float64(len(b))/2
		if a.blocks == 0 {
			a.firstMed, a.firstMid = med, mid
		} else if med < a.lastMed {
			a.medDrops++
		}
		a.lastMed, a.lastMid = med, mid
		a.blocks++
	}
	a.flushed += int64(len(b))
	for _, p := range b {
		switch {
		case p.et < 0:
			a.beforeEpoch++
		case a.opt.Arrival != "" && p.et > p.arr+a.tol, a.opt.Arrival == "" && p.et > med+a.tol:
			a.future++
		default:
			a.track(p)
		}
	}
	a.block = b[:0]
}

// track counts one event with a possible timestamp.
func (a *Analyzer) track(p pending) {
	if a.analysed == 0 {
		a.minET, a.maxET, a.minArr, a.maxArr, a.runMax = p.et, p.et, p.arr, p.arr, p.et
	}
	a.analysed++
	if a.replay != nil {
		clock := p.et
		if a.opt.Arrival != "" {
			clock = p.arr
		}
		a.replay.add(p.hash, p.et, clock)
	}
	a.minET, a.maxET = min(a.minET, p.et), max(a.maxET, p.et)
	a.minArr, a.maxArr = min(a.minArr, p.arr), max(a.maxArr, p.arr)
	if p.et >= a.runMax {
		a.runMax = p.et
		a.late.Add(0)
	} else {
		a.late.Add(a.runMax - p.et)
	}

	w := a.rate.of(p.et)
	i, slot, promoted, ok := a.win.find(p.hash)
	if ok {
		r := a.win.at(i)
		// A copy is new to its window unless the key's first or last copy
		// so far is in it (see rateWindows).
		first, last := r.et, r.et
		if promoted {
			first, last = a.dups[r.et].etMin, a.dups[r.et].etMax
		}
		if wf, wl := a.rate.of(first), a.rate.of(last); w != wf && w != wl {
			a.rate.add(w)
		}
		if !promoted {
			k := len(a.dups)
			if n := len(a.free); n > 0 {
				k, a.free = int(a.free[n-1]), a.free[:n-1]
			} else {
				a.dups = append(a.dups, dup{})
			}
			a.dups[k] = dup{etMin: r.et, etMax: r.et, arrMin: r.arr, arrMax: r.arr, copies: 1}
			r.et = int64(k)
			a.win.promote(slot)
		}
		d := &a.dups[r.et]
		d.etMin, d.etMax = min(d.etMin, p.et), max(d.etMax, p.et)
		d.arrMin, d.arrMax = min(d.arrMin, p.arr), max(d.arrMax, p.arr)
		d.copies++
		a.extra++
		return
	}
	if a.win.cur != nil {
		if a.lookups%1024 == 0 {
			a.fp = a.win.falsePositive()
		}
		a.lookups++
		a.expFalse += a.fp
		if a.win.evictedBefore(p.hash) {
			a.beyond++
			a.extra++
			a.rate.add(w) // its earlier copies are long gone: new to this window
			return
		}
	}
	a.distinct++
	a.rate.add(w)
	if old, promoted, evicted := a.win.insert(p.hash, slot, p.et, p.arr); evicted {
		a.evicted++
		a.finalize(&old, promoted)
	}
}

// finalize records a key's figures once no more copies can be matched to it.
func (a *Analyzer) finalize(r *rec, promoted bool) {
	if !promoted {
		a.copies[0]++
		a.maxCopies = max(a.maxCopies, 1)
		return
	}
	d := a.dups[r.et]
	a.free = append(a.free, int32(r.et))
	a.copies[min(d.copies, 4)-1]++
	a.maxCopies = max(a.maxCopies, d.copies)
	a.keysWithCopies++
	a.gapET.Add(d.etMax - d.etMin)
	a.gapArr.Add(d.arrMax - d.arrMin)
}

// Finish ends the input and returns the report. The analyzer cannot be
// used afterwards.
func (a *Analyzer) Finish() *Report {
	if !a.finished {
		a.flush()
		a.win.each(a.finalize)
		a.rate.finish()
		if a.replay != nil {
			a.replay.finish()
		}
		a.win, a.dups, a.free = nil, nil, nil
		a.finished = true
	}
	return a.report()
}

// Run analyses a whole stream of JSON Lines: New, Read, Finish.
func Run(r io.Reader, opt Options) (*Report, error) {
	a, err := New(opt)
	if err != nil {
		return nil, err
	}
	if err := a.Read(r); err != nil {
		return nil, err
	}
	return a.Finish(), nil
}

// Read feeds every line of r to Line, calling Options.Progress on the way.
// It fails with the first *LineError (unless SkipBad) or a read error.
func (a *Analyzer) Read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte // a line longer than the buffer
	var read int64
	progress := a.opt.Progress
	for {
		line, err := br.ReadSlice('\n')
		read += int64(len(line))
		if err == bufio.ErrBufferFull {
			if len(long)+len(line) > MaxLineBytes {
				a.lines++
				return a.lineTooLong()
			}
			long = append(long, line...)
			continue
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if len(line) > 0 {
			if lerr := a.Line(line); lerr != nil {
				return lerr
			}
			if progress != nil && a.lines%(1<<16) == 0 {
				progress(a.lines, read)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a.opt.File, err)
		}
	}
	if progress != nil {
		progress(a.lines, read)
	}
	return nil
}
