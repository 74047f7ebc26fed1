#!/usr/bin/env bash
# calibrate.sh [OUT.json [SHAPE/STORE/API ...]]: measure Spark's state bytes per key for 4 key
# shapes x both stores x both dedup APIs (scripts/sizing/calibrate.py) in
# one local[1] Spark application, through the project's pyspark venv
# (conform/sparkrunner/env.sh; set DEDUPSIM_SPARK_CACHE to share one).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/sizing/testdata/spark-calibration.json}
py=$("$root/conform/sparkrunner/env.sh" "${SPARK_VERSION:-4.1.1}" | tail -n 1)
"$py" "$root/scripts/sizing/calibrate.py" "$out" "${@:2}"
