#!/usr/bin/env bash
# spark-env.sh [VERSION]: the pinned pyspark venv for `make test-spark`; the
# script lives in conform/sparkrunner/env.sh (embedded in the binary for
# `dedupsim conform`).
exec "$(dirname "$0")/../conform/sparkrunner/env.sh" "$@"
