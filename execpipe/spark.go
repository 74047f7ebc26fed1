package execpipe

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dedupsim/dedupsim/conform"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/internal/exitcode"
)

// runSpark is exec --engine spark: the files are checked by dedupsim's
// parsers (exit 2), then run on Spark with conform's runner; the records go
// to --out or standard output, as exec writes them.
func runSpark(o Options) (err error) {
	if o.Format != "jsonl" {
		return exitcode.Bad(fmt.Errorf("exec: --format %s: --engine spark writes jsonl only", o.Format))
	}
	rawQuery, err := os.ReadFile(o.QueryPath)
	if err != nil {
		return exitcode.Bad(fmt.Errorf("exec: --query: %w", err))
	}
	q, err := query.Parse(o.QueryPath, rawQuery)
	if err != nil {
		return exitcode.Bad(err)
	}
	if err := applySparkVersion(q, o.SparkVersion); err != nil {
		return err
	}
	// The runner reads a MemoryStream (no real-time source) into foreachBatch
	// or Delta sinks: neither real-time mode nor Spark's Kafka sink is
	// something it can run, and running the query otherwise would compare
	// another query.
	if q.RealTime() {
		return exitcode.Bad(fmt.Errorf("exec: --engine spark: %s: real-time mode (trigger: {real_time: ...}) is not run on Spark by exec: the runner's source has no real-time mode; run it with --engine dedupsim (spark-semantics §18 gives what was measured on Spark)", o.QueryPath))
	}
	if q.Sink.Kind == sink.KindKafka {
		return exitcode.Bad(fmt.Errorf("exec: --engine spark: %s: sink kind kafka is not run on Spark by exec (it needs a Kafka cluster); run it with --engine dedupsim", o.QueryPath))
	}
	data, err := os.ReadFile(o.InputPath)
	if err != nil {
		return exitcode.Bad(fmt.Errorf("exec: --input: %w", err))
	}
	st, err := steps.Parse(o.InputPath, data, q)
	if err != nil {
		return exitcode.Bad(err)
	}
	env, err := sparkEnvFromEnviron(q.SparkVersion.Full)
	if err != nil {
		return exitcode.Bad(fmt.Errorf("exec: %w", err))
	}
	out, err := createOut(o.OutPath)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.discard()
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := conform.ExecSpark(ctx, env, q, rawQuery, st, o.CheckpointDir)
	if err != nil {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: Spark: %w", err)}
	}
	if res.Unsupported != "" {
		return exitcode.Bad(fmt.Errorf("exec: %s: not expressible on Spark: %s", o.InputPath, res.Unsupported))
	}
	if _, err := out.Write(batchLines(res.Raw)); err != nil {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: write %s: %w", out.name, err)}
	}
	if err := out.commit(); err != nil {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: write %s: %w", out.name, err)}
	}
	if res.Err != "" {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: Spark: %s", res.Err)}
	}
	return nil
}

// batchLines keeps the batch records and the table line of the runner's
// output; its final error line becomes exec's error message instead.
func batchLines(raw []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.SplitAfter(raw, []byte("\n")) {
		if bytes.HasPrefix(line, []byte(`{"batchId"`)) || bytes.HasPrefix(line, []byte(`{"table"`)) {
			b.Write(line)
		}
	}
	return b.Bytes()
}

// sparkEnvFromEnviron reads which Spark exec --engine spark runs. A
// query's full Spark version (spark_version or --spark-version, such as
// 4.3.0) picks the pyspark version when DEDUPSIM_SPARK_VERSION is unset;
// set to another version it is refused. A bare line (4.3) picks nothing.
func sparkEnvFromEnviron(queryVersion string) (conform.SparkEnv, error) {
	env := conform.SparkEnv{Python: os.Getenv("DEDUPSIM_SPARK_PYTHON"), Version: os.Getenv("DEDUPSIM_SPARK_VERSION"), Log: os.Stderr,
		DeltaJars: os.Getenv("DEDUPSIM_DELTA_JARS")}
	if env.Python != "" {
		return env, nil
	}
	if strings.Count(queryVersion, ".") == 2 {
		if env.Version != "" && env.Version != queryVersion {
			return env, fmt.Errorf("DEDUPSIM_SPARK_VERSION is %s but the query follows Spark %s: give one, or the same", env.Version, queryVersion)
		}
		env.Version = queryVersion
	}
	if env.Version == "" {
		env.Version = conform.DefaultSparkVersion
	}
	if err := conform.CheckVersion(env.Version); err != nil {
		return env, fmt.Errorf("DEDUPSIM_SPARK_VERSION: %w", err)
	}
	d, err := conform.DefaultCacheDir()
	if err != nil {
		return env, err
	}
	env.CacheDir = d
	return env, nil
}
