// Command dedupsim proves or refutes exactly-once deduplication in
// streaming pipelines. Each verb is a thin layer over the packages that do
// the work.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries an exit status: 2 for bad input, 1 for other failures.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func badInput(err error) error { return &exitError{code: 2, err: err} }

func main() {
	root := &cobra.Command{
		Use:           "dedupsim",
		Short:         "Prove or refute exactly-once deduplication in streaming pipelines",
		Long:          "dedupsim reproduces Spark Structured Streaming deduplication row for row and metric for metric,\nso that dedup settings can be checked against traces, failures and crashes before they ship.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newExecCmd(), newRunCmd(), newReplayCmd(), newSweepCmd(), newCheckCmd(), newListCmd(), newSizeCmd(), newAnalyzeCmd(), newEngineCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dedupsim: "+err.Error())
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(2) // cobra's own errors are usage errors: bad input
	}
}
