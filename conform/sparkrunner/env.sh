#!/usr/bin/env bash
# env.sh: a virtual environment with a pinned pyspark for the Spark
# conformance runner (conform/sparkrunner/runner.py), under
# $DEDUPSIM_SPARK_CACHE/venv-<version> (default .cache/spark, git-ignored).
#
#   scripts/spark-env.sh [VERSION]     (VERSION defaults to $SPARK_VERSION, then 4.1.1)
#
# The last line printed on standard output is the venv's python, so callers
# can do py=$(scripts/spark-env.sh | tail -n 1). Progress goes to standard
# error. Idempotent: a venv whose pyspark already reports VERSION is kept.
#
# pip runs with the machine's own configuration (index, certificates, find
# links); nothing here names a package index. A local copy of the pyspark
# sdist can be offered with SPARK_FIND_LINKS=DIR (pyspark 4.1.1's sdist is
# about 455 MB); it is added to, not substituted for, the configured links.
#
# Spark's jars come inside the PyPI package; the runner needs Java 17 (4.x)
# or Java 8/11/17 (3.5.x) on PATH or in JAVA_HOME. No pandas or pyarrow: the
# runner only collects rows through py4j.
#
# This file is embedded in the dedupsim binary (package conform/sparkrunner), so
# `dedupsim conform` installs the same way outside a checkout.
set -euo pipefail

version=${1:-${SPARK_VERSION:-4.1.1}}
if [[ ! $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "spark-env: version '$version' is not MAJOR.MINOR.PATCH (e.g. 4.1.1 or 3.5.3)" >&2
  exit 2
fi
case $version in
  3.5.*|4.*) ;;
  *) echo "spark-env: pyspark $version is not supported: dropDuplicatesWithinWatermark needs 3.5.0 or later (3.5.x, 4.x)" >&2; exit 2 ;;
esac

if [[ -n ${DEDUPSIM_SPARK_CACHE:-} ]]; then
  cache=$DEDUPSIM_SPARK_CACHE
else
  root=$(cd "$(dirname "$0")/../.." && pwd)
  cache=$root/.cache/spark
fi
venv=$cache/venv-$version
py=$venv/bin/python

has() { [[ -x $py && -f $venv/.dedupsim-complete ]] && "$py" -c "import sys, pyspark; sys.exit(pyspark.__version__ != '$version')" 2>/dev/null; }

if has; then
  echo "spark-env: $venv already has pyspark $version" >&2
  echo "$py"
  exit 0
fi

python=${PYTHON:-python3}
command -v "$python" >/dev/null || { echo "spark-env: $python not found on PATH" >&2; exit 1; }
if [[ -n ${JAVA_HOME:-} ]]; then java=$JAVA_HOME/bin/java; else java=$(command -v java || true); fi
[[ -n $java && -x $java ]] || { echo "spark-env: java not found (PATH or JAVA_HOME); Spark needs Java 17" >&2; exit 1; }

echo "spark-env: installing pyspark==$version into $venv (a few minutes: the package is about 300-450 MB)" >&2
start=$(date +%s)
mkdir -p "$cache"
# Installed in place; the stamp written last marks a complete install (a
# venv's launchers carry its absolute path, so it is not built elsewhere and
# moved). An interrupted install leaves no stamp and is redone.
rm -rf "$venv"
"$python" -m venv "$venv"
links=${PIP_FIND_LINKS:-}
if [[ -n ${SPARK_FIND_LINKS:-} && -d $SPARK_FIND_LINKS ]]; then
  links="${links:+$links }$SPARK_FIND_LINKS"
fi
PIP_FIND_LINKS=$links "$py" -m pip install --quiet --no-input "pyspark==$version" >&2
touch "$venv/.dedupsim-complete"
has || { echo "spark-env: $venv does not import pyspark $version after the install" >&2; exit 1; }
echo "spark-env: pyspark $version in $venv, $(du -sh "$venv" | cut -f1), in $(( $(date +%s) - start )) s" >&2
echo "$py"
