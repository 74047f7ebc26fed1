// Package engine is the micro-batch executor: it plans each batch from the
// sources and the checkpoint, runs the dedup operator, writes the sink,
// commits, and decides on Spark's no-data batches. It is single-threaded
// and deterministic: processing time, ids, the filesystem, the sources, the
// sink and the decision to crash all come in through Config.
//
// One batch passes, in order: offsets/N written (crash point
// after-offsets-write), state version N+1 committed (after-state-commit),
// sink written (after-sink-write), commits/N written (after-commit).
package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/dedup"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/sparkver"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/watermark"
)

// MinBatchesToRetain is spark.sql.streaming.minBatchesToRetain: offset and
// commit log entries older than this many batches are purged.
const MinBatchesToRetain = 100

// CrashError is returned when the crash hook chose to die. The engine is
// dead afterwards: the driver discards it and starts a new one on the same
// checkpoint.
type CrashError struct {
	Point   crashpoint.Point
	BatchID int64
}

func (e *CrashError) Error() string {
	return fmt.Sprintf("driver crashed at %s of batch %d", e.Point, e.BatchID)
}

// IncompatibleError is a query that Spark would refuse to run on the
// existing checkpoint, with Spark's error class where it has one.
type IncompatibleError struct {
	Class   string
	Message string
}

func (e *IncompatibleError) Error() string {
	if e.Class == "" {
		return e.Message
	}
	return "[" + e.Class + "] " + e.Message
}

// Clock gives processing time.
type Clock interface{ NowMs() int64 }

// Config is everything a query run needs from its driver.
type Config struct {
	Query *query.Query
	// Checkpoint is the checkpoint folder.
	Checkpoint fsys.FS
	// Sources, one per Query.Sources, in the same order.
	Sources []source.Source
	Sink    sink.Sink
	Clock   Clock
	// NewID returns a fresh id (query id on a new checkpoint, run id on
	// every start). Drivers pass a seeded generator for reproducible runs.
	NewID func() string
	// NewStateProvider opens the state store named by the pinned setting
	// ("memory" or "pebble"); nil opens the memory provider (MemoryProvider)
	// and refuses any other. Drivers pass stores.Open to offer every store.
	NewStateProvider func(store string, fs fsys.FS) (state.Provider, error)
	// Crash is asked at every crash point; returning true kills the run.
	Crash func(point crashpoint.Point, batchID int64) bool
	// OnBatch observes every batch execution that reached the sink.
	OnBatch func(*BatchRecord)
	// BeforeSink, when set, sees each execution just before the sink is
	// called: the rows read, their fate and the output, with the batch's
	// watermarks (no progress or next watermark yet). A process that can
	// be killed at any instruction records it so that a kill during the
	// sink write still leaves the execution on record.
	BeforeSink func(*BatchRecord)
	Log        *slog.Logger
}

// BatchRecord is one execution of one batch.
type BatchRecord struct {
	BatchID int64
	// Replay marks a batch planned by an earlier run and re-run by this one.
	Replay bool
	// Crashed is set when the run died at or after the sink write.
	Crashed crashpoint.Point
	// Input is the batch's rows in union order (sources in query order);
	// Outcomes[i] is the fate of Input[i].
	Input    []row.Row
	Outcomes []dedup.Outcome
	// Output is what the sink received.
	Output []row.Row
	// Watermarks in ms: late filter (previous batch's), eviction (this
	// batch's), and the value computed after this batch.
	LateWatermarkMs, WatermarkMs, NextWatermarkMs int64
	TimestampMs                                   int64
	Progress                                      Progress
}

// Engine runs one query from one checkpoint until it stops or dies.
type Engine struct {
	cfg  Config
	q    query.Query // with the checkpoint's pinned settings applied
	ckpt *checkpoint.Log
	conf map[string]string
	// confOrder is the order conf is written in offsets/N (nil: sorted).
	confOrder []string
	queryID   string
	runID     string
	provider  state.Provider
	op        *dedup.Operator
	decoder   *row.Decoder
	tracker   *watermark.Tracker
	warnings  []string

	nextBatch int64
	committed []json.RawMessage // end offsets of the last committed batch
	prevWmMs  int64             // batchWatermarkMs of batch nextBatch-1
	pending   *pendingBatch     // a planned batch with no commit: re-run first
	ranAny    bool              // a batch executed in this run (§7.4)
	lastEvict int64             // eviction watermark of the last executed batch
	lastTrig  int64
	hasTrig   bool
	dead      error
	// lastEmpty: the last batch read nothing (its end offsets are its
	// start offsets); ProcessAllAvailable stops there in real-time mode.
	lastEmpty bool
}

type pendingBatch struct {
	id         int64
	start, end []json.RawMessage
	meta       checkpoint.Metadata
	lateWmMs   int64
}

// Start opens a query run on cfg.Checkpoint: a new query when the folder
// holds no offsets, otherwise a restart under spark-semantics.md §9 and §10.
func Start(cfg Config) (*Engine, error) {
	if cfg.Query == nil || cfg.Checkpoint == nil || cfg.Sink == nil || cfg.Clock == nil || cfg.NewID == nil {
		return nil, errors.New("engine: Query, Checkpoint, Sink, Clock and NewID are required")
	}
	if len(cfg.Sources) != len(cfg.Query.Sources) {
		return nil, fmt.Errorf("engine: query has %d sources, driver gave %d", len(cfg.Query.Sources), len(cfg.Sources))
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{cfg: cfg, q: *cfg.Query, ckpt: checkpoint.New(cfg.Checkpoint)}
	if err := e.open(); err != nil {
		if e.provider != nil {
			e.provider.Close()
		}
		return nil, err
	}
	return e, nil
}

// CheckpointError reports whether err comes from a damaged checkpoint and
// gives it one form, *checkpoint.CorruptError naming the file, whichever
// layer found it: the logs and the sources' files (already that type) or
// a state store (a corrupt or missing state file). Drivers use it to tell
// a checkpoint that must be restored (bad input) from a failed run.
func CheckpointError(err error) (*checkpoint.CorruptError, bool) {
	var ce *checkpoint.CorruptError
	if err == nil {
		return nil, false
	}
	if errors.As(err, &ce) {
		return ce, true
	}
	var cf *state.CorruptFileError
	if errors.As(err, &cf) {
		return &checkpoint.CorruptError{File: cf.Path, Msg: cf.Msg, Err: err}, true
	}
	var mf *state.MissingFileError
	if errors.As(err, &mf) {
		return &checkpoint.CorruptError{File: mf.Path, Msg: fmt.Sprintf("missing: state version %d cannot be rebuilt without it", mf.Version), Err: err}, true
	}
	return nil, false
}

// checkStamp checks offsets/n (last) and, when given, commits/n (c)
// against the batch stamp in partition 0's state file of version n+1,
// which batch n wrote (state.BatchStamp): a value changed in either log
// that still parses is found here. A stateless query, or a batch whose
// state file is absent (a crash before the state commit), has nothing to
// check against.
func (e *Engine) checkStamp(n int64, last checkpoint.Offsets, c *checkpoint.Commit) error {
	if !e.q.Stateful() {
		return nil
	}
	id := state.ID{Operator: 0, Partition: 0}
	for _, f := range []struct {
		suffix string
		kind   byte
	}{{".delta", state.KindDelta}, {".changelog", state.KindChangelog}} {
		name := stampFile(id, n, f.suffix, c)
		data, err := e.cfg.Checkpoint.ReadFile(name)
		if fsys.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		st, err := state.ReadBatchStamp(name, data, f.kind, id, n+1)
		if err != nil {
			return err
		}
		if st == (state.BatchStamp{}) {
			return nil // written without a stamp
		}
		b, err := checkpoint.EncodeOffsets(last)
		if err != nil {
			return err
		}
		if got := state.Checksum(b); got != st.OffsetsCRC {
			return checkpoint.Corrupt(fmt.Sprintf("offsets/%d", n), "not the entry batch %d ran with: %s holds the CRC-32C of that entry, %08x, and this one's is %08x (the file was changed or replaced)",
				n, name, st.OffsetsCRC, got)
		}
		if c != nil && c.NextBatchWatermarkMs != st.NextWatermarkMs {
			return checkpoint.Corrupt(fmt.Sprintf("commits/%d", n), "nextBatchWatermarkMs %d is not the watermark batch %d committed, %d (recorded in %s): the file was changed or replaced",
				c.NextBatchWatermarkMs, n, st.NextWatermarkMs, name)
		}
		return nil
	}
	return nil
}

// predecessor reads offsets/n-1 and checks that offsets/n (last) can
// follow it: the same sources, a watermark that does not go back, and the
// watermark the commit of n-1 handed on. Two consecutive entries are never
// identical (a no-data batch runs only when the watermark moved), so an
// entry equal to its predecessor is a stale copy.
func (e *Engine) predecessor(n int64, last checkpoint.Offsets) (checkpoint.Offsets, error) {
	name := fmt.Sprintf("offsets/%d", n)
	prevName := fmt.Sprintf("offsets/%d", n-1)
	prev, err := e.ckpt.ReadOffsets(n - 1)
	if fsys.IsNotExist(err) {
		// Spark: IllegalStateException("batch N-1 doesn't exist").
		return prev, checkpoint.Corrupt(prevName, "missing: batch %d doesn't exist, and batch %d needs where it ended", n-1, n)
	}
	if err != nil {
		return prev, err
	}
	if len(prev.Sources) != len(last.Sources) {
		return prev, checkpoint.Corrupt(prevName, "records %d sources, %s records %d", len(prev.Sources), name, len(last.Sources))
	}
	if err := e.validateOffsets(prevName, prev.Sources); err != nil {
		return prev, err
	}
	if prev.Metadata.BatchWatermarkMs > last.Metadata.BatchWatermarkMs {
		return prev, checkpoint.Corrupt(name, "batchWatermarkMs %d is below %s's %d: a watermark never goes back",
			last.Metadata.BatchWatermarkMs, prevName, prev.Metadata.BatchWatermarkMs)
	}
	same := prev.Metadata.BatchWatermarkMs == last.Metadata.BatchWatermarkMs && prev.Metadata.BatchTimestampMs == last.Metadata.BatchTimestampMs
	for i := range prev.Sources {
		same = same && bytes.Equal(prev.Sources[i], last.Sources[i])
	}
	// A real-time batch runs whether or not data arrived: two in a row may
	// hold the same offsets and watermark (exec's clock may not move
	// between them either).
	if same && !e.q.RealTime() && !e.committedBatch(n) {
		return prev, checkpoint.Corrupt(name, "identical to %s: two batches never have the same offsets and watermark (a stale copy?)", prevName)
	}
	c, err := e.ckpt.ReadCommit(n - 1)
	switch {
	case fsys.IsNotExist(err):
	case err != nil:
		return prev, err
	case c.NextBatchWatermarkMs != last.Metadata.BatchWatermarkMs:
		return prev, checkpoint.Corrupt(name, "batchWatermarkMs %d is not commits/%d's nextBatchWatermarkMs %d: a batch runs with the watermark its predecessor committed",
			last.Metadata.BatchWatermarkMs, n-1, c.NextBatchWatermarkMs)
	}
	return prev, nil
}

// validateOffsets checks that every source offset of a log entry has the
// form its source writes.
func (e *Engine) validateOffsets(file string, offs []json.RawMessage) error {
	for i, o := range offs {
		if o == nil {
			continue
		}
		if v, ok := e.cfg.Sources[i].(source.Validator); ok {
			if err := v.ValidateOffset(o); err != nil {
				return checkpoint.Corrupt(file, "line %d: source %d (%s): %v", i+3, i, e.cfg.Sources[i].Description(), err)
			}
		}
	}
	return nil
}

func (e *Engine) open() error {
	if err := e.q.CheckSparkVersion(); err != nil {
		return err
	}
	// Crash recovery: a file renamed into place just before a process
	// crash is visible but its directory entry may not be durable yet.
	// Acting on it (re-running, or planning past, the batch it describes)
	// and then losing it to a power cut would leave the checkpoint
	// inconsistent, so make what this run is about to read durable first.
	if err := e.syncCheckpoint(); err != nil {
		return err
	}
	id, ok, err := e.ckpt.QueryID()
	if err != nil {
		return err
	}
	if !ok {
		// A checkpoint that has run batches but lost its metadata would
		// get a new query id, and with it a new default txnAppId for the
		// table sink: replays would no longer be recognised.
		if err := e.missingMetadata(); err != nil {
			return err
		}
		if n, err := e.ckpt.Latest("offsets"); err != nil {
			return err
		} else if n >= 0 {
			return checkpoint.Corrupt("metadata", "missing, but the offset log holds batches up to %d: the query id (the table sink's default txnAppId) cannot be made up again", n)
		}
		id = e.cfg.NewID()
		if err := e.ckpt.WriteQueryID(id); err != nil {
			return err
		}
	}
	e.queryID = id
	e.runID = e.cfg.NewID()

	rs, err := e.ckpt.ReadRestart()
	if err != nil {
		return err
	}
	if e.q.RealTime() && rs.LatestOffsets > rs.LatestCommit && rs.LatestCommit >= -1 {
		// Real-time mode writes offsets/N only at the end of batch N, after
		// its rows reached the sink; a restart deletes an entry that never
		// committed and plans the batch again from the last commit
		// (spark-semantics.md §18.3), it does not replay it.
		if err := e.ckpt.PurgeAfter(rs.LatestCommit); err != nil {
			return err
		}
		if rs.LatestCommit < 0 {
			e.warn("real-time mode: deleted the offsets of batch 0, which never committed; it is planned again")
		} else {
			e.warn(fmt.Sprintf("real-time mode: deleted offsets after the last commit (batch %d); the batch is planned again from there", rs.LatestCommit))
		}
		rs.LatestOffsets = rs.LatestCommit
	}
	latestOff, latestCommit := rs.LatestOffsets, rs.LatestCommit
	// The restart rule (§9), shared with the harnesses. A commit log ahead
	// of the offset log is refused below, after the checks of the offset
	// log and of the operators.
	nextToRun, replay, ahead := rs.Next()
	if ahead != nil {
		nextToRun = latestOff
	}
	var last checkpoint.Offsets
	if latestOff >= 0 {
		if last, err = e.ckpt.ReadOffsets(latestOff); err != nil {
			return err
		}
		if len(last.Sources) != len(e.q.Sources) {
			return &IncompatibleError{Message: fmt.Sprintf("the query has %d sources but the checkpoint's offsets/%d records %d", len(e.q.Sources), latestOff, len(last.Sources))}
		}
		if err := e.validateOffsets(fmt.Sprintf("offsets/%d", latestOff), last.Sources); err != nil {
			return err
		}
		e.applyPinned(last.Metadata.Conf)
	}
	e.conf, e.confOrder = e.pinnedConf(last.Metadata.Conf, latestOff >= 0)

	// Compatibility with the existing state (§10), in Spark's order:
	// operator metadata on a restart, then the key schema.
	if latestOff >= 0 && nextToRun != 0 {
		if err := e.checkOperators(); err != nil {
			return err
		}
	}
	if e.q.Stateful() {
		if err := e.checkAndWriteSchema(); err != nil {
			return err
		}
	}

	if e.decoder, err = row.NewTypedDecoder(e.q.StateKeys(), e.q.EventTimeColumn(), e.q.Schema); err != nil {
		return err
	}
	if e.q.API == query.BatchDropDuplicates && e.q.Schema != nil {
		// spark-semantics.md §15.5: batch dedup is an aggregate, whose
		// grouping keys Spark normalises.
		e.decoder = e.decoder.NormalizedFloats()
	}
	e.op = e.operator()
	if e.q.Stateful() {
		newProvider := e.cfg.NewStateProvider
		if newProvider == nil {
			newProvider = MemoryProvider
		}
		if e.provider, err = newProvider(e.q.StateStore, e.cfg.Checkpoint); err != nil {
			return err
		}
		if err := e.startFormatV2(latestCommit); err != nil {
			return err
		}
		// §17.7: Spark 4.1 writes a checksum sidecar next to every state
		// file of a format-v1 checkpoint (the memory store's; the Pebble
		// store writes none).
		if row, ok := sparkver.Lookup(e.q.SparkVersion); ok && row.FileChecksum && e.q.CheckpointFormat != 2 {
			if p, ok := e.provider.(state.FileChecksummer); ok {
				p.EnableFileChecksum(e.cfg.Clock.NowMs)
			}
		}
	}

	nsrc := len(e.q.Sources)
	startWm := int64(0)
	switch {
	case latestOff < 0: // §9.1 new query
		e.committed = make([]json.RawMessage, nsrc)
	case ahead != nil:
		return ahead
	case !replay: // §9.2 last batch complete
		c, err := e.ckpt.ReadCommit(latestCommit)
		if err != nil {
			return err
		}
		// The watermark never goes back: a batch's commit holds at least
		// the watermark the batch ran with.
		if c.NextBatchWatermarkMs < last.Metadata.BatchWatermarkMs {
			return checkpoint.Corrupt(fmt.Sprintf("commits/%d", latestCommit), "nextBatchWatermarkMs %d is below offsets/%d's batchWatermarkMs %d: a watermark never goes back",
				c.NextBatchWatermarkMs, latestOff, last.Metadata.BatchWatermarkMs)
		}
		if latestOff > 0 {
			// Spark reads batch N-1 on every restart ("batch N-1 doesn't
			// exist"); it also tells a stale copy of the log apart.
			if _, err := e.predecessor(latestOff, last); err != nil {
				return err
			}
		}
		if err := e.checkStamp(latestOff, last, &c); err != nil {
			return err
		}
		e.nextBatch = latestOff + 1
		e.committed = last.Sources
		e.prevWmMs = last.Metadata.BatchWatermarkMs
		startWm = max(last.Metadata.BatchWatermarkMs, c.NextBatchWatermarkMs)
	default: // §9.3 re-run the planned batch
		if latestCommit < latestOff-1 {
			e.warn(fmt.Sprintf("commit log is %d batches behind the offset log; re-running batch %d", latestOff-latestCommit, latestOff))
		}
		p := &pendingBatch{id: latestOff, end: last.Sources, meta: last.Metadata, start: make([]json.RawMessage, nsrc)}
		if latestOff > 0 {
			prev, err := e.predecessor(latestOff, last)
			if err != nil {
				return err
			}
			p.start, p.lateWmMs = prev.Sources, prev.Metadata.BatchWatermarkMs
		}
		if err := e.checkStamp(latestOff, last, nil); err != nil {
			return err
		}
		e.pending = p
		e.nextBatch = latestOff
		e.committed = p.start
		startWm = last.Metadata.BatchWatermarkMs
	}
	delays := make([]int64, nsrc)
	for i, s := range e.q.Sources {
		delays[i] = -1
		if s.Watermark != nil {
			delays[i] = s.Watermark.DelayMs
		}
	}
	e.tracker = watermark.NewTracker(watermark.Policy(e.q.WatermarkPolicy), delays, startWm)
	return nil
}

// syncCheckpoint fsyncs the checkpoint's directories: the root, the logs,
// and every state folder.
func (e *Engine) syncCheckpoint() error {
	fs := e.cfg.Checkpoint
	dirs := []string{".", "offsets", "commits", "state"}
	ops, err := fs.ReadDir("state")
	if err != nil && !fsys.IsNotExist(err) {
		return err
	}
	for _, op := range ops {
		dirs = append(dirs, "state/"+op, "state/"+op+"/_metadata")
		parts, err := fs.ReadDir("state/" + op)
		if err != nil {
			continue // a file, not a folder
		}
		for _, p := range parts {
			dirs = append(dirs, "state/"+op+"/"+p, "state/"+op+"/"+p+"/_metadata")
		}
	}
	for _, d := range dirs {
		if ok, err := fs.Exists(d); err != nil || !ok {
			continue
		}
		if err := fs.SyncDir(d); err != nil && !fsys.IsNotExist(err) {
			return fmt.Errorf("checkpoint: sync %s: %w", d, err)
		}
	}
	return nil
}

// MemoryProvider opens the in-memory (HDFS-backed analogue) state store,
// the only one the engine core links; it is the default when
// Config.NewStateProvider is nil. Drivers that offer the other stores pass
// stores.Open (engine/state/stores).
func MemoryProvider(store string, fs fsys.FS) (state.Provider, error) {
	if store != "" && store != query.StateStoreMemory {
		return nil, fmt.Errorf("state_store %q is not available from this driver (only memory: it sets no engine.Config.NewStateProvider)", store)
	}
	return state.NewMemoryProvider(fs, state.Options{}), nil
}

// applyPinned makes the checkpoint's pinned settings win over the query's
// (§10.3), with Spark's warning.
func (e *Engine) applyPinned(conf map[string]string) {
	if v, ok := conf[checkpoint.ConfShufflePartitions]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n != e.q.ShufflePartitions {
			e.warnConf(checkpoint.ConfShufflePartitions, strconv.Itoa(e.q.ShufflePartitions), v)
			e.q.ShufflePartitions = n
		}
	}
	if v, ok := conf[checkpoint.ConfWatermarkPolicy]; ok && v != e.q.WatermarkPolicy {
		if _, err := watermark.ParsePolicy(v); err == nil {
			e.warnConf(checkpoint.ConfWatermarkPolicy, e.q.WatermarkPolicy, v)
			e.q.WatermarkPolicy = v
		}
	}
	if v, ok := conf[checkpoint.ConfStateStore]; ok {
		if name := checkpoint.StoreName(v); name != e.q.StateStore {
			e.warnConf(checkpoint.ConfStateStore, checkpoint.StoreClass(e.q.StateStore), v)
			e.q.StateStore = name
		}
	}
}

func (e *Engine) warnConf(key, from, to string) {
	e.warn(fmt.Sprintf("Updating the value of conf '%s' in current session from '%s' to '%s'.", key, from, to))
}

func (e *Engine) warn(msg string) {
	e.warnings = append(e.warnings, msg)
	e.cfg.Log.Warn(msg)
}

// Warnings returns what this run warned about (pinned settings overriding
// the query, a lagging commit log).
func (e *Engine) Warnings() []string { return e.warnings }

// pinnedConf is what this run writes in every offsets/N, and its order.
// With no Spark version: dedupsim's eight confs, sorted. With one: the
// confs the line pins (sparkver.Row.Pinned) in Scala HashMap order; on a
// restart each takes the checkpoint's value, and one the checkpoint does
// not hold the value Spark gives an older checkpoint
// (sparkver.OldCheckpointValue: the key-order conf restarts as "false"),
// or else the session's,
// as OffsetSeqMetadata.setSessionConf does; a new query takes the
// query's spark_conf, else the line's default. The dedup's state key
// order follows the key-order value (spark-semantics.md §17).
func (e *Engine) pinnedConf(stored map[string]string, restart bool) (map[string]string, []string) {
	row, ok := sparkver.Lookup(e.q.SparkVersion)
	if !ok {
		return e.defaultConf(), nil
	}
	conf := make(map[string]string, len(row.Pinned))
	keys := make([]string, 0, len(row.Pinned))
	for _, c := range row.Pinned {
		var v string
		switch c.Key {
		case checkpoint.ConfShufflePartitions:
			v = strconv.Itoa(e.q.ShufflePartitions)
		case checkpoint.ConfWatermarkPolicy:
			v = e.q.WatermarkPolicy
		case checkpoint.ConfStateStore:
			v = checkpoint.StoreClass(e.q.StateStore)
		default:
			if sv, ok := stored[c.Key]; ok && restart {
				v = sv
				if q := e.q.ConfValue(c.Key); q != sv {
					e.warnConf(c.Key, q, sv)
				}
			} else if old, ok := sparkver.OldCheckpointValue(c); ok && restart {
				v = old
			} else {
				v = e.q.ConfValue(c.Key)
			}
		}
		conf[c.Key] = v
		keys = append(keys, c.Key)
	}
	e.q.KeyOrder = row.KeyOrderFor(conf[sparkver.ConfKeyOrder])
	return conf, sparkver.HashOrder(keys, row.Scala212)
}

// missingMetadata is Spark 4.2's refusal of a checkpoint whose logs hold
// batches but whose metadata file is gone (StreamingQueryCheckpointMetadata,
// spark.sql.streaming.checkpoint.verifyMetadataExists.enabled, default
// true): lines before 4.2 make up a new query id, which dedupsim refuses
// with its own message (the caller's).
func (e *Engine) missingMetadata() error {
	row, ok := sparkver.Lookup(e.q.SparkVersion)
	if !ok || !row.MissingMetadata {
		return nil
	}
	for _, dir := range []string{"offsets", "commits"} {
		n, err := e.ckpt.Latest(dir)
		if err != nil {
			return err
		}
		if n >= 0 {
			return &IncompatibleError{Class: sparkver.ClassMissingMetadata, Message: fmt.Sprintf(
				"The checkpoint's metadata file is missing but its %s log holds batches up to %d: a new query id would be made up (Spark %s refuses; restore the metadata file or start a new checkpoint).", dir[:len(dir)-1], n, e.q.SparkVersion.Full)}
		}
	}
	return nil
}

// defaultConf is what dedupsim pins with no Spark version.
func (e *Engine) defaultConf() map[string]string {
	conf := make(map[string]string, len(checkpoint.DefaultConf)+3)
	for k, v := range checkpoint.DefaultConf {
		conf[k] = v
	}
	conf[checkpoint.ConfShufflePartitions] = strconv.Itoa(e.q.ShufflePartitions)
	conf[checkpoint.ConfWatermarkPolicy] = e.q.WatermarkPolicy
	conf[checkpoint.ConfStateStore] = checkpoint.StoreClass(e.q.StateStore)
	return conf
}

func (e *Engine) operator() *dedup.Operator {
	op := &dedup.Operator{ID: 0, Partitions: e.q.ShufflePartitions, DelayMs: e.q.DelayMs()}
	switch e.q.API {
	case query.DropDuplicatesWithinWatermark:
		op.Mode = dedup.WithinWatermark
	case query.BatchDropDuplicates:
		op.Mode = dedup.Batch
		return op // §5.2: the batch plan has no watermark node
	}
	col := e.q.EventTimeColumn()
	op.HasEventTime = col != ""
	if col != "" {
		op.EventTimeInKey = len(e.q.Keys) == 0
		for _, k := range e.q.Keys {
			if k == col {
				op.EventTimeInKey = true
			}
		}
	}
	return op
}

// checkOperators is Spark 4's checkOperatorValidWithMetadata: when the
// checkpoint has operator metadata, the current plan's operators must be
// the same ids with the same names.
func (e *Engine) checkOperators() error {
	stored, err := e.ckpt.Operators()
	if err != nil || len(stored) == 0 {
		return err
	}
	current := map[int]string{}
	if e.q.Stateful() {
		current[0] = e.q.OperatorName()
	}
	same := len(stored) == len(current)
	for id, name := range stored {
		if current[id] != name {
			same = false
		}
	}
	if !same {
		return &IncompatibleError{Class: "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA", Message: fmt.Sprintf(
			"Streaming stateful operator name does not match with the operator in state metadata. This likely to happen when user adds/removes/changes stateful operator of existing streaming query. Stateful operators in the metadata: [%s]; Stateful operators in current batch: [%s]. SQLSTATE: 42K03",
			checkpoint.FormatOperators(stored), checkpoint.FormatOperators(current))}
	}
	return nil
}

// keySchema is the state key schema of the query: the key columns in
// Spark's state order (query.StateKeyOrder) with their types from the
// query's schema in Spark's JSON form (a nested type in full), the
// event-time column as "timestamp" (the watermark is on a timestamp
// column). Untyped rows (no schema) type every other key column "string",
// and an all-columns key, whose columns are not known when the query
// starts, is one struct-typed field.
func (e *Engine) keySchema() checkpoint.Schema {
	s := checkpoint.Schema{Type: "struct"}
	keys := e.q.StateKeys()
	if len(keys) == 0 {
		s.Fields = []checkpoint.Field{{Name: "*", Type: checkpoint.Atomic("struct"), Nullable: true}}
		return s
	}
	col := e.q.EventTimeColumn()
	for _, k := range keys {
		t := checkpoint.Atomic("string")
		if e.q.Schema != nil {
			t = checkpoint.FromType(e.q.Schema.Fields[e.q.Schema.Index(k)].Type)
		}
		if k == col {
			t = checkpoint.Atomic("timestamp")
		}
		s.Fields = append(s.Fields, checkpoint.Field{Name: k, Type: t, Nullable: true})
	}
	return s
}

func (e *Engine) valueSchema() checkpoint.Schema {
	if e.q.API == query.DropDuplicatesWithinWatermark {
		return checkpoint.Schema{Type: "struct", Fields: []checkpoint.Field{{Name: "expiresAtMicros", Type: checkpoint.Atomic("long")}}}
	}
	return checkpoint.Schema{Type: "struct", Fields: []checkpoint.Field{{Name: "__dummy__", Type: checkpoint.Atomic("null"), Nullable: true}}}
}

func (e *Engine) checkAndWriteSchema() error {
	key := e.keySchema()
	stored, ok, err := e.ckpt.ReadSchema(0)
	if err != nil {
		return err
	}
	if ok {
		if !stored.Key.Compatible(key) {
			return &IncompatibleError{Class: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE", Message: fmt.Sprintf(
				"Provided key schema does not match existing state key schema. Please check number and type of fields. Existing key_schema=%s and new key_schema=%s.",
				stored.Key, key)}
		}
	} else if err := e.ckpt.WriteSchema(0, checkpoint.StateSchemas{Key: key, Value: e.valueSchema()}); err != nil {
		return err
	}
	ops, err := e.ckpt.Operators()
	if err != nil {
		return err
	}
	if _, ok := ops[0]; !ok {
		return e.ckpt.WriteOperatorMetadata(0, e.q.OperatorName(), e.q.ShufflePartitions)
	}
	return nil
}

// Position returns, per source, the offset the checkpoint has already
// planned up to: the end of the pending re-run, else of the last commit. A
// driver replaying a whole history skips input until its sources reach it.
func (e *Engine) Position() []json.RawMessage {
	if e.pending != nil {
		return e.pending.end
	}
	return e.committed
}

// PositionFile names the offsets file that records Position.
func (e *Engine) PositionFile() string {
	if e.pending != nil {
		return fmt.Sprintf("offsets/%d", e.pending.id)
	}
	return fmt.Sprintf("offsets/%d", e.nextBatch-1)
}

// Committed returns, per source, the end offset of the last committed
// batch: no restart ever reads rows at or before it again, so a driver
// holding its input in memory may drop them.
func (e *Engine) Committed() []json.RawMessage { return e.committed }

// QueryID is the id recorded in the checkpoint's metadata.
func (e *Engine) QueryID() string { return e.queryID }

// RunID is this run's id.
func (e *Engine) RunID() string { return e.runID }

// Query is the query as it runs, with the checkpoint's pinned settings.
func (e *Engine) Query() query.Query { return e.q }

// NextBatchID is the id the next planned batch will get.
func (e *Engine) NextBatchID() int64 { return e.nextBatch }

// LastBatchEmpty reports whether the last batch planned read nothing (its
// end offsets were its start offsets): how a driver knows a real-time
// query, whose batches always run, has caught up.
func (e *Engine) LastBatchEmpty() bool { return e.lastEmpty }

// WatermarkMs is the current global watermark.
func (e *Engine) WatermarkMs() int64 { return e.tracker.Current() }

// Stop ends the run cleanly.
func (e *Engine) Stop() error {
	e.dead = errors.New("engine: stopped")
	if e.provider != nil {
		return e.provider.Close()
	}
	return nil
}

// Abandon releases what the engine holds in its process (the state
// stores' working databases, their caches) without a further write to the
// checkpoint: a process that dies takes its memory with it, and a
// simulator that drops the engine after a death must let go of it too (a
// Pebble database is kept alive by its own goroutines, so an engine merely
// dropped after a crash at a filesystem operation kept every store it had
// open for the rest of a sweep). The engine is dead after it; it is safe
// after a crash point, which has released the stores already.
func (e *Engine) Abandon() {
	if e.dead == nil {
		e.dead = errors.New("engine: abandoned")
	}
	if e.provider != nil {
		e.provider.Close()
	}
}

// ProcessAllAvailable runs batches until none is due (Spark's AddData +
// processAllAvailable): the data batch, then every no-data batch.
func (e *Engine) ProcessAllAvailable() error {
	for {
		ran, err := e.RunOnce()
		if err != nil || !ran {
			return err
		}
		if e.q.RealTime() && e.lastEmpty {
			// A real-time batch always runs; Spark's processAllAvailable
			// returns once one ends where it started (noNewData).
			return nil
		}
	}
}

// RunOnce plans and runs at most one batch and reports whether it ran one.
func (e *Engine) RunOnce() (bool, error) {
	if e.dead != nil {
		return false, e.dead
	}
	if p := e.pending; p != nil {
		for i, s := range e.cfg.Sources {
			if a, ok := s.(interface{ Available(json.RawMessage) bool }); ok && !a.Available(p.end[i]) {
				return false, nil // the history has not caught up with the planned batch yet
			}
		}
		e.pending = nil
		return true, e.execute(p.id, p.start, p.end, p.meta, p.lateWmMs, true)
	}
	latest := make([]json.RawMessage, len(e.cfg.Sources))
	hasData := false
	for i, s := range e.cfg.Sources {
		o, err := s.LatestOffset()
		if err != nil {
			return false, err
		}
		latest[i] = o
		if o != nil && !bytes.Equal(o, e.committed[i]) {
			hasData = true
		}
	}
	if !hasData && !e.q.RealTime() {
		if !e.wantsNoDataBatch() {
			return false, nil
		}
		latest = e.committed
	}
	e.lastEmpty = !hasData
	id := e.nextBatch
	meta := checkpoint.Metadata{BatchWatermarkMs: e.tracker.Current(), BatchTimestampMs: e.cfg.Clock.NowMs(), Conf: e.conf, Order: e.confOrder}
	if e.q.RealTime() {
		for i := range latest {
			if latest[i] == nil {
				latest[i] = e.committed[i] // a source with nothing yet: the batch runs anyway
			}
		}
		// Real-time mode writes offsets/N at the end of the batch
		// (markMicroBatchStart skips it; markMicroBatchEnd writes it).
		if id >= MinBatchesToRetain {
			if err := e.ckpt.Purge(id - MinBatchesToRetain); err != nil {
				return false, e.fail(err)
			}
		}
		return true, e.execute(id, e.committed, latest, meta, e.prevWmMs, false)
	}
	if err := e.ckpt.WriteOffsets(id, checkpoint.Offsets{Metadata: meta, Sources: latest}); err != nil {
		return false, e.fail(err)
	}
	if id >= MinBatchesToRetain {
		if err := e.ckpt.Purge(id - MinBatchesToRetain); err != nil {
			return false, e.fail(err)
		}
	}
	if err := e.crashAt(crashpoint.AfterOffsetsWrite, id); err != nil {
		return false, err
	}
	return true, e.execute(id, e.committed, latest, meta, e.prevWmMs, false)
}

// wantsNoDataBatch is §7.1–§7.4: no-data batches are enabled, a batch ran
// in this run, and the watermark moved past the eviction watermark the
// stateful operator last ran with.
func (e *Engine) wantsNoDataBatch() bool {
	return e.q.NoDataBatches && e.ranAny && e.op.Mode != dedup.Batch &&
		e.tracker.HasNodes() && e.tracker.Current() > e.lastEvict
}

func (e *Engine) crashAt(p crashpoint.Point, id int64) error {
	if e.cfg.Crash != nil && e.cfg.Crash(p, id) {
		e.dead = &CrashError{Point: p, BatchID: id}
		if e.provider != nil {
			e.provider.Close()
		}
		return e.dead
	}
	return nil
}

func (e *Engine) fail(err error) error {
	e.dead = err
	return err
}

func (e *Engine) execute(id int64, start, end []json.RawMessage, meta checkpoint.Metadata, lateWmMs int64, replay bool) error {
	trigStart := e.cfg.Clock.NowMs()
	stats := make([]watermark.Stats, len(e.cfg.Sources))
	perSource := make([]int64, len(e.cfg.Sources))
	batches := make([][]row.Row, len(e.cfg.Sources))
	total := 0
	for i, s := range e.cfg.Sources {
		rows, err := s.Rows(start[i], end[i])
		if err != nil {
			var oe *source.OffsetError
			if replay && errors.As(err, &oe) {
				// The range came from the checkpoint's offset log.
				return e.fail(&checkpoint.CorruptError{File: fmt.Sprintf("offsets/%d", id), Msg: fmt.Sprintf("source %d: %v", i, err), Err: err})
			}
			return e.fail(err)
		}
		batches[i] = rows
		total += len(rows)
	}
	input := make([]row.Row, 0, total)
	for i, s := range e.cfg.Sources {
		rows := batches[i]
		hasWm := e.q.Sources[i].Watermark != nil
		for j := range rows {
			r := rows[j]
			if !r.Decoded {
				if err := e.decoder.Decode(r.Data, &r); err != nil {
					return e.fail(fmt.Errorf("%s: row %d of batch %d: %w", s.Description(), j, id, err))
				}
				r.Decoded = true
			}
			r.Source = i
			if e.tooFarAhead(&r, meta) {
				input = append(input, r) // kept in the input for the record; never seen by the watermark
				continue
			}
			if hasWm {
				stats[i].Add(r.EventTime, r.EventTimeNull)
			}
			input = append(input, r)
		}
		perSource[i] = int64(len(rows))
	}

	if st, ok := e.provider.(state.Stamper); ok {
		// The state files of this batch carry its offsets entry and the
		// watermark it will commit, so that a restart can check the logs
		// (whose bytes are Spark's) against them.
		b, err := checkpoint.EncodeOffsets(checkpoint.Offsets{Metadata: meta, Sources: end})
		if err != nil {
			return e.fail(err)
		}
		st.SetBatchStamp(state.BatchStamp{OffsetsCRC: state.Checksum(b), NextWatermarkMs: e.tracker.Peek(stats)})
	}
	res, err := e.runOperator(id, input, lateWmMs, meta)
	if err != nil {
		return e.fail(err)
	}
	rt := e.q.RealTime()
	if !rt {
		if err := e.crashAt(crashpoint.AfterStateCommit, id); err != nil {
			return err
		}
	}
	if e.cfg.BeforeSink != nil {
		e.cfg.BeforeSink(&BatchRecord{BatchID: id, Replay: replay, Input: input, Outcomes: res.Outcomes, Output: res.Output,
			LateWatermarkMs: lateWmMs, WatermarkMs: meta.BatchWatermarkMs, TimestampMs: meta.BatchTimestampMs})
	}
	if err := e.cfg.Sink.AddBatch(sink.Batch{ID: id, Rows: res.Output, QueryID: e.queryID, RunID: e.runID, TimestampMs: meta.BatchTimestampMs}); err != nil {
		return e.fail(err)
	}
	rec := &BatchRecord{BatchID: id, Replay: replay, Input: input, Outcomes: res.Outcomes, Output: res.Output,
		LateWatermarkMs: lateWmMs, WatermarkMs: meta.BatchWatermarkMs, TimestampMs: meta.BatchTimestampMs}
	rec.Progress = e.progress(id, trigStart, input, perSource, start, end, stats, res, meta)
	if e.crashAt(crashpoint.AfterSinkWrite, id) != nil {
		rec.Crashed = crashpoint.AfterSinkWrite
		rec.NextWatermarkMs = e.tracker.Current()
		e.observe(rec)
		return e.dead
	}
	if rt {
		// Real-time mode: the rows reached the sink as they were processed,
		// before the state commit, the offsets and the commit (§18.2). A
		// death at any of these points leaves the sink holding the batch.
		if err := e.realTimeEnd(rec, id, end, meta); err != nil {
			return err
		}
	}
	next := e.tracker.Update(stats)
	rec.NextWatermarkMs = next
	ids, err := e.committedIDs(id)
	if err != nil {
		return e.fail(err)
	}
	if err := e.ckpt.WriteCommit(id, checkpoint.Commit{NextBatchWatermarkMs: next, StateUniqueIDs: ids}); err != nil {
		// The sink already has the batch: report the execution as one that
		// died after the sink write (commits/N may or may not persist); in
		// real-time mode offsets/N is on disk by then.
		rec.Crashed = crashpoint.AfterSinkWrite
		if e.q.RealTime() {
			rec.Crashed = crashpoint.AfterOffsetsWrite
		}
		e.observe(rec)
		return e.fail(err)
	}
	e.ranAny = true
	e.lastEvict = meta.BatchWatermarkMs
	e.committed = end
	e.nextBatch = id + 1
	e.prevWmMs = meta.BatchWatermarkMs
	if e.crashAt(crashpoint.AfterCommit, id) != nil {
		rec.Crashed = crashpoint.AfterCommit
		e.observe(rec)
		return e.dead
	}
	e.observe(rec)
	return nil
}

// committedBatch reports whether commits/n exists. A micro-batch never
// commits two batches with the same offsets, watermark and timestamp; real
// time mode may (an empty batch after a data batch), and such a checkpoint
// restarts as a micro-batch query too.
func (e *Engine) committedBatch(n int64) bool {
	_, err := e.ckpt.ReadCommit(n)
	return err == nil
}

// realTimeEnd is the end of a real-time batch up to its commit: the state
// commit's crash point, then offsets/N with the offsets the batch read to.
func (e *Engine) realTimeEnd(rec *BatchRecord, id int64, end []json.RawMessage, meta checkpoint.Metadata) error {
	died := func(p crashpoint.Point) error {
		rec.Crashed = p
		rec.NextWatermarkMs = e.tracker.Current()
		e.observe(rec)
		return e.dead
	}
	if e.crashAt(crashpoint.AfterStateCommit, id) != nil {
		return died(crashpoint.AfterStateCommit)
	}
	if err := e.ckpt.WriteOffsets(id, checkpoint.Offsets{Metadata: meta, Sources: end}); err != nil {
		// The sink has the rows and the state is committed; offsets/N may
		// or may not persist (a restart deletes it either way).
		rec.Crashed = crashpoint.AfterStateCommit
		rec.NextWatermarkMs = e.tracker.Current()
		e.observe(rec)
		return e.fail(err)
	}
	if e.crashAt(crashpoint.AfterOffsetsWrite, id) != nil {
		return died(crashpoint.AfterOffsetsWrite)
	}
	return nil
}

// tooFarAhead is the query's drop_future_events filter, placed before the
// watermark node: a row whose event time is more than the allowed span
// ahead of the batch's processing time never reaches the watermark or the
// dedup operator.
func (e *Engine) tooFarAhead(r *row.Row, meta checkpoint.Metadata) bool {
	return e.q.DropFutureEvents && !r.EventTimeNull && r.EventTime > (meta.BatchTimestampMs+e.q.DropFutureEventsMs)*1000
}

// runOperator runs the dedup operator over the rows that passed the
// future-events filter and maps the outcomes back onto the whole input.
func (e *Engine) runOperator(id int64, input []row.Row, lateWmMs int64, meta checkpoint.Metadata) (dedup.Result, error) {
	if !e.q.DropFutureEvents {
		return e.op.Run(e.provider, id, input, lateWmMs, meta.BatchWatermarkMs)
	}
	kept := make([]row.Row, 0, len(input))
	idx := make([]int, 0, len(input))
	for i := range input {
		if !e.tooFarAhead(&input[i], meta) {
			kept = append(kept, input[i])
			idx = append(idx, i)
		}
	}
	res, err := e.op.Run(e.provider, id, kept, lateWmMs, meta.BatchWatermarkMs)
	if err != nil {
		return res, err
	}
	all := make([]dedup.Outcome, len(input))
	for i := range all {
		all[i] = dedup.Filtered
	}
	for j, i := range idx {
		all[i] = res.Outcomes[j]
	}
	res.Outcomes = all
	return res, nil
}

func (e *Engine) observe(rec *BatchRecord) {
	if e.cfg.OnBatch != nil {
		e.cfg.OnBatch(rec)
	}
}

func (e *Engine) progress(id, trigStart int64, input []row.Row, perSource []int64, start, end []json.RawMessage,
	stats []watermark.Stats, res dedup.Result, meta checkpoint.Metadata) Progress {
	now := e.cfg.Clock.NowMs()
	dur := now - trigStart
	n := int64(len(input))
	p := Progress{ID: e.queryID, RunID: e.runID, BatchID: id, BatchDuration: dur, NumInputRows: n,
		Timestamp:      row.FormatTimestampMs(trigStart),
		DurationMs:     map[string]int64{"addBatch": dur, "commitOffsets": 0, "getBatch": 0, "latestOffset": 0, "queryPlanning": 0, "triggerExecution": dur, "walCommit": 0},
		Sink:           SinkProgress{Description: e.cfg.Sink.Description(), NumOutputRows: -1},
		StateOperators: []OperatorProgress{}}
	if d, ok := sink.Lookup(e.q.Sink.Kind); ok && d.CountsOutput {
		// A DataSource V2 sink (WriteToDataSourceV2Exec.commitProgress)
		// reports the rows it wrote; foreachBatch, a V1 sink, reports -1.
		p.Sink.NumOutputRows = int64(len(res.Output))
	}
	if e.q.Name != "" {
		name := e.q.Name
		p.Name = &name
	}
	sinceLast := int64(0)
	if e.hasTrig {
		sinceLast = trigStart - e.lastTrig
	}
	e.lastTrig, e.hasTrig = trigStart, true
	if e.hasTrig && sinceLast > 0 {
		p.InputRowsPerSecond = rate(n, sinceLast)
	}
	p.ProcessedRowsPerSecond = rate(n, dur)
	for i, s := range e.cfg.Sources {
		sp := SourceProgress{Description: s.Description(), StartOffset: rawOrNull(start[i]), EndOffset: rawOrNull(end[i]),
			LatestOffset: rawOrNull(end[i]), NumInputRows: perSource[i], ProcessedRowsPerSecond: rate(perSource[i], dur)}
		if sinceLast > 0 {
			sp.InputRowsPerSecond = rate(perSource[i], sinceLast)
		}
		p.Sources = append(p.Sources, sp)
	}
	// The watermark node sits upstream of the sink even when the dedup runs
	// inside foreachBatch, so eventTime is reported for every watermarked query.
	if e.tracker.HasNodes() {
		// Spark reports the stats of the first watermark node in plan order
		// that saw rows this batch (ProgressReporter's collect{...}.headOption),
		// not a merge over nodes: with several sources, that is the first
		// source in query order that had data.
		p.EventTime = map[string]string{"watermark": row.FormatTimestampMs(meta.BatchWatermarkMs)}
		for _, st := range stats {
			if st.Count > 0 {
				p.EventTime["max"] = row.FormatTimestampMs(st.MaxMs)
				p.EventTime["min"] = row.FormatTimestampMs(st.MinMs)
				p.EventTime["avg"] = row.FormatTimestampMs(st.Avg())
				break
			}
		}
	}
	if e.op.Mode != dedup.Batch {
		m := res.Metrics
		p.StateOperators = append(p.StateOperators, OperatorProgress{
			OperatorName: e.q.OperatorName(), NumRowsTotal: m.NumRowsTotal, NumRowsUpdated: m.NumRowsUpdated,
			NumRowsRemoved: m.NumRowsRemoved, MemoryUsedBytes: m.MemoryUsedBytes,
			NumRowsDroppedByWatermark: m.NumRowsDroppedByWatermark, NumShufflePartitions: int64(e.q.ShufflePartitions),
			NumStateStoreInstances: m.NumStateStoreInstances, CustomMetrics: e.lineMetrics(m)})
	}
	return p
}

// lineMetrics are the operator's customMetrics: dedupsim's own set, plus
// those the Spark line the run follows adds (sparkver.Metrics,
// spark-semantics §17.7). With no version, m.Custom unchanged.
func (e *Engine) lineMetrics(m dedup.Metrics) map[string]int64 {
	row, ok := sparkver.Lookup(e.q.SparkVersion)
	if !ok {
		return m.Custom
	}
	lm := row.Metrics
	out := make(map[string]int64, len(m.Custom)+len(lm.Operator)+len(lm.HDFS)+sparkver.InstanceMetricsToReport)
	for k, v := range m.Custom {
		out[k] = v
	}
	for _, name := range lm.Operator {
		switch name {
		case sparkver.MetricRowsReadDuringEviction:
			out[name] = m.NumRowsReadDuringEviction
		default:
			// numRowsIncrementallyRemoved: dedupsim refuses a non-zero
			// incrementalCleanupFactor (§17.6), so nothing is removed
			// incrementally.
			out[name] = 0
		}
	}
	if e.q.StateStore == query.StateStoreMemory {
		// forceSnapshotCount, numSnapshotsAutoRepaired: dedupsim neither
		// forces a snapshot nor repairs one.
		for _, name := range lm.HDFS {
			out[name] = 0
		}
	}
	if lm.SnapshotLastUploaded {
		// -1, the metric's initial value: Spark's providers upload
		// snapshots in the background maintenance task, whose first pass
		// comes a maintenance interval (60 s) after the start; dedupsim
		// writes its snapshots inside the commit and reports none.
		for _, name := range sparkver.SnapshotLastUploadedNames(e.op.Partitions) {
			out[name] = -1
		}
	}
	return out
}
