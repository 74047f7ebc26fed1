#!/usr/bin/env bash
# fixtures.sh: regenerate inspect/testdata/spark-v2/ with real Spark: state
# checkpoints in format v2 and one in real-time mode, each with what Spark's
# own state reader says about it (scripts/inspect/fixtures.py says what each
# case leaves). Uses the project's pyspark venv (conform/sparkrunner/env.sh; set
# DEDUPSIM_SPARK_CACHE to share one); SPARK_VERSION defaults to 4.3.0, the
# first with real-time mode (the format-v2 cases run on 4.1 and 4.2 too).
# One case is one local Spark application of about 40-90 s.
#
#   scripts/inspect/fixtures.sh [OUT_DIR] [CASE ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/inspect/testdata/spark-v2}
shift || true
py=$("$root/conform/sparkrunner/env.sh" "${SPARK_VERSION:-4.3.0}" | tail -n 1)
cases=("$@")
if [[ ${#cases[@]} -eq 0 ]]; then
  cases=(v2-dedup v2-within realtime)
fi
mkdir -p "$out"
for c in "${cases[@]}"; do
  echo "fixtures: $c" >&2
  start=$(date +%s)
  "$py" "$root/scripts/inspect/fixtures.py" "$out" "$c"
  echo "fixtures: $c in $(( $(date +%s) - start )) s" >&2
done
rm -rf "$out/.work"
