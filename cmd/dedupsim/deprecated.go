package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Old spellings of flags that meant one thing on one verb and another on
// the next (issue 31, item 8). Each keeps working for one release: hidden
// from --help, bound to the same value as its new name, and a use prints
// pflag's notice on standard error ("Flag --engine has been deprecated,
// ..."). README.md, "Deprecated spellings", lists them.

// deprecatedNote is the notice of an old spelling whose new name is repl.
func deprecatedNote(repl string) string {
	return "use " + repl + " instead; the old spelling goes in the next release"
}

// deprecateAlias marks the flag old of f, registered on the same value as
// the flag repl, as its deprecated spelling.
func deprecateAlias(f *pflag.FlagSet, old, repl string) {
	if err := f.MarkDeprecated(old, deprecatedNote("--"+repl)); err != nil {
		panic(err) // a programming error: the flag is registered above
	}
}

// spelling is the name the user gave a flag with a deprecated alias (old
// when only old was given, else repl), so that a message quotes what was
// typed; both given is bad input, as the later would silently win.
func spelling(cmd *cobra.Command, verb, repl, old string) (string, error) {
	set := cmd.Flags().Changed
	switch {
	case set(old) && set(repl):
		return "", fmt.Errorf("%s: --%s is the old spelling of --%s: give --%s only", verb, old, repl, repl)
	case set(old):
		return old, nil
	}
	return repl, nil
}

// versionFlag gives the root --version no short form: -v is --verbose
// where a verb logs (run -v). The root's -v still prints the version, with
// a notice, for one release; cobra uses this flag instead of adding its
// own -v, --version.
func versionFlag(root *cobra.Command) {
	f := root.Flags()
	f.BoolP("version", "v", false, "version for "+root.Name())
	if err := f.MarkShorthandDeprecated("version", "use --version instead; from the next release -v means --verbose only (run -v)"); err != nil {
		panic(err)
	}
}
