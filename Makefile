# dedupsim: `make demo` runs the main job, `make test` runs every test.
GO       ?= go
BIN      := bin/dedupsim
FUZZTIME ?= 10s

.PHONY: test-prefetch bench-scale build-pprof delta-fetch delta-fixtures redteam diagnose-fixtures inspect-fixtures all build demo test check bench-smoke test-kafka test-kafka-if-java kafka-fetch kafka-image test-containers test-containers-if-docker bench bench-kafka bench-10m lint fuzz clean spark-env test-spark test-spark-if-java test-spark-line test-spark-matrix bench-spark

all: build

build:
	$(GO) build -o $(BIN) ./cmd/dedupsim

# The same binary with --cpuprofile and --memprofile (or DEDUPSIM_CPUPROFILE,
# DEDUPSIM_MEMPROFILE) on every verb: docs/performance.md, "Profiling a run".
build-pprof:
	$(GO) build -tags pprof -o bin/dedupsim-pprof ./cmd/dedupsim

# The main job: every scenario of the embedded catalogue on the simulator,
# checked against its expected verdict, with reports in out/demo; the kill -9
# scenario against Kafka (kfake: in process, no Java) with the engine as a
# child process killed with SIGKILL about 18 times; then the exec examples,
# each printed as a per-batch table.
demo: build
	./$(BIN) run --out out/demo
	./$(BIN) run --kafka kfake --live-trigger 100ms --out out/demo-kafka scenarios/live/kill-anywhere-table.yaml
	@for ex in examples/*/; do \
	  echo "=== $$ex: $$(head -n 1 $$ex/README.txt)"; \
	  ./$(BIN) exec --format table --query $$ex/query.yaml --input $$ex/steps.jsonl || exit 1; \
	  echo; \
	done

# Every suite, each timed, in scripts/test-suites.sh: lint, the unit,
# golden, property and fuzz-seed tests, bench-smoke, the real-broker suite,
# the container suite and the real-Spark subset; a table of their times is
# printed at the end (and kept in out/suite-times.txt). A failing suite does
# not stop the others; make test fails if any did.
test:
	@MAKE="$(MAKE)" GO="$(GO)" ./scripts/test-suites.sh

# The inner loop: lint and the unit tests (no Kafka, Docker or Spark), with
# Go's test cache; under 5 minutes on two cores once the build cache is warm.
check: lint
	RAPID_NOFAILFILE=1 $(GO) test -timeout 20m ./...

# The real-broker suite needs Java 17+ and Maven. Without them it is skipped
# loudly, except under CI=true, where a missing broker is a failure.
test-kafka-if-java:
	@if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory test-kafka; \
	elif [ "$$CI" = "true" ]; then \
	  echo "FAIL: the real Kafka suite needs Java 17+ and Maven (make test-kafka)"; exit 1; \
	else \
	  echo "!!! SKIPPING the real Kafka suite: java or mvn not found; install Java 17+ and Maven, then run make test-kafka"; \
	fi

# Apache Kafka runtime jars (pinned in scripts/kafka/pom.xml) from Maven
# Central into .cache/kafka/lib for the local broker; skipped when present.
kafka-fetch:
	./scripts/kafka-fetch.sh

# The live tests against a real Kafka broker (a JVM started by
# live.StartLocal; needs mvn and Java 17+): the crash suites, 20 SIGKILLs of
# the engine process per sink, the live scenarios (a broker restart among
# them), and leader-kill, broker-pause and broker-partition on three broker
# JVMs, each in a network namespace of its own (as root with iproute2's ip;
# otherwise broker-partition is skipped loudly, a failure under CI). -p 1: one
# Kafka cluster at a time. `make test` runs it when Java is there.
test-kafka: kafka-fetch
	DEDUPSIM_KAFKA=local $(GO) test -p 1 ./live/ ./cmd/dedupsim/ -run Local -count=1 -v

# The Kafka 4.1.1 image --kafka testcontainers runs where no image registry
# is reachable (DEDUPSIM_KAFKA_IMAGE=dedupsim/kafka:4.1.1): a Debian base
# with Java 17 made by debootstrap from the machine's apt mirror, plus the
# kafka-fetch jars; skipped when the image exists. Needs root and Docker.
kafka-image:
	./scripts/kafka-image.sh

# The container suite: the kill -9 suite (20 SIGKILLs per sink), the live
# scenarios and a broker restart the container way (docker stop/start on
# its volume), through --kafka testcontainers. Starts dockerd when none runs
# and the user is root, builds the image, removes every labelled container,
# network and volume before and after (Ryuk disabled: no registry).
test-containers: kafka-fetch
	./scripts/test-containers.sh

# Without Docker (or, outside CI, with an engine that is not running and
# cannot be started) the container suite is skipped loudly, except under
# CI=true, where that is a failure (.ci/run installs docker.io).
test-containers-if-docker:
	@if command -v docker >/dev/null 2>&1 || [ -n "$$DOCKER_HOST" ]; then \
	  TEST_CONTAINERS_OPTIONAL=1 $(MAKE) --no-print-directory test-containers; \
	elif [ "$$CI" = "true" ]; then \
	  echo "FAIL: the container suite needs Docker (make test-containers)"; exit 1; \
	else \
	  echo "!!! SKIPPING the container suite: docker not found; install Docker (docker.io), then run make test-containers"; \
	fi

# Real Apache Spark as the oracle (docs/conformance.md). spark-env installs
# the pinned pyspark into .cache/spark/venv-$(SPARK_VERSION) (git-ignored;
# skipped when present; SPARK_FIND_LINKS=DIR offers a local copy of the
# package to pip). test-spark compares the engine with Spark on every golden
# case the runner can express and on SPARK_TRACES random traces drawn from
# SPARK_SEED; a disagreement prints a shrunk, ready-to-run repro folder.
# The venvs live in DEDUPSIM_SPARK_CACHE when it is set (a cache shared by
# several checkouts), else in .cache/spark.
SPARK_VERSION ?= 4.1.1
SPARK_TRACES  ?= 300
SPARK_SEED    ?= 1
SPARK_CALIBRATION ?= 1
SPARK_CACHE   ?= $(if $(DEDUPSIM_SPARK_CACHE),$(DEDUPSIM_SPARK_CACHE),$(CURDIR)/.cache/spark)
SPARK_PYTHON   = $(SPARK_CACHE)/venv-$(SPARK_VERSION)/bin/python

spark-env:
	@DEDUPSIM_SPARK_CACHE=$(SPARK_CACHE) ./scripts/spark-env.sh $(SPARK_VERSION) >/dev/null

# Delta Lake's jars for the table, merge and append sinks
# (docs/conformance.md, "Delta Lake"): the release conform/sparkrunner/delta.tsv
# names for SPARK_VERSION's line, copied by mvn into DELTA_CACHE (git-ignored;
# two jars, about 10 MB, kept once complete). A line no Delta release serves
# is said loudly; the suite then skips the sink cases with that reason.
DELTA_CACHE ?= $(if $(DEDUPSIM_DELTA_CACHE),$(DEDUPSIM_DELTA_CACHE),$(CURDIR)/.cache/delta)

delta-fetch:
	@DEDUPSIM_DELTA_CACHE=$(DELTA_CACHE) ./conform/sparkrunner/delta-fetch.sh $(SPARK_VERSION) >/dev/null || \
	  { rc=$$?; [ $$rc -eq 2 ] && echo "!!! no Delta Lake jars for Spark $(SPARK_VERSION): the table, merge and append sink cases are skipped" || exit $$rc; }

test-spark: spark-env delta-fetch
	DEDUPSIM_DELTA_CACHE=$(DELTA_CACHE) DEDUPSIM_SPARK_PYTHON=$(SPARK_PYTHON) SPARK_TRACES=$(SPARK_TRACES) SPARK_SEED=$(SPARK_SEED) SPARK_CALIBRATION=$(SPARK_CALIBRATION) \
	  $(GO) test ./conform/ ./cmd/dedupsim/ ./sizing/ -run '^(TestSpark|TestExecEngineSpark|TestExecEngineSparkDelta|TestSparkCalibration)$$' -count=1 -v -timeout 60m

# One Spark line (test-spark-line) and all of them (test-spark-matrix,
# scripts/spark-matrix.sh): the golden cases and SPARK_MATRIX_TRACES random
# traces per line, only the conformance suite (no exec or calibration
# tests), the lines one after another; the matrix prints a table version x
# agree/disagree/known/skipped (docs/conformance.md, "Across Spark versions").
SPARK_LINES ?= 3.5.9 4.0.5 4.1.4 4.2.1 4.3.0
SPARK_MATRIX_TRACES ?= 30

test-spark-line: spark-env delta-fetch
	DEDUPSIM_DELTA_CACHE=$(DELTA_CACHE) DEDUPSIM_SPARK_PYTHON=$(SPARK_PYTHON) SPARK_TRACES=$(SPARK_MATRIX_TRACES) SPARK_SEED=$(SPARK_SEED) \
	  SPARK_OUT=$(CURDIR)/out/spark-matrix/$(SPARK_VERSION) $(GO) test ./conform/ -run '^TestSpark$$' -count=1 -v -timeout 60m

test-spark-matrix:
	@MAKE="$(MAKE)" SPARK_LINES="$(SPARK_LINES)" SPARK_MATRIX_TRACES=$(SPARK_MATRIX_TRACES) SPARK_SEED=$(SPARK_SEED) ./scripts/spark-matrix.sh

# make test runs the golden cases and the first SPARK_TEST_TRACES random
# traces of seed 1 (a deterministic subset that keeps make test within its
# time on two shared cores); make test-spark runs the full 300, and sizing's
# TestSparkCalibration, which re-measures one key shape per store on Spark
# (scripts/sizing/calibrate.py, about 35 s) and checks size's figure inside
# the measured range; make test's subset leaves it out (SPARK_CALIBRATION=0).
# Without Python or Java the Spark suite is skipped loudly, except under
# CI=true, where that is a failure.
SPARK_TEST_TRACES ?= 100
# make test also runs the newest line (golden cases + SPARK_TEST_NEWEST_TRACES
# random traces): 4.3.0 agrees on the golden cases and 30 random traces with
# no unexplained difference (docs/conformance.md, "Across Spark versions");
# measured: golden + 10 adds 160 s of wall time on two shared cores.
SPARK_TEST_NEWEST ?= 4.3.0
SPARK_TEST_NEWEST_TRACES ?= 10
# ... and the 4.1 line at its newest patch PyPI serves (measured on 4.1.4:
# golden + 100 traces agree 228, disagree 0, known 4, skipped 42; the exec
# --engine spark tests pass); make test-spark keeps SPARK_VERSION.
SPARK_TEST_LINE41 ?= 4.1.4

# What the Kafka and Spark suites download, fetched ahead:
# scripts/test-suites.sh starts it in the background beside lint and the
# unit tests (which keep the CPU busy while these wait on the network and
# the disk), and waits for it before the kafka suite. It needs nothing the
# suites do not: a fetch that fails here is done again by its suite, which
# then says why.
test-prefetch:
	@if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory kafka-fetch; \
	fi
	@if command -v java >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then \
	  for v in $(SPARK_TEST_LINE41) $(SPARK_TEST_NEWEST); do \
	    $(MAKE) --no-print-directory spark-env delta-fetch SPARK_VERSION=$$v || exit 1; \
	  done; \
	fi

test-spark-if-java:
	@if command -v java >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory test-spark SPARK_VERSION=$(SPARK_TEST_LINE41) SPARK_TRACES=$(SPARK_TEST_TRACES) SPARK_CALIBRATION=0 && \
	  $(MAKE) --no-print-directory test-spark-line SPARK_VERSION=$(SPARK_TEST_NEWEST) SPARK_MATRIX_TRACES=$(SPARK_TEST_NEWEST_TRACES); \
	elif [ "$$CI" = "true" ]; then \
	  echo "FAIL: the real-Spark suite needs Java 17 and Python 3 (make test-spark)"; exit 1; \
	else \
	  echo "!!! SKIPPING the real-Spark suite: java or python3 not found; install Java 17 and Python 3, then run make test-spark"; \
	fi

# Real Spark test data for diagnose and inspect (docs/diagnose.md): one small
# query per case and state store (about 1-3 min each), then the tests that
# check diagnose's findings on every shape and inspect's key counts against
# what Spark's own statestore reader said. make test uses the committed copy.
diagnose-fixtures: spark-env
	DEDUPSIM_SPARK_CACHE=$${DEDUPSIM_SPARK_CACHE:-$(CURDIR)/.cache/spark} SPARK_VERSION=$(SPARK_VERSION) ./scripts/diagnose/fixtures.sh
	$(GO) test ./diagnose/... ./inspect/ -count=1

# Real Spark checkpoints in state checkpoint format v2 and in real-time mode
# (pyspark 4.3.0, about 1-2 min per case) with Spark's statestore reader's
# view of each, then inspect's agreement test. make test uses the committed
# copy (inspect/testdata/spark-v2).
inspect-fixtures:
	DEDUPSIM_SPARK_CACHE=$${DEDUPSIM_SPARK_CACHE:-$(CURDIR)/.cache/spark} SPARK_VERSION=4.3.0 ./scripts/inspect/fixtures.sh
	$(GO) test ./inspect/ -count=1

# Real Delta Lake tables for inspect (docs/delta.md): pyspark with the Delta
# jars writes them (scripts/delta/fixtures.py, about 1-3 min), each with
# Spark's own read as truth.json; then the tests that hold inspect to it.
# make test uses the committed copy.
delta-fixtures: spark-env delta-fetch
	DEDUPSIM_SPARK_CACHE=$(SPARK_CACHE) DEDUPSIM_DELTA_CACHE=$(DELTA_CACHE) SPARK_VERSION=$(SPARK_VERSION) ./scripts/delta/fixtures.sh
	$(GO) test ./inspect/delta/ -count=1

# The simulator at scale as a user runs it (scenarios/scale/, issue 32):
# wall and CPU time and peak RSS of `dedupsim run` at 1 M and 10 M copies
# (the 10 M run takes about a minute and 2.5 GB on two cores). The peak RSS
# comes from /usr/bin/time (Debian's time package); without it, bash's time.
# Each run's summary is in out/bench-scale/<size>.txt, its reports beside.
bench-scale: build
	@mkdir -p out/bench-scale
	@for s in 1m 10m; do \
	  if [ -x /usr/bin/time ]; then \
	    /usr/bin/time -f "scale-$$s: %e s wall, %U s user, %S s system, %M KB max RSS" ./$(BIN) run -q --out out/bench-scale/$$s scenarios/scale/scale-$$s.yaml >out/bench-scale/$$s.txt || exit 1; \
	  else \
	    echo "scale-$$s (no /usr/bin/time for the peak RSS: apt-get install time)"; \
	    bash -c "time ./$(BIN) run -q --out out/bench-scale/$$s scenarios/scale/scale-$$s.yaml >out/bench-scale/$$s.txt" || exit 1; \
	  fi; \
	done

# Exec throughput of dedupsim and of Spark on one 500k-row trace, as a ratio.
bench-spark:
	@mkdir -p out
	DEDUPSIM_SPARK_PYTHON=$(SPARK_PYTHON) $(GO) test ./conform/ -run '^$$' -bench '^BenchmarkExecVsSpark$$' -benchtime 1x -timeout 30m | tee out/bench-spark.txt
	@grep -h 'faster' out/bench-spark.txt | sed 's/^[[:space:]]*bench_test.go:[0-9]*: /exec throughput, same trace: /'

# Engine rows/s per API on the memory and Pebble stores, restart time and
# bytes per key (1 M keys; bench-10m for 10 M), then the simulator, printed
# as one table (the raw output stays in out/bench.txt); RunScale is the
# simulator at scale, scenarios/scale/scale-1m.yaml's shape (1 M copies).
bench:
	@mkdir -p out
	DEDUPSIM_SCALE_RATE=5000 DEDUPSIM_SCALE_SECONDS=200 $(GO) test -run '^$$' -bench 'Engine|Store|Sim|RunScale' -benchtime 1x -benchmem ./engine/... ./sim/ | tee out/bench.txt
	@$(GO) run scripts/benchtable.go < out/bench.txt
	@# diagnose over 20 k, 80 k and 1 M progress records (a year of 30 s triggers):
	@# ns/record must not grow with the count; cpu-s/op and peak-heap-MiB beside it
	$(GO) test -run '^$$' -bench Diagnose -benchtime 1x -benchmem ./diagnose/ | tee out/bench-diagnose.txt
	@if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory bench-kafka; \
	else \
	  echo "!!! SKIPPING the Kafka benchmark: java or mvn not found (make bench-kafka)"; \
	fi
	@if [ -x $(SPARK_PYTHON) ]; then $(MAKE) --no-print-directory bench-spark; else echo "!!! SKIPPING the Spark speed comparison: no pyspark venv (make spark-env)"; fi

# Every benchmark that needs neither Kafka nor Spark, run once at its
# smallest size (100 k engine keys), so that a benchmark broken by a change
# fails make test instead of the next make bench; the figures mean nothing.
bench-smoke:
	@mkdir -p out
	DEDUPSIM_BENCH_KEYS=100000 $(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./engine/... ./sim/... ./cmd/dedupsim/ ./execpipe/ > out/bench-smoke.txt 2>&1 || { grep -v '^ok\|^PASS\|^goos\|^goarch\|^pkg\|^cpu' out/bench-smoke.txt; exit 1; }
	@# diagnose at 20 k and 80 k records (-short leaves out the 1 M run of make bench)
	$(GO) test -count=1 -short -run '^$$' -bench Diagnose -benchtime 1x ./diagnose/ > out/bench-smoke-diagnose.txt 2>&1 || { cat out/bench-smoke-diagnose.txt; exit 1; }

# End to end through the local real Kafka broker with the transactional sink.
bench-kafka: kafka-fetch
	@mkdir -p out
	DEDUPSIM_KAFKA=local $(GO) test -run '^$$' -bench LocalKafka -benchtime 1x ./live/ | tee out/bench-kafka.txt
	@$(GO) run scripts/benchtable.go < out/bench-kafka.txt

bench-10m:
	@mkdir -p out
	DEDUPSIM_BENCH_KEYS=10000000 $(GO) test -timeout 60m -run '^$$' -bench 'Engine|StoreRestart/.*/fromSnapshot' -benchtime 1x -benchmem ./engine/ | tee out/bench-10m.txt
	@$(GO) run scripts/benchtable.go < out/bench-10m.txt

# gofmt, go vet, staticcheck (its default checks; a finding kept on purpose
# carries a //lint:ignore comment with its reason) and goimports' grouping
# (the standard library in a group of its own). The two linters are pinned
# in tools/go.mod, a module of their own, so that their dependencies never
# change the versions dedupsim builds with.
LINT_TOOL = $(GO) tool -modfile=$(CURDIR)/tools/go.mod
GO_FILES  = $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')

lint:
	@out=$$(gofmt -l $(GO_FILES)); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(LINT_TOOL) staticcheck ./...
	@out=$$($(LINT_TOOL) goimports -l $(GO_FILES)) || exit 1; \
	  if [ -n "$$out" ]; then echo "goimports: regroup the imports (the standard library in a group of its own):"; echo "$$out"; exit 1; fi

# Short runs of every fuzz target (go test -fuzz takes one target at a time).
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash scripts/fuzz.sh

# The red-team suite: every TestRedteam* (issue 25's wrong or dangerous
# answers, one test each), which a future change must pass.
redteam:
	$(GO) test -count=1 -run Redteam ./...

clean:
	rm -rf bin
