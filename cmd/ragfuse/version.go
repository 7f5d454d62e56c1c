package main

import (
	"context"
	"fmt"

	"github.com/ragfuse/ragfuse/api"
)

// runVersion prints the build: the module version, the Go version and
// platform, and the source revision when the binary was built from a
// repository.
func runVersion(_ context.Context, args []string, e *env) error {
	fs := newFlagSet("version", "", e)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, err := fmt.Fprintln(e.stdout, api.ReadBuild())
	return err
}
