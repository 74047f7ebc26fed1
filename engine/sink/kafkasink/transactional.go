package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
)

// MarkerTopicSuffix names the default marker topic: Topic + suffix.
const MarkerTopicSuffix = "-dedupsim-commits"

// TransactionalConfig configures a Transactional sink.
type TransactionalConfig struct {
	Config
	// AppID identifies the writer across restarts, like Delta's txnAppId.
	// Empty means the batch's query id, which is stable for the life of the
	// checkpoint; the sink then opens at its first batch.
	AppID string
	// PerRun makes the app id the run id, new at every start: the seed
	// article's mistake, which silently disables replay protection (and
	// fencing, since the transactional id changes with it).
	PerRun bool
	// MarkerTopic holds the commit markers (default Topic +
	// "-dedupsim-commits"). The sink creates it, one partition, compacted,
	// when it is missing.
	MarkerTopic string
	// TransactionalID overrides the transactional id, by default
	// "dedupsim-" + app id.
	TransactionalID string
	// TransactionTimeout is the broker-side transaction timeout (default:
	// franz-go's, 40 s).
	TransactionTimeout time.Duration
}

// Transactional is the exactly-once sink. A batch is one transaction:
// its rows to Topic plus one marker record (key app id, value the batch id
// in decimal, header dedupsim.batchId) to MarkerTopic, committed together.
//
// Opening, at New when AppID is set or else at the first batch, does two
// things in this order: it initializes the transactional producer, which
// bumps the producer epoch for the transactional id, fences any older
// instance and aborts its open transaction; then it reads MarkerTopic with
// read_committed up to its high watermark, waiting for transactions that
// other app ids have open in it to end (up to Timeout), and takes the
// highest batch id recorded for the app id. Reading after fencing
// matters: no older instance can commit a batch once the markers have
// been read. Reading to the high watermark rather than the last stable
// offset matters when app ids share a marker topic: a marker committed
// after another app's still-open transaction lies beyond the LSO.
//
// A batch whose id is at or below that is skipped (counted in Skipped).
// Any failure aborts the transaction (when the producer still can) and
// leaves the sink unusable: the outcome of a failed commit is unknown, so
// only a new instance, which re-reads the markers, knows what is
// committed. The engine treats a sink error as fatal anyway.
//
// Markers live in their own topic, not as flagged records in Topic, so
// consumers of Topic see only rows, and recovery reads a small compacted
// topic instead of the whole output.
type Transactional struct {
	cfg TransactionalConfig

	app       string
	cl        *kgo.Client
	committed int64 // highest committed batch id for app, -1 when none
	broken    error

	// Skipped counts batches ignored as already committed.
	Skipped int
	// Commits counts transactions this instance committed.
	Commits int
}

// NewTransactional creates a Transactional sink; with an AppID it opens it
// at once (fencing older instances), otherwise at the first batch.
func NewTransactional(cfg TransactionalConfig) (*Transactional, error) {
	if err := cfg.check("transactional"); err != nil {
		return nil, err
	}
	if cfg.MarkerTopic == "" {
		cfg.MarkerTopic = cfg.Topic + MarkerTopicSuffix
	}
	if cfg.MarkerTopic == cfg.Topic {
		return nil, errors.New("kafkasink: transactional: the marker topic must differ from the output topic")
	}
	s := &Transactional{cfg: cfg, committed: -1}
	if cfg.AppID != "" && !cfg.PerRun {
		if err := s.open(cfg.AppID); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Transactional) Description() string {
	app := s.app
	if app == "" {
		app = s.cfg.AppID
	}
	return "KafkaTransactionalSink[" + s.cfg.Topic + ", txnAppId=" + app + "]"
}

// AppID is the app id the sink opened with ("" before it opened).
func (s *Transactional) AppID() string { return s.app }

// LastCommitted is the highest batch id known committed for the app id,
// -1 when none.
func (s *Transactional) LastCommitted() int64 { return s.committed }

func (s *Transactional) appID(b sink.Batch) string {
	switch {
	case s.cfg.PerRun:
		return b.RunID
	case s.cfg.AppID != "":
		return s.cfg.AppID
	}
	return b.QueryID
}

func (s *Transactional) txnID(app string) string {
	if s.cfg.TransactionalID != "" {
		return s.cfg.TransactionalID
	}
	return "dedupsim-" + app
}

func (s *Transactional) open(app string) error {
	if app == "" {
		return errors.New("kafkasink: transactional: empty app id")
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	opts := append(s.cfg.baseOpts(), kgo.TransactionalID(s.txnID(app)))
	if s.cfg.TransactionTimeout > 0 {
		opts = append(opts, kgo.TransactionTimeout(s.cfg.TransactionTimeout))
	}
	cl, err := kgo.NewClient(append(opts, s.cfg.ClientOpts...)...)
	if err != nil {
		return fmt.Errorf("kafkasink: %w", err)
	}
	if err := s.ensureMarkerTopic(ctx, cl); err != nil {
		cl.Close()
		return err
	}
	// Fence first, then read: see the type's comment.
	if _, _, err := cl.ProducerID(ctx); err != nil {
		cl.Close()
		return fmt.Errorf("kafkasink: init transactional producer %q: %w", s.txnID(app), err)
	}
	readOpts := append(s.cfg.baseOpts(), s.cfg.ClientOpts...)
	recs, err := kafkasource.ReadAllSettled(ctx, readOpts, s.cfg.MarkerTopic)
	if err != nil {
		cl.Close()
		return fmt.Errorf("kafkasink: read commit markers: %w", err)
	}
	last := int64(-1)
	for _, r := range recs {
		if string(r.Key) != app {
			continue
		}
		id, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil {
			cl.Close()
			return fmt.Errorf("kafkasink: marker %s/%d@%d: value %q is not a batch id", r.Topic, r.Partition, r.Offset, r.Value)
		}
		last = max(last, id)
	}
	s.app, s.cl, s.committed = app, cl, last
	return nil
}

func (s *Transactional) ensureMarkerTopic(ctx context.Context, cl *kgo.Client) error {
	compact := "compact"
	_, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, s.cfg.MarkerTopic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafkasink: create marker topic %s: %w", s.cfg.MarkerTopic, err)
	}
	return nil
}

// AddBatch commits the batch in one transaction unless the app id already
// committed it.
func (s *Transactional) AddBatch(b sink.Batch) error {
	if s.broken != nil {
		return fmt.Errorf("%w (%v)", errBroken, s.broken)
	}
	app := s.appID(b)
	if s.cl == nil {
		if err := s.open(app); err != nil {
			return err
		}
	} else if app != s.app {
		return fmt.Errorf("kafkasink: batch %d has app id %q but the sink opened with %q", b.ID, app, s.app)
	}
	if b.ID <= s.committed {
		s.Skipped++
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if err := s.cl.BeginTransaction(); err != nil {
		return s.fail(b, "begin", err)
	}
	recs := append(s.cfg.records(b), &kgo.Record{
		Topic:   s.cfg.MarkerTopic,
		Key:     []byte(app),
		Value:   []byte(strconv.FormatInt(b.ID, 10)),
		Headers: []kgo.RecordHeader{{Key: HeaderBatchID, Value: []byte(strconv.FormatInt(b.ID, 10))}},
	})
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return s.abort(b, "produce", err)
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return s.abort(b, "commit", err)
	}
	s.committed = b.ID
	s.Commits++
	return nil
}

// abort tries to abort the open transaction, then breaks the sink. After a
// failed commit only an abort may be tried (franz-go's EndTransaction
// doc); if the producer was fenced the abort fails too, which is fine: the
// fencing instance owns the transactional id now.
func (s *Transactional) abort(b sink.Batch, stage string, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	err := s.cl.AbortBufferedRecords(ctx)
	if err == nil {
		err = s.cl.EndTransaction(ctx, kgo.TryAbort)
	}
	if err != nil {
		cause = fmt.Errorf("%w (abort: %v)", cause, err)
	}
	return s.fail(b, stage, cause)
}

func (s *Transactional) fail(b sink.Batch, stage string, err error) error {
	err = fmt.Errorf("kafkasink: batch %d: %s transaction (app id %q): %w", b.ID, stage, s.app, err)
	s.broken = err
	return err
}

// Close releases the client. An open transaction is left to the broker,
// which aborts it at the transaction timeout or when a new instance with
// the same transactional id opens.
func (s *Transactional) Close() {
	if s.cl != nil {
		s.cl.Close()
	}
}

var _ sink.Sink = (*Transactional)(nil)
