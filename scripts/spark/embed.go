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

// DeltaFetch is delta-fetch.sh: it copies the Delta Lake jars of a Spark
// line into a cache and prints them, comma-separated, on the last line.
//
//go:embed delta-fetch.sh
var DeltaFetch []byte

// DeltaReleases is delta.tsv: the Delta release per Spark line.
//
//go:embed delta.tsv
var DeltaReleases []byte

// DeltaPom is delta-pom.xml, the pom delta-fetch.sh runs mvn on.
//
//go:embed delta-pom.xml
var DeltaPom []byte
