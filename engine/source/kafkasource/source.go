// Package kafkasource is the engine's Kafka input, after Spark's Kafka
// micro-batch source (KafkaMicroBatchStream) subscribed to one topic.
//
// Offsets are Spark's: {"topic":{"0":123,"1":45}}, partitions in numeric
// order, each value the next offset to read. The engine records them in
// offsets/N and, on a replay, asks for the same range again; Rows reads
// exactly the records in [start, end) of every partition with a fresh
// assign-mode consumer at explicit offsets, so a replay returns the same
// rows as the first attempt (as long as the broker still holds them).
//
// Reads are read_committed by default: the latest offset is the last
// stable offset (LSO), and records of aborted transactions are skipped.
//
// Rate limit: Spark applies maxOffsetsPerTrigger relative to the batch's
// start offset, which its latestOffset(start, limit) is handed. The
// engine's Source.LatestOffset takes no start, so the source remembers the
// end of the last batch it planned (the offset it last returned, or the
// end of the last range Rows was asked for, whichever is further) and caps
// relative to that. A fresh instance starts from the initial offsets; a
// driver restarting on an existing checkpoint calls Resume with the
// engine's Position so the first capped batch starts where the checkpoint
// ends. Without a limit the latest offset is the current end of every
// partition and Resume is not needed.
//
// A latest offset below the one the source already knows (the end of the
// last planned batch, or the initial offsets) is asked for again, as
// Spark's KafkaOffsetReaderAdmin.fetchLatestOffsets does: a broker that
// was cut off answers a stale end for a while after a network partition
// heals. Spark's fetchOffset.numRetries and fetchOffset.retryIntervalMs
// (Config.FetchOffset) say how often and how far apart; an answer still
// behind after the last attempt makes the next batch's range go
// backwards, which Rows refuses with Spark's data-loss error
// (spark-semantics.md §13.7).
package kafkasource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/row"
)

// DefaultTimeout bounds one LatestOffset or Rows call.
const DefaultTimeout = 30 * time.Second

// Spark's fetchOffset options of the Kafka source, with Spark's names and
// defaults (KafkaSourceProvider; KafkaOffsetReaderAdmin reads them):
// fetchOffset.numRetries is how many times an offset request is made (the
// attempts, not the retries after the first), fetchOffset.retryIntervalMs
// the wait between two attempts. They apply to a request that failed and
// to a latest-offset answer that went backwards against the offsets the
// source already knows (spark-semantics.md §13.6, §13.7). Spark's code
// reads the interval with a default of 1000 ms (its documentation table
// says 10).
const (
	OptionFetchOffsetNumRetries      = "fetchOffset.numRetries"
	OptionFetchOffsetRetryIntervalMs = "fetchOffset.retryIntervalMs"

	DefaultFetchOffsetNumRetries      = 3
	DefaultFetchOffsetRetryIntervalMs = 1000

	// The ranges New accepts. Spark takes any number; an attempt count
	// below one would never ask, and a thousand attempts or an hour's
	// wait is a mistake, not a setting.
	MaxFetchOffsetNumRetries      = 1000
	MaxFetchOffsetRetryIntervalMs = 3_600_000
)

// FetchOffset holds Spark's fetchOffset options.
type FetchOffset struct {
	NumRetries      int   // fetchOffset.numRetries: attempts, [1, 1000]
	RetryIntervalMs int64 // fetchOffset.retryIntervalMs: ms between attempts, [0, 3600000]
}

// DefaultFetchOffset returns Spark's defaults: 3 attempts, 1000 ms apart.
func DefaultFetchOffset() FetchOffset {
	return FetchOffset{NumRetries: DefaultFetchOffsetNumRetries, RetryIntervalMs: DefaultFetchOffsetRetryIntervalMs}
}

// CheckNumRetries refuses a fetchOffset.numRetries outside [1, 1000].
func CheckNumRetries(n int) error {
	if n < 1 || n > MaxFetchOffsetNumRetries {
		return fmt.Errorf("%s %d: want an attempt count in [1, %d] (Spark's default %d)", OptionFetchOffsetNumRetries, n, MaxFetchOffsetNumRetries, DefaultFetchOffsetNumRetries)
	}
	return nil
}

// CheckRetryIntervalMs refuses a fetchOffset.retryIntervalMs outside
// [0, 3600000].
func CheckRetryIntervalMs(ms int64) error {
	if ms < 0 || ms > MaxFetchOffsetRetryIntervalMs {
		return fmt.Errorf("%s %d: want milliseconds in [0, %d] (Spark's default %d)", OptionFetchOffsetRetryIntervalMs, ms, MaxFetchOffsetRetryIntervalMs, DefaultFetchOffsetRetryIntervalMs)
	}
	return nil
}

// Validate refuses either option out of its range.
func (f FetchOffset) Validate() error {
	if err := CheckNumRetries(f.NumRetries); err != nil {
		return err
	}
	return CheckRetryIntervalMs(f.RetryIntervalMs)
}

func (f FetchOffset) interval() time.Duration {
	return time.Duration(f.RetryIntervalMs) * time.Millisecond
}

// DefaultInitialOffsetsPath is where Spark keeps the first source's initial
// offsets inside the checkpoint.
const DefaultInitialOffsetsPath = "sources/0/0"

// Config configures a Source.
type Config struct {
	// Brokers are the bootstrap addresses (required).
	Brokers []string
	// Topic is the one topic read (required).
	Topic string
	// StartingOffsets is where a new query starts: "earliest", "latest"
	// (the default, as in Spark), or a JSON offset such as
	// {"t":{"0":5,"1":-2}} naming every partition, where -2 means earliest
	// and -1 latest.
	StartingOffsets string
	// MaxOffsetsPerTrigger caps the offsets one batch covers, split across
	// partitions as Spark does (RateLimit); 0 is unlimited.
	MaxOffsetsPerTrigger int64
	// ReadUncommitted reads with read_uncommitted isolation: the latest
	// offset is the high watermark and aborted or still-open transactional
	// records are returned. The zero value reads committed data only.
	ReadUncommitted bool
	// InitialOffsetsFS, when set, keeps the resolved initial offsets in
	// InitialOffsetsPath (default "sources/0/0"), written once the first
	// time they are needed and read back by every later instance, in the
	// format of Spark's KafkaSourceInitialOffsetWriter. Pass the query's
	// checkpoint. Without it the initial offsets live in memory, and a
	// restart that replays batch 0 of a "latest" query would resolve them
	// again, to a different place.
	InitialOffsetsFS   fsys.FS
	InitialOffsetsPath string
	// Convert turns a record into a row. The default takes the record
	// value as the row's JSON, undecoded (the engine decodes it), and
	// refuses a null value.
	Convert func(*kgo.Record) (row.Row, error)
	// Timeout bounds one LatestOffset or Rows call (default 30 s).
	Timeout time.Duration
	// FetchOffset is Spark's fetchOffset.numRetries and
	// fetchOffset.retryIntervalMs (nil: Spark's defaults, 3 attempts 1 s
	// apart): how often an offset request is made when it fails (a broker
	// restart makes it fail for a few seconds) or when a latest offset it
	// answers is behind one the source already knows (a broker that was
	// partitioned away answers a stale end), and how long to wait in
	// between. New refuses values out of range (FetchOffset.Validate).
	FetchOffset *FetchOffset
	// Sleep waits d between two attempts of an offset request, or returns
	// ctx's error when ctx ends first (nil: a timer). Tests pass one that
	// records the waits and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Dialer replaces TCP, e.g. kfake.VirtualNetwork.DialContext.
	Dialer func(ctx context.Context, network, host string) (net.Conn, error)
	// ClientOpts are added to every franz-go client the source makes.
	ClientOpts []kgo.Opt
}

// Source reads one Kafka topic. It implements source.Source.
type Source struct {
	cfg  Config
	opts []kgo.Opt
	cl   *kgo.Client
	adm  *kadm.Client

	mu      sync.Mutex
	initial Offsets // resolved initial offsets; nil until needed
	planned Offsets // end of the last planned batch; nil = initial
	// behind holds the partitions whose latest offset was still behind
	// the known one after every attempt of the last LatestOffset, for the
	// data-loss error Rows then gives.
	behind map[int32]behindAnswer
}

// behindAnswer is a latest offset that stayed below the known one.
type behindAnswer struct {
	known, latest int64
	attempts      int
}

// New checks cfg and creates the source. It does not contact the cluster.
func New(cfg Config) (*Source, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("kafkasource: no brokers")
	}
	if cfg.Topic == "" {
		return nil, errors.New("kafkasource: no topic")
	}
	switch so := strings.TrimSpace(cfg.StartingOffsets); so {
	case "":
		cfg.StartingOffsets = "latest"
	case "earliest", "latest":
		cfg.StartingOffsets = so
	default:
		if _, err := ParseOffsets(cfg.Topic, json.RawMessage(so)); err != nil {
			return nil, fmt.Errorf("kafkasource: startingOffsets: %w", err)
		}
	}
	if cfg.MaxOffsetsPerTrigger < 0 {
		return nil, fmt.Errorf("kafkasource: maxOffsetsPerTrigger %d is negative", cfg.MaxOffsetsPerTrigger)
	}
	if cfg.InitialOffsetsPath == "" {
		cfg.InitialOffsetsPath = DefaultInitialOffsetsPath
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.FetchOffset == nil {
		d := DefaultFetchOffset()
		cfg.FetchOffset = &d
	} else {
		if err := cfg.FetchOffset.Validate(); err != nil {
			return nil, fmt.Errorf("kafkasource: %w", err)
		}
		f := *cfg.FetchOffset // the caller's copy may change
		cfg.FetchOffset = &f
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Convert == nil {
		cfg.Convert = ValueRow
	}
	// A partition whose leader the client does not know yet (a topic just
	// created, a broker just restarted) makes franz-go refresh metadata no
	// sooner than MetadataMinAge, 5 s by default; Spark's Java consumer
	// retries after retry.backoff.ms, 100 ms.
	s := &Source{cfg: cfg, opts: []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.MetadataMinAge(100 * time.Millisecond)}}
	if cfg.Dialer != nil {
		s.opts = append(s.opts, kgo.Dialer(cfg.Dialer))
	}
	s.opts = append(s.opts, cfg.ClientOpts...)
	cl, err := kgo.NewClient(s.opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkasource: %w", err)
	}
	s.cl, s.adm = cl, kadm.NewClient(cl)
	return s, nil
}

// ValueRow is the default conversion: the record value is the row's JSON.
func ValueRow(r *kgo.Record) (row.Row, error) {
	if r.Value == nil {
		return row.Row{}, fmt.Errorf("record %s/%d@%d has a null value", r.Topic, r.Partition, r.Offset)
	}
	return row.Row{Data: json.RawMessage(bytes.Clone(r.Value)), Partition: r.Partition, Offset: r.Offset, Positioned: true}, nil
}

// Close releases the source's client.
func (s *Source) Close() { s.cl.Close() }

// Description names the source as Spark's progress does.
func (s *Source) Description() string { return "KafkaV2[Subscribe[" + s.cfg.Topic + "]]" }

func (s *Source) endKind() listKind {
	if s.cfg.ReadUncommitted {
		return listHighWatermark
	}
	return listStable
}

// ValidateOffset implements source.Validator: o must be an offset of this
// source's topic as the source writes one.
func (s *Source) ValidateOffset(o json.RawMessage) error {
	_, err := parseRecorded(s.cfg.Topic, o)
	return err
}

// Resume sets the end of the last planned batch: the engine's Position for
// this source after engine.Start on an existing checkpoint (nil for a new
// query). Only the rate limit uses it.
func (s *Source) Resume(pos json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pos == nil {
		s.planned = nil
		return nil
	}
	o, err := parseRecorded(s.cfg.Topic, pos)
	if err != nil {
		return fmt.Errorf("kafkasource: resume: %w", err)
	}
	s.planned = o
	return nil
}

// InitialOffsets returns the resolved starting offsets (resolving them,
// and recording them when InitialOffsetsFS is set, on first use).
func (s *Source) InitialOffsets() (Offsets, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	o, err := s.initialLocked(ctx)
	return o.Clone(), err
}

func (s *Source) initialLocked(ctx context.Context) (Offsets, error) {
	if s.initial != nil {
		return s.initial, nil
	}
	fs, name := s.cfg.InitialOffsetsFS, s.cfg.InitialOffsetsPath
	if fs != nil {
		data, err := fs.ReadFile(name)
		switch {
		case err == nil:
			o, err := decodeInitial(s.cfg.Topic, data)
			if err != nil {
				return nil, &checkpoint.CorruptError{File: name, Msg: "initial offsets: " + err.Error(), Err: err}
			}
			s.initial = o
			return o, nil
		case !fsys.IsNotExist(err):
			return nil, fmt.Errorf("kafkasource: %w", err)
		}
	}
	o, err := s.resolveStarting(ctx)
	if err != nil {
		return nil, err
	}
	if fs != nil {
		if err := fsys.WriteAtomic(fs, name, encodeInitial(s.cfg.Topic, o)); err != nil {
			return nil, fmt.Errorf("kafkasource: record initial offsets: %w", err)
		}
	}
	s.initial = o
	return o, nil
}

// encodeInitial is Spark's KafkaSourceInitialOffsetWriter format: a zero
// byte (kept for Spark 2.1.0 compatibility), "v1", a newline, the offsets.
func encodeInitial(topic string, o Offsets) []byte {
	return append([]byte("\x00v1\n"), o.JSON(topic)...)
}

func decodeInitial(topic string, data []byte) (Offsets, error) {
	data = bytes.TrimPrefix(data, []byte{0})
	rest, ok := bytes.CutPrefix(data, []byte("v1\n"))
	if !ok {
		return nil, errors.New("not an initial offsets file (want v1 header)")
	}
	return parseRecorded(topic, rest)
}

func (s *Source) resolveStarting(ctx context.Context) (Offsets, error) {
	switch s.cfg.StartingOffsets {
	case "earliest":
		return s.list(ctx, listStart)
	case "latest":
		return s.list(ctx, s.endKind())
	}
	given, err := ParseOffsets(s.cfg.Topic, json.RawMessage(s.cfg.StartingOffsets))
	if err != nil {
		return nil, err
	}
	starts, err := s.list(ctx, listStart)
	if err != nil {
		return nil, err
	}
	ends, err := s.list(ctx, s.endKind())
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, p := range starts.Partitions() {
		if _, ok := given[p]; !ok {
			missing = append(missing, fmt.Sprint(p))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("kafkasource: startingOffsets %s does not name partitions %s of %s; name every partition", s.cfg.StartingOffsets, strings.Join(missing, ", "), s.cfg.Topic)
	}
	out := Offsets{}
	for p, v := range given {
		if _, ok := starts[p]; !ok {
			return nil, fmt.Errorf("kafkasource: startingOffsets names partition %d, which %s does not have", p, s.cfg.Topic)
		}
		switch v {
		case OffsetEarliest:
			v = starts[p]
		case OffsetLatest:
			v = ends[p]
		}
		out[p] = v
	}
	return out, nil
}

// LatestOffset returns the end offset of every partition (the LSO under
// read_committed, else the high watermark), capped by
// MaxOffsetsPerTrigger relative to the last planned end. It returns nil
// while the topic has nothing past the initial offsets and no batch has
// been planned.
func (s *Source) LatestOffset() (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	initial, err := s.initialLocked(ctx)
	if err != nil {
		return nil, err
	}
	base := s.planned
	if base == nil {
		base = initial
	}
	latest, err := s.fetchLatestLocked(ctx, base)
	if err != nil {
		return nil, err
	}
	if s.cfg.MaxOffsetsPerTrigger > 0 {
		var earliest Offsets
		for p := range latest {
			if _, ok := base[p]; !ok { // a partition added since: Spark starts it at earliest
				if earliest, err = s.list(ctx, listStart); err != nil {
					return nil, err
				}
				break
			}
		}
		latest = RateLimit(s.cfg.MaxOffsetsPerTrigger, base, latest, earliest)
	}
	if s.planned == nil && equalOffsets(latest, initial) {
		return nil, nil
	}
	s.plannedUpToLocked(latest)
	return latest.JSON(s.cfg.Topic), nil
}

// fetchLatestLocked is Spark's KafkaOffsetReaderAdmin.fetchLatestOffsets
// with known offsets (KafkaMicroBatchStream.latestOffset passes the
// batch's start): it lists the end offsets and, while some partition's
// answer is below its known offset, lists them again, up to
// fetchOffset.numRetries answers, fetchOffset.retryIntervalMs apart. A
// broker that was cut off from the cluster can answer a stale end for a
// while after the partition heals; a fresh answer is taken as it comes.
// After the last attempt it returns the answer it has, as Spark does (a
// topic deleted and created again is indistinguishable from a stale
// answer), and keeps the partitions still behind in s.behind: Rows then
// refuses the backwards range as Spark's failOnDataLoss does. Partitions
// missing from known (new ones) or from the answer (gone) are not
// compared.
func (s *Source) fetchLatestLocked(ctx context.Context, known Offsets) (Offsets, error) {
	fo := *s.cfg.FetchOffset
	for attempt := 1; ; attempt++ {
		latest, err := s.list(ctx, s.endKind())
		if err != nil {
			return nil, err
		}
		behind := map[int32]behindAnswer{}
		for p, got := range latest {
			if k, ok := known[p]; ok && got < k {
				behind[p] = behindAnswer{known: k, latest: got, attempts: attempt}
			}
		}
		if len(behind) == 0 {
			s.behind = nil
			return latest, nil
		}
		if attempt >= fo.NumRetries {
			s.behind = behind
			return latest, nil
		}
		if err := s.cfg.Sleep(ctx, fo.interval()); err != nil {
			return nil, fmt.Errorf("kafkasource: %s latest offsets behind the known ones %s after %d attempts, and no time left to ask again: %w",
				s.cfg.Topic, known.JSON(s.cfg.Topic), attempt, err)
		}
	}
}

// plannedUpToLocked raises the planned end to o, partition by partition.
func (s *Source) plannedUpToLocked(o Offsets) {
	if s.planned == nil {
		s.planned = Offsets{}
	}
	for p, v := range o {
		if cur, ok := s.planned[p]; !ok || v > cur {
			s.planned[p] = v
		}
	}
}

func equalOffsets(a, b Offsets) bool {
	if len(a) != len(b) {
		return false
	}
	for p, v := range a {
		if w, ok := b[p]; !ok || w != v {
			return false
		}
	}
	return true
}

// Rows returns the records in [start, end) of every partition (start nil:
// from the initial offsets; a partition missing from start: from its log
// start), partitions in numeric order, each in offset order. The same
// range gives the same rows every time while the broker keeps them; a
// range the broker can no longer serve (records deleted, an end past the
// partition's LSO or high watermark, a partition gone) is an error, as
// Spark's failOnDataLoss makes it.
func (s *Source) Rows(start, end json.RawMessage) ([]row.Row, error) {
	if end == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	to, err := parseRecorded(s.cfg.Topic, end)
	if err != nil {
		return nil, fmt.Errorf("kafkasource: end: %w", err)
	}
	var from Offsets
	if start == nil {
		if from, err = s.initialLocked(ctx); err != nil {
			return nil, err
		}
	} else if from, err = parseRecorded(s.cfg.Topic, start); err != nil {
		return nil, fmt.Errorf("kafkasource: start: %w", err)
	}
	s.plannedUpToLocked(to)

	for p := range from {
		if _, ok := to[p]; !ok {
			return nil, fmt.Errorf("kafkasource: %s partition %d is in the start offset %s but not in the end offset %s; some data may have been lost", s.cfg.Topic, p, start, end)
		}
	}
	var starts Offsets
	var ranges []Range
	for _, p := range to.Partitions() {
		f, ok := from[p]
		if !ok {
			if starts == nil {
				if starts, err = s.list(ctx, listStart); err != nil {
					return nil, err
				}
			}
			if f, ok = starts[p]; !ok {
				return nil, fmt.Errorf("kafkasource: %s partition %d does not exist", s.cfg.Topic, p)
			}
		}
		if f > to[p] {
			return nil, s.offsetChanged(p, f, to[p])
		}
		if f < to[p] {
			ranges = append(ranges, Range{Partition: p, From: f, To: to[p]})
		}
	}
	if len(ranges) == 0 {
		return nil, nil
	}
	if err := s.checkAvailable(ctx, ranges, starts); err != nil {
		return nil, err
	}
	per, err := ReadRanges(ctx, s.opts, s.cfg.Topic, ranges, !s.cfg.ReadUncommitted)
	if err != nil {
		return nil, fmt.Errorf("kafkasource: %w", err)
	}
	var rows []row.Row
	for _, recs := range per {
		for _, rec := range recs {
			r, err := s.cfg.Convert(rec)
			if err != nil {
				return nil, fmt.Errorf("kafkasource: %w", err)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// offsetChanged is Spark's data-loss failure for a range whose end is
// below its start (KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets
// through KafkaMicroBatchStream.reportDataLoss with failOnDataLoss true,
// the only mode the engine has): Spark 4's KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED
// wording, the partition named topic-partition as Spark prints a
// TopicPartition, and, when this source's own latest-offset fetch stayed
// behind, how often it asked.
func (s *Source) offsetChanged(p int32, from, to int64) error {
	msg := fmt.Sprintf("kafkasource: [KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED] Some data may have been lost because they are not available in Kafka any more; "+
		"either the data was aged out by Kafka or the topic may have been deleted before all the data in the topic was processed. "+
		"Reason: Partition %s-%d offset was changed from %d to %d.", s.cfg.Topic, p, from, to)
	if b, ok := s.behind[p]; ok && b.known == from && b.latest == to {
		msg += fmt.Sprintf(" The latest offset was still %d after %d attempts (%s %d, %s %d).",
			to, b.attempts, OptionFetchOffsetNumRetries, s.cfg.FetchOffset.NumRetries, OptionFetchOffsetRetryIntervalMs, s.cfg.FetchOffset.RetryIntervalMs)
	}
	return errors.New(msg)
}

// checkAvailable fails fast, with a message saying which bound is broken,
// when the broker cannot serve a range completely.
func (s *Source) checkAvailable(ctx context.Context, ranges []Range, starts Offsets) error {
	var err error
	if starts == nil {
		if starts, err = s.list(ctx, listStart); err != nil {
			return err
		}
	}
	ends, err := s.list(ctx, s.endKind())
	if err != nil {
		return err
	}
	for _, r := range ranges {
		if ls, ok := starts[r.Partition]; !ok || r.From < ls {
			return fmt.Errorf("kafkasource: %s partition %d: offsets [%d, %d) are needed but the log starts at %d; some data may have been lost", s.cfg.Topic, r.Partition, r.From, r.To, ls)
		}
		if e := ends[r.Partition]; r.To > e {
			return fmt.Errorf("kafkasource: %s partition %d: offsets up to %d are needed but the %s is %d", s.cfg.Topic, r.Partition, r.To, s.endKind(), e)
		}
	}
	return nil
}

// list lists the topic's offsets of kind, trying up to
// fetchOffset.numRetries times, fetchOffset.retryIntervalMs apart, as
// Spark's KafkaOffsetReaderAdmin.withRetries does.
func (s *Source) list(ctx context.Context, kind listKind) (Offsets, error) {
	fo := *s.cfg.FetchOffset
	for attempt := 1; ; attempt++ {
		o, err := listOffsets(ctx, s.adm, s.cfg.Topic, kind)
		if err == nil {
			return o, nil
		}
		if attempt >= fo.NumRetries || ctx.Err() != nil {
			return nil, fmt.Errorf("%w (after %d attempts)", err, attempt)
		}
		if s.cfg.Sleep(ctx, fo.interval()) != nil {
			return nil, fmt.Errorf("%w (after %d attempts)", err, attempt)
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
