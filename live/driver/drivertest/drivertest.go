// Package drivertest lets a test binary be the engine process: TestMain
// calls Main, and a test passes Binary() to live.RunProcess (or runs it
// with `engine` and the driver's flags). The child is the test binary
// re-executed with Env set, which TestMain turns into driver.Run with the
// CLI's flags (driver.Flags), as pebble's metamorphic tests re-exec
// theirs; no test builds the CLI for it.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/spf13/pflag"

	"github.com/dedupsim/dedupsim/live/driver"
)

// Env, set to 1 in a process's environment, makes Main run the engine
// process instead of the tests.
const Env = "DEDUPSIM_TEST_ENGINE_PROCESS"

// Main is the body of a TestMain: in a child started with Env=1 it runs
// `engine FLAGS...` from os.Args and exits with the engine's status;
// otherwise it sets Env=1 for the children the tests start and runs them.
func Main(m *testing.M) {
	if os.Getenv(Env) == "1" {
		os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Setenv(Env, "1")
	os.Exit(m.Run())
}

// Binary is the executable a test passes as the engine process: the
// test binary itself (Main must be its TestMain).
func Binary() string { return os.Args[0] }

// Run runs `engine FLAGS...` as the CLI does (signals, flags, the driver)
// and returns the exit status, printing an error as the CLI prints it.
func Run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 || args[0] != "engine" {
		fmt.Fprintf(stderr, "dedupsim: drivertest: want `engine FLAGS...`, got %q\n", args)
		return driver.ExitBadInput
	}
	fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f driver.Flags
	f.Register(fs)
	if err := fs.Parse(args[1:]); err != nil {
		fmt.Fprintf(stderr, "dedupsim: engine: %v\n", err)
		return driver.ExitBadInput
	}
	o, err := f.Options(func(name string) bool { return fs.Changed(name) }, os.Getenv)
	if err == nil {
		o.Stdout, o.Stderr = stdout, stderr
		err = driver.Run(ctx, o)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "dedupsim: "+err.Error())
	var de *driver.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return driver.ExitFailed
}
