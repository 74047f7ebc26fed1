#!/usr/bin/env bash
# delta-fetch.sh [SPARK_VERSION]: the Delta Lake jars for a Spark line, for
# the conformance runner's table, merge and append sinks
# (docs/conformance.md, "Delta Lake").
#
# The release comes from delta.tsv (the Delta release per Spark line) beside
# this script; mvn copies io.delta:<artifact>:<version> and delta-storage
# (delta-pom.xml, nothing transitive: Spark and Scala come with pyspark) into
# $DEDUPSIM_DELTA_CACHE/<artifact>-<version> (default: delta/ under
# $DEDUPSIM_SPARK_CACHE, else .cache/delta in the checkout; git-ignored).
# Maven runs with the machine's own configuration; nothing here names a
# repository. Idempotent: a complete folder (stamp file) is kept.
#
# The last line printed on standard output is the jars, comma-separated (for
# spark.jars). Exit 2 for a Spark line no Delta release serves.
#
# This file, delta.tsv and delta-pom.xml are embedded in the dedupsim binary
# (package conform/sparkrunner).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=${1:-${SPARK_VERSION:-4.1.1}}
if [[ ! $version =~ ^([0-9]+\.[0-9]+)\.[0-9]+$ ]]; then
  echo "delta-fetch: Spark version '$version' is not MAJOR.MINOR.PATCH" >&2
  exit 2
fi
line=${BASH_REMATCH[1]}
read -r artifact dversion < <(awk -F'\t' -v l="$line" '$1 == l { print $2, $3 }' "$here/delta.tsv") || true
if [[ -z ${artifact:-} ]]; then
  echo "delta-fetch: Spark $line is not in delta.tsv (the Delta release per Spark line)" >&2
  exit 2
fi
if [[ $artifact == - ]]; then
  echo "delta-fetch: no Delta Lake release serves Spark $line yet (delta.tsv); the table, merge and append sinks need Delta" >&2
  exit 2
fi

if [[ -n ${DEDUPSIM_DELTA_CACHE:-} ]]; then
  cache=$DEDUPSIM_DELTA_CACHE
elif [[ -n ${DEDUPSIM_SPARK_CACHE:-} ]]; then
  cache=$DEDUPSIM_SPARK_CACHE/delta
else
  cache=$(cd "$here/../.." && pwd)/.cache/delta
fi
dir=$cache/$artifact-$dversion
stamp=$dir/.dedupsim-complete
jars() { echo "$dir/$artifact-$dversion.jar,$dir/delta-storage-$dversion.jar"; }

if [[ -f $stamp && -f $dir/$artifact-$dversion.jar && -f $dir/delta-storage-$dversion.jar ]]; then
  echo "delta-fetch: $dir already holds Delta $dversion for Spark $line" >&2
  jars
  exit 0
fi
for tool in mvn java; do
  command -v "$tool" >/dev/null || { echo "delta-fetch: $tool not found on PATH" >&2; exit 1; }
done
echo "delta-fetch: copying io.delta:$artifact:$dversion and delta-storage into $dir" >&2
start=$(date +%s)
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.fetch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mvn -B -q -Dstyle.color=never -f "$here/delta-pom.xml" dependency:copy-dependencies \
  -Ddelta.artifact="$artifact" -Ddelta.version="$dversion" \
  -DexcludeTransitive=true -DincludeScope=runtime -DoutputDirectory="$tmp/jars" >&2
for j in "$artifact-$dversion.jar" "delta-storage-$dversion.jar"; do
  [[ -f $tmp/jars/$j ]] || { echo "delta-fetch: $j missing after mvn" >&2; exit 1; }
done
touch "$tmp/jars/.dedupsim-complete"
rm -rf "$dir"
mv "$tmp/jars" "$dir"
echo "delta-fetch: Delta $dversion ($(du -sh "$dir" | cut -f1)) in $(( $(date +%s) - start )) s" >&2
jars
