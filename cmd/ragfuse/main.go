// Command ragfuse serves layered-degradation RAG question answering over
// HTTP and runs fault-injection tools.
//
// Usage:
//
//	ragfuse serve [--config FILE] [--addr ADDR] [--demo-faults model=mode,...] [--log-json]
//	ragfuse chaos [--addr ADDR] [--models a,b] [--chunk-delay D] [--embedding-dim N] [--faults model=mode,...]
//	ragfuse drill --scenario FILE --out DIR [--speed N] [--settings none,breaker,full | --target URL [--api-key-env NAME]]
//	ragfuse version
//	ragfuse help [command]
//
// Without --config, serve runs an embedded demo: the bundled knowledge
// base, the hash embedder and an in-process simulated model upstream whose
// faults can be switched with curl.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK    = 0 // done, or stopped by SIGINT/SIGTERM after a clean shutdown
	exitError = 1 // a runtime or configuration error
	exitUsage = 2 // bad command line
)

// errUsage marks command-line errors; the message has been printed.
var errUsage = errors.New("usage error")

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, env *env) error
}

// env is what a command may touch of the outside world; tests replace it.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	listening      func(url string) // if set, called once serve listens
}

func commands() []command {
	return []command{
		{"serve", "run the HTTP server (the embedded demo without --config)", runServe},
		{"chaos", "serve a fault-injecting OpenAI-compatible upstream for tests", runChaos},
		{"drill", "play a scripted outage and report what each protection buys", runDrill},
		{"version", "print the version, Go version and source revision of this binary", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			return run(ctx, []string{rest[0], "-h"}, &env{stdout: e.stdout, stderr: e.stdout, getenv: e.getenv, listening: e.listening})
		}
		usage(e.stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, rest, e)
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.Is(err, errUsage):
			return exitUsage
		}
		fmt.Fprintf(e.stderr, "ragfuse %s: %v\n", name, err)
		return exitError
	}
	fmt.Fprintf(e.stderr, "ragfuse: unknown command %q\n\n", name)
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "ragfuse answers questions through a chain of tiers that degrade gracefully:")
	fmt.Fprintln(w, "semantic cache -> primary model -> fallback model -> knowledge-base articles -> static message.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, "  ragfuse <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-8s %s\n", "help", "show this help, or a command's flags: ragfuse help serve")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Start with the demo:  ragfuse serve")
}

// newFlagSet returns a FlagSet for a subcommand that reports errors
// instead of exiting, with a usage text naming the command.
func newFlagSet(name, synopsis string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("ragfuse "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: ragfuse %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, turning a bad command line into errUsage.
// Positional arguments are refused.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(io.Discard)
			return flag.ErrHelp
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}
