// Package capture turns a slice of a Kafka topic into the inputs of
// dedupsim: JSON Lines events for `dedupsim analyze` (each record's value
// with its partition, offset and timestamp beside it), or an exec steps
// file whose micro-batches are cut as a processing-time trigger or
// maxOffsetsPerTrigger would have cut them, so that production traffic
// replays through a query with `dedupsim exec`.
//
// A capture reads offset ranges fixed when it begins (Source.Plan): it
// never follows the topic. Memory is bounded: the client buffers at most
// two fetches of 4 MiB (as fetched: compressed batches grow by their
// compression ratio once decoded, kgo's own caveat) and a poll takes at
// most 10,000 records; JSON Lines are written as they arrive; a steps
// batch is held until its line is written (at most 256 MiB, exec's
// limit), and with --trigger the partitions ahead of the batch being cut
// are paused, so that only a fetch or so of each waits.
package capture

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
)

// Options configure a capture.
type Options struct {
	Source Source
	// ValueFormat is JSONValues (default) or RawValues.
	ValueFormat string
	// Out is the file written (atomically, see out.go).
	Out string
	// Resume continues an interrupted capture into Out.
	Resume bool
	// Trigger cuts steps batches by record timestamp, as a processing-time
	// trigger of that interval would; MaxOffsets cuts them by offsets, as
	// maxOffsetsPerTrigger would. Both zero: JSON Lines.
	Trigger    time.Duration
	MaxOffsets int64
	// Progress, when set, is told the offsets read and the offsets to read
	// (all the ranges), now and then.
	Progress func(done, total int64)
}

// Steps reports whether the capture writes a steps file.
func (o *Options) Steps() bool { return o.Trigger > 0 || o.MaxOffsets > 0 }

// Bounds of the batching options.
const (
	MinTrigger    = time.Millisecond
	MaxTrigger    = 24 * time.Hour
	MaxMaxOffsets = 1 << 40
	TriggerRange  = "[1ms, 24h]"
)

// Header is the first line of the output: the settings a --resume must
// share with the capture it continues.
func (o *Options) Header() string {
	h := fmt.Sprintf("# dedupsim capture: topic %s, %s, value-format %s", o.Source.Topic, o.Source.isolation(), o.valueFormat())
	switch {
	case o.Trigger > 0:
		h += ", steps by trigger " + o.Trigger.String()
	case o.MaxOffsets > 0:
		h += fmt.Sprintf(", steps by max-offsets %d", o.MaxOffsets)
	}
	return h
}

func (o *Options) valueFormat() string {
	if o.ValueFormat == "" {
		return JSONValues
	}
	return o.ValueFormat
}

// Result is what a capture wrote.
type Result struct {
	// Records and Batches count the whole output (a resumed capture's
	// earlier part included); Resumed says it continued one.
	Records, Batches int64
	Resumed          bool
	// Ranges are the offset ranges this run read.
	Ranges []kafkasource.Range
}

// Run captures: it plans the ranges, reads them into the partial file and
// renames it over Out when complete. On an error or when ctx ends the
// partial file is kept, synced, for a --resume.
func Run(ctx context.Context, opt Options) (res Result, err error) {
	switch {
	case opt.Trigger > 0 && opt.MaxOffsets > 0:
		return res, &InputError{Err: errors.New("capture: --trigger and --max-offsets: give one")}
	case opt.Trigger != 0 && (opt.Trigger < MinTrigger || opt.Trigger > MaxTrigger):
		return res, inputErrorf("capture: --trigger %v: out of range, want %s", opt.Trigger, TriggerRange)
	case opt.MaxOffsets < 0 || opt.MaxOffsets > MaxMaxOffsets:
		return res, inputErrorf("capture: --max-offsets %d: out of range, want [1, 2^40]", opt.MaxOffsets)
	case opt.valueFormat() != JSONValues && opt.valueFormat() != RawValues:
		return res, inputErrorf("capture: --value-format %q: want json or raw", opt.ValueFormat)
	}
	out, st, err := openOut(opt.Out, opt.Header(), opt.Resume, opt.Steps())
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			if serr := out.stop(); serr != nil {
				err = fmt.Errorf("%w (and keeping %s: %v)", err, out.partial, serr)
			}
		}
	}()
	res.Resumed = opt.Resume && (st.records > 0 || st.batches > 0)
	res.Records, res.Batches = st.records, st.batches
	if res.Ranges, err = opt.Source.Plan(ctx, st.next); err != nil {
		return res, err
	}
	w := &writer{opt: &opt, out: out, res: &res, ranges: res.Ranges}
	switch {
	case opt.MaxOffsets > 0:
		err = w.byOffsets(ctx, st.mark)
	case opt.Trigger > 0:
		err = w.byTrigger(ctx, st.mark)
	default:
		err = w.lines(ctx)
	}
	if err != nil {
		return res, err
	}
	if err := out.commit(); err != nil {
		return res, fmt.Errorf("capture: write %s: %w", opt.Out, err)
	}
	return res, nil
}

// writer writes one capture.
type writer struct {
	opt    *Options
	out    *outFile
	res    *Result
	ranges []kafkasource.Range
	buf    []byte
}

func (w *writer) total() int64 {
	var n int64
	for _, g := range w.ranges {
		n += g.To - g.From
	}
	return n
}

func (w *writer) progress(done int64) {
	if w.opt.Progress != nil {
		w.opt.Progress(done, w.total())
	}
}

// syncEvery is how many bytes go into the partial file between fsyncs.
const syncEvery = 64 << 20

// lines writes JSON Lines, records in the order they arrive (offset order
// within a partition).
func (w *writer) lines(ctx context.Context) error {
	r, err := newReader(&w.opt.Source, w.ranges)
	if err != nil {
		return err
	}
	defer r.close()
	var unsynced int
	for !r.done() {
		recs, err := r.poll(ctx)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if w.buf, err = AppendLine(w.buf[:0], rec, w.opt.valueFormat()); err != nil {
				return err
			}
			w.buf = append(w.buf, '\n')
			if err := w.out.write(w.buf); err != nil {
				return err
			}
			unsynced += len(w.buf)
			w.res.Records++
		}
		if unsynced > syncEvery {
			if err := w.out.sync(); err != nil {
				return err
			}
			unsynced = 0
		}
		w.progress(r.readSoFar())
	}
	return nil
}

// readSoFar is the offsets the reader has passed.
func (r *reader) readSoFar() int64 {
	var n int64
	for p, g := range r.ranges {
		n += r.next[p] - g.From
	}
	return n
}

// encode is rec's captured line, for a batch.
func (w *writer) encode(rec *kgo.Record) ([]byte, error) {
	return AppendLine(nil, rec, w.opt.valueFormat())
}
