// Package spark carries the Spark conformance runner (runner.py) and its
// environment script (env.sh) inside the dedupsim binary, so that
// `dedupsim conform` can install pyspark and drive Spark outside a checkout.
// The files are the ones in this folder; scripts/spark-env.sh calls env.sh.
package spark

import _ "embed"

// Runner is runner.py: it drives real Spark through exec traces
// (docs/conformance.md).
//
//go:embed runner.py
var Runner []byte

// EnvScript is env.sh: it creates the pinned pyspark virtual environment and
// prints its python on the last line.
//
//go:embed env.sh
var EnvScript []byte
