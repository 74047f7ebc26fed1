#!/usr/bin/env bash
# test-suites.sh: every suite of `make test`, one after another, each timed
# (the downloads of the later suites go on in the background meanwhile);
# then a table of what ran, how long it took and how it ended. A suite that
# fails does not stop the others (one run shows every failure); the script
# exits 1 when any failed.
#
#   scripts/test-suites.sh            (make test calls it; MAKE and GO are honoured)
#
# The table is printed last and also written to out/suite-times.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
mkdir -p out
rm -f out/prefetch.status
rows=()
failed=0
began=$(date +%s)

suite() {
  local name=$1
  shift
  local t0 t1 rc status
  echo "=== suite $name: $*"
  t0=$(date +%s)
  "$@"
  rc=$?
  t1=$(date +%s)
  status=ok
  if ((rc != 0)); then
    status="FAILED (exit $rc)"
    failed=1
  fi
  rows+=("$(printf '%-12s %6ss  %s' "$name" $((t1 - t0)) "$status")")
  echo "=== suite $name: $status in $((t1 - t0)) s"
}

# The Kafka jars, the pyspark venvs and the Delta jars (make test-prefetch)
# are fetched in the background from the start, beside lint, the unit tests
# and bench-smoke, which need none of them; the kafka suite waits for the
# fetch first. Its output is in out/prefetch.log; its time is its own row.
(
  t0=$(date +%s)
  $make --no-print-directory test-prefetch >out/prefetch.log 2>&1
  rc=$?
  echo "$rc $(($(date +%s) - t0))" >out/prefetch.status
  exit $rc
) &
prefetch=$!

# await_prefetch waits for the background fetch and adds its row; a failed
# fetch fails nothing by itself: the suites fetch again and say why.
await_prefetch() {
  wait "$prefetch"
  local rc=1 secs=?
  read -r rc secs <out/prefetch.status 2>/dev/null || true
  local status=ok
  if [[ $rc != 0 ]]; then
    status="failed (exit $rc, out/prefetch.log): the suites fetch again"
    tail -n 20 out/prefetch.log
  fi
  rows+=("$(printf '%-12s %6ss  %s' prefetch "$secs" "$status (background, from the start)")")
  echo "=== prefetch ($secs s): $status"
}

suite lint        $make --no-print-directory lint
suite unit        env RAPID_NOFAILFILE=1 ${GO:-go} test -count=1 -timeout 45m ./...
suite bench-smoke $make --no-print-directory bench-smoke
await_prefetch
suite kafka       $make --no-print-directory test-kafka-if-java
suite containers  $make --no-print-directory test-containers-if-docker
suite spark       $make --no-print-directory test-spark-if-java

{
  echo
  echo "make test: suite times"
  printf '%-12s %7s  %s\n' suite time status
  if [[ -n ${DEDUPSIM_SETUP_SECONDS:-} ]]; then
    printf '%-12s %6ss  %s\n' setup "$DEDUPSIM_SETUP_SECONDS" "packages installed by .ci/run (before make test)"
  fi
  printf '%s\n' "${rows[@]}"
  printf '%-12s %6ss  %s\n' total $(($(date +%s) - began)) "$([[ $failed == 0 ]] && echo ok || echo FAILED)"
} | tee out/suite-times.txt
exit $failed
