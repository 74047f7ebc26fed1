// Command dedupsim proves or refutes exactly-once deduplication in
// streaming pipelines. Each verb is a thin layer over the packages that do
// the work.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/suggest"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "dedupsim",
		Short:         "Prove or refute exactly-once deduplication in streaming pipelines",
		Long:          "dedupsim reproduces Spark Structured Streaming deduplication row for row and metric for metric,\nso that dedup settings can be checked against traces, failures and crashes before they ship.",
		Version:       buildVersion,
		SilenceUsage:  true,
		SilenceErrors: true,
		// A misspelt verb within two edits gets a "did you mean".
		SuggestionsMinimumDistance: 2,
	}
	root.SetVersionTemplate("dedupsim {{.Version}}\n")
	versionFlag(root)
	root.AddCommand(newExecCmd(), newRunCmd(), newReplayCmd(), newSweepCmd(), newMergeCmd(), newCheckCmd(), newListCmd(),
		newSizeCmd(), newAnalyzeCmd(), newCaptureCmd(), newDiagnoseCmd(), newInspectCmd(), newEngineCmd(), newConformCmd(), newVersionCmd(), newShrinkCmd())
	root.SetFlagErrorFunc(flagError)
	return root
}

// rootHooks change the root command before it runs (the pprof build adds
// its flags there); atExit runs, last added first, before main returns or
// exits, whatever the exit status (the pprof build writes its profiles).
var (
	rootHooks []func(*cobra.Command)
	atExit    []func()
)

func main() {
	root := newRoot()
	for _, h := range rootHooks {
		h(root)
	}
	code := 0
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dedupsim: "+oneLine(root, err))
		code = 2 // cobra's own errors are usage errors: bad input
		if c, ok := exitcode.Status(err); ok {
			code = c
		}
	}
	for i := len(atExit) - 1; i >= 0; i-- {
		atExit[i]()
	}
	if code != 0 {
		os.Exit(code)
	}
}

// flagError makes pflag's errors one line, with a "did you mean" for a
// misspelt flag among the verb's flags and plain words for a value that
// does not parse.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var known []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				known = append(known, f.Name)
			}
		})
		msg += suggest.Phrase(suggest.Closest(name, known), func(s string) string { return "--" + s })
	}
	for raw, human := range map[string]string{
		"strconv.ParseUint: parsing":  "want a whole number in [0, 18446744073709551615], not",
		"strconv.ParseInt: parsing":   "want a whole number, not",
		"strconv.ParseBool: parsing":  "want true or false, not",
		"strconv.ParseFloat: parsing": "want a number, not",
		"time: invalid duration":      "want a duration such as 500ms, 30s, 5m or 1h:",
	} {
		if i := strings.Index(msg, raw); i >= 0 {
			msg = msg[:i] + human + strings.TrimSuffix(strings.TrimSuffix(msg[i+len(raw):], ": invalid syntax"), ": value out of range")
		}
	}
	return exitcode.Bad(fmt.Errorf("%s: %s (see dedupsim %s --help)", c.Name(), msg, c.Name()))
}

// oneLine keeps cobra's multi-line messages (an unknown verb with its
// suggestions) on one line, as every error of dedupsim is.
func oneLine(root *cobra.Command, err error) string {
	msg := err.Error()
	if !strings.Contains(msg, "\n") {
		return msg
	}
	first, _, _ := strings.Cut(msg, "\n")
	var arg string
	if _, err := fmt.Sscanf(first, "unknown command %q", &arg); err == nil {
		return fmt.Sprintf("unknown command %q%s; see dedupsim --help", arg, suggest.Phrase(root.SuggestionsFor(arg), func(s string) string { return s }))
	}
	return strings.Join(strings.Fields(msg), " ")
}
