// Package sparkrunner carries the Spark conformance runner (runner.py), its
// environment script (env.sh) and the Delta Lake fetch (delta-fetch.sh,
// delta.tsv, delta-pom.xml) inside the dedupsim binary, so that
// `dedupsim conform` and `exec --engine spark` can install pyspark and
// drive Spark outside a checkout. The files are the ones in this folder;
// scripts/spark-env.sh, the fixture scripts and the Makefile run them from
// here.
package sparkrunner

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
