#!/usr/bin/env bash
# fixtures.sh: regenerate inspect/delta/testdata/ with real Spark and Delta
# Lake (scripts/delta/fixtures.py says what each table holds), through the
# project's pyspark venv (conform/sparkrunner/env.sh; DEDUPSIM_SPARK_CACHE shares
# one) and the Delta jars of its Spark line (conform/sparkrunner/delta-fetch.sh).
# One local[1] Spark application, about 1-3 minutes.
#
#   scripts/delta/fixtures.sh [OUT_DIR] [NAME ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/inspect/delta/testdata}
shift || true
version=${SPARK_VERSION:-4.1.1}
py=$("$root/conform/sparkrunner/env.sh" "$version" | tail -n 1)
jars=$("$root/conform/sparkrunner/delta-fetch.sh" "$version" | tail -n 1)
mkdir -p "$out"
start=$(date +%s)
"$py" "$root/scripts/delta/fixtures.py" "$out" "$jars" "$@"
echo "fixtures: $(du -sh "$out" | cut -f1) in $(( $(date +%s) - start )) s" >&2
