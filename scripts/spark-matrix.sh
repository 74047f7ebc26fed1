#!/usr/bin/env bash
# spark-matrix.sh: the conformance suite on every Spark line, one line after
# another (two shared cores: never side by side), then a table version x
# agree/disagree/known/skipped and the flavour columns of each line's
# "all cases" row (docs/conformance.md, "Across Spark versions").
#
#   make test-spark-matrix [SPARK_LINES="3.5.9 4.3.0"] [SPARK_MATRIX_TRACES=30] [SPARK_SEED=1]
#
# Each line runs `make test-spark-line SPARK_VERSION=V` (its venv installed
# when missing, the golden cases and SPARK_MATRIX_TRACES random traces);
# its log and case files go to out/spark-matrix/V(.log). A line that
# disagrees does not stop the others; the script exits 1 when any line
# disagreed or did not run. The table is printed last and written to
# out/spark-matrix/matrix.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
lines=${SPARK_LINES:-3.5.9 4.0.5 4.1.4 4.2.1 4.3.0}
traces=${SPARK_MATRIX_TRACES:-30}
seed=${SPARK_SEED:-1}
out=out/spark-matrix
mkdir -p "$out"
rows=()
flav=()
failed=0
for v in $lines; do
  log=$out/$v.log
  echo "=== Spark $v: golden + $traces random traces (seed $seed), log in $log"
  t0=$(date +%s)
  $make --no-print-directory test-spark-line SPARK_VERSION="$v" SPARK_MATRIX_TRACES="$traces" SPARK_SEED="$seed" >"$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
  # "agree A, disagree D, expected differences E, skipped S" (Result.Table)
  sum=$(grep -m1 -oE 'agree [0-9]+, disagree [0-9]+, expected differences [0-9]+, skipped [0-9]+' "$log")
  if [[ -z $sum ]]; then
    rows+=("$(printf '%-8s %6s %9s %6s %9s %6s %7s  %s' "$v" - - - - - "${secs}s" "did not run (exit $rc): see $log")")
    failed=1
    continue
  fi
  read -r a d e s < <(sed -E 's/agree ([0-9]+), disagree ([0-9]+), expected differences ([0-9]+), skipped ([0-9]+)/\1 \2 \3 \4/' <<<"$sum")
  status=ok
  if ((d > 0)); then
    status="DISAGREES"
    failed=1
  elif ((rc != 0)); then
    status="FAILED (exit $rc)"
    failed=1
  fi
  rows+=("$(printf '%-8s %6d %9d %6d %9d %6d %7s  %s' "$v" $((a + d + e + s)) "$a" "$d" "$e" "$s" "${secs}s" "$status")")
  all=$(grep -m1 -E '^\s*all cases\s' "$log" | sed -E 's/^\s*all cases\s+//')
  flav+=("$(printf '%-8s %s' "$v" "$all")")
  grep -A3 -E '^\s*Expected differences' "$log" | grep -oE '^\s+[a-z0-9.-]+: [0-9]+ case\(s\)' | sed "s/^ */  $v known: /" >>"$out/known.tmp" || true
done
{
  echo
  echo "Spark conformance matrix: golden cases + $traces random traces of seed $seed per line"
  printf '%-8s %6s %9s %6s %9s %6s %7s  %s\n' version cases agree disagree known skipped wall result
  printf '%s\n' "${rows[@]}"
  echo
  echo "per flavour (all cases; agree/disagree/skipped, +N known): dropDuplicates | +wm(key) | +wm(nonkey) | WithinWatermark | batch"
  printf '%s\n' "${flav[@]}"
  echo
  echo "per feature (summed over the flavours; agree/disagree/skipped, +N known):"
  logs=()
  for v in $lines; do [[ -f $out/$v.log ]] && logs+=("$out/$v.log"); done
  ((${#logs[@]} > 0)) && python3 scripts/spark-matrix-features.py "${logs[@]}"
  if [[ -s $out/known.tmp ]]; then
    echo
    echo "known differences that fired:"
    cat "$out/known.tmp"
  fi
} | tee "$out/matrix.txt"
rm -f "$out/known.tmp"
exit $failed
