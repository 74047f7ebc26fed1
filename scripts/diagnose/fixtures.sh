#!/usr/bin/env bash
# fixtures.sh: regenerate diagnose/testdata/spark/ with real Spark (one small
# query per case and state store; scripts/diagnose/fixtures.py says what each
# leaves), through the project's pyspark venv (conform/sparkrunner/env.sh; set
# DEDUPSIM_SPARK_CACHE to share one). Runs the cases one after another: each
# is one local[1] Spark application of about 20-40 s.
#
#   scripts/diagnose/fixtures.sh [OUT_DIR] [CASE-STORE ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/diagnose/testdata/spark}
shift || true
py=$("$root/conform/sparkrunner/env.sh" "${SPARK_VERSION:-4.1.1}" | tail -n 1)
cases=("$@")
if [[ ${#cases[@]} -eq 0 ]]; then
  for c in unbounded stalled-min healthy future-jump restamped snapshots; do
    for s in hdfs rocksdb; do cases+=("$c/$s"); done
  done
fi
mkdir -p "$out"
for c in "${cases[@]}"; do
  echo "fixtures: $c" >&2
  start=$(date +%s)
  "$py" "$root/scripts/diagnose/fixtures.py" "$out" "$c"
  echo "fixtures: $c in $(( $(date +%s) - start )) s" >&2
done
rm -rf "$out/.work"
