package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
)

// crashEnv arms a crash point like --crash-at.
const crashEnv = "DEDUPSIM_CRASH_AT"

// wallClock is the engine's clock in a real run.
type wallClock struct{}

func (wallClock) NowMs() int64 { return time.Now().UnixMilli() }

// crashSpec is a parsed --crash-at POINT[:BATCH]; batch -1 is any batch.
type crashSpec struct {
	point engine.CrashPoint
	batch int64
}

func parseCrashAt(s string) (*crashSpec, error) {
	if s == "" {
		return nil, nil
	}
	name, batch, hasBatch := strings.Cut(s, ":")
	c := &crashSpec{point: engine.CrashPoint(name), batch: -1}
	if !slices.Contains(engine.CrashPoints, c.point) {
		var names []string
		for _, p := range engine.CrashPoints {
			names = append(names, string(p))
		}
		return nil, fmt.Errorf("crash point %q: want one of %s, optionally :BATCH", name, strings.Join(names, ", "))
	}
	if hasBatch {
		n, err := strconv.ParseInt(batch, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("crash point %q: batch %q is not a batch id", s, batch)
		}
		c.batch = n
	}
	return c, nil
}

// die ends the process at once, with no cleanup: SIGKILL to itself (what
// a crashed driver looks like to the broker and the checkpoint), and
// os.Exit(137) should the signal somehow not land.
func die(p engine.CrashPoint, id int64) {
	fmt.Fprintf(os.Stderr, "dedupsim engine: crash at %s of batch %d\n", p, id)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	os.Exit(137)
}

// engineLine is the one JSON line printed per batch execution.
type engineLine struct {
	BatchID int64  `json:"batchId"`
	Replay  bool   `json:"replay,omitempty"`
	Input   int    `json:"numInputRows"`
	Output  int    `json:"numOutputRows"`
	RunID   string `json:"runId"`
	Skipped int    `json:"sinkSkippedBatches,omitempty"` // so far in this run
}

func newEngineCmd() *cobra.Command {
	var (
		queryPath, ckptDir, bootstrap, inTopic, outTopic, sinkKind string
		startingOffsets, crashAt, appID                            string
		trigger                                                    time.Duration
		maxBatches                                                 int
		untilIdle                                                  bool
		timeout                                                    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "engine --query QUERY.yaml --checkpoint DIR --bootstrap HOST:PORT --input-topic IN --output-topic OUT",
		Short: "Run the dedup engine as a long-running process over Kafka",
		Long: `engine runs one streaming dedup query as a real driver process: it reads the input topic
(read_committed, Spark's Kafka source offsets), keeps its checkpoint in DIR, and writes every
batch to the output topic with the plain (at-least-once) or transactional (exactly-once) Kafka
sink. Restarted on the same checkpoint it resumes under Spark's restart rules, re-running a
planned batch that has no commit.

It prints one JSON line per batch execution and runs until SIGINT/SIGTERM, --max-batches
executions, or, with --until-idle, the first trigger that finds no new data.

--crash-at POINT[:BATCH] (or the environment variable DEDUPSIM_CRASH_AT) makes the process
kill itself with SIGKILL, no cleanup, at that crash point (of that batch, or of the first
batch reaching it): after-offsets-write, after-state-commit, after-sink-write, after-commit.

Exit status: 0 when stopped, 2 on bad input, 1 on any other failure, 137 (killed) at a crash
point.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if queryPath == "" || ckptDir == "" || bootstrap == "" || inTopic == "" || outTopic == "" {
				return badInput(errors.New("engine: --query, --checkpoint, --bootstrap, --input-topic and --output-topic are required"))
			}
			if sinkKind != "plain" && sinkKind != "transactional" {
				return badInput(fmt.Errorf("engine: --sink %q: want plain or transactional", sinkKind))
			}
			if !cmd.Flags().Changed("crash-at") {
				crashAt = os.Getenv(crashEnv)
			}
			crash, err := parseCrashAt(crashAt)
			if err != nil {
				return badInput(fmt.Errorf("engine: %w", err))
			}
			q, err := query.ParseFile(queryPath)
			if err != nil {
				return badInput(err)
			}
			if len(q.Sources) != 1 {
				return badInput(fmt.Errorf("engine: %s has %d sources; the Kafka engine reads one topic", queryPath, len(q.Sources)))
			}
			if err := os.MkdirAll(ckptDir, 0o755); err != nil {
				return err
			}
			brokers := strings.Split(bootstrap, ",")
			ckpt := fsys.NewOS(ckptDir)

			src, err := kafkasource.New(kafkasource.Config{Brokers: brokers, Topic: inTopic,
				StartingOffsets: startingOffsets, InitialOffsetsFS: ckpt, Timeout: timeout})
			if err != nil {
				return badInput(fmt.Errorf("engine: %w", err))
			}
			defer src.Close()
			base := kafkasink.Config{Brokers: brokers, Topic: outTopic, Timeout: timeout}
			var out interface {
				sink.Sink
				Close()
			}
			var txn *kafkasink.Transactional
			if sinkKind == "transactional" {
				txn, err = kafkasink.NewTransactional(kafkasink.TransactionalConfig{Config: base, AppID: appID})
				out = txn
			} else {
				out, err = kafkasink.NewPlain(kafkasink.PlainConfig{Config: base})
			}
			if err != nil {
				return fmt.Errorf("engine: %w", err)
			}
			defer out.Close()

			enc := json.NewEncoder(cmd.OutOrStdout())
			var executed int
			var runID string
			e, err := engine.Start(engine.Config{
				Query: q, Checkpoint: ckpt, Sources: []source.Source{src}, Sink: out,
				Clock: wallClock{}, NewID: ids.Seeded(rand.Uint64()),
				Crash: func(p engine.CrashPoint, id int64) bool {
					if crash != nil && p == crash.point && (crash.batch < 0 || crash.batch == id) {
						die(p, id)
					}
					return false
				},
				OnBatch: func(r *engine.BatchRecord) {
					executed++
					l := engineLine{BatchID: r.BatchID, Replay: r.Replay, Input: len(r.Input), Output: len(r.Output), RunID: runID}
					if txn != nil {
						l.Skipped = txn.Skipped
					}
					enc.Encode(l)
				},
			})
			if err != nil {
				return fmt.Errorf("engine: %w", err)
			}
			defer e.Stop()
			runID = e.RunID()
			for _, w := range e.Warnings() {
				fmt.Fprintln(cmd.ErrOrStderr(), "dedupsim engine: warning: "+w)
			}
			if err := src.Resume(e.Position()[0]); err != nil {
				return fmt.Errorf("engine: %w", err)
			}

			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			interval := trigger
			if interval <= 0 {
				interval = 100 * time.Millisecond // idle poll
			}
			for {
				began := time.Now()
				ran, err := e.RunOnce()
				if err != nil {
					return fmt.Errorf("engine: %w", err)
				}
				if maxBatches > 0 && executed >= maxBatches {
					return nil
				}
				if !ran && untilIdle {
					return nil
				}
				wait := interval - time.Since(began)
				if ran && trigger <= 0 {
					wait = 0 // no trigger interval: run the next batch at once
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(max(wait, 0)):
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&queryPath, "query", "", "query YAML (one source)")
	f.StringVar(&ckptDir, "checkpoint", "", "checkpoint directory (created when missing)")
	f.StringVar(&bootstrap, "bootstrap", "", "Kafka bootstrap addresses, comma-separated")
	f.StringVar(&inTopic, "input-topic", "", "topic the source reads")
	f.StringVar(&outTopic, "output-topic", "", "topic the sink writes")
	f.StringVar(&sinkKind, "sink", "transactional", "plain (at-least-once) or transactional (exactly-once)")
	f.StringVar(&appID, "app-id", "", "transactional sink's app id (default: the checkpoint's query id)")
	f.StringVar(&startingOffsets, "starting-offsets", "earliest", "where a new checkpoint starts: earliest, latest or a JSON offset")
	f.DurationVar(&trigger, "trigger-interval", 0, "processing-time trigger interval (0: next batch as soon as the last ends)")
	f.StringVar(&crashAt, "crash-at", "", "crash point POINT[:BATCH] at which the process kills itself (also "+crashEnv+")")
	f.IntVar(&maxBatches, "max-batches", 0, "stop after this many batch executions (0: no limit)")
	f.BoolVar(&untilIdle, "until-idle", false, "stop at the first trigger with no new data")
	f.DurationVar(&timeout, "kafka-timeout", 30*time.Second, "bound on one Kafka call of the source or sink")
	return cmd
}
