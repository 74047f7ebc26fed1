package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/suggest"
)

// execSparkHelp is the part of exec's --help about --engine spark.
const execSparkHelp = `

With --engine spark the same pair runs on a real Apache Spark instead (docs/conformance.md): the
pyspark of DEDUPSIM_SPARK_PYTHON (a venv's python), else DEDUPSIM_SPARK_VERSION (default 4.1.1)
installed once into DEDUPSIM_SPARK_CACHE (default: the user cache folder). The output is the
same JSON Lines, with Spark's own progress; --format jsonl only. A trace Spark cannot be driven
through (processing-time steps) is refused with exit 2. The table, merge and append sinks write a
real Delta Lake table (the Delta release of the Spark line, fetched once with Maven into
DEDUPSIM_DELTA_CACHE, default delta/ in the Spark cache); the final {"table": ...} line is Spark's
read of it, with the txn actions of its log for the table sink. With --checkpoint DIR the table
stays in DIR/delta-table (replaced at every run, as exec's sinks live for one run).`

// checkEngine refuses an unknown --engine, with a did-you-mean.
func checkEngine(name string) error {
	switch name {
	case "dedupsim", "spark":
		return nil
	}
	msg := fmt.Sprintf("exec: --engine %q (want dedupsim or spark)", name)
	msg += suggest.Phrase(suggest.Closest(name, []string{"dedupsim", "spark"}), strconv.Quote)
	return exitcode.Bad(errors.New(msg))
}
