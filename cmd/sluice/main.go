// Command sluice is the one binary of Sluice: registry validation, the
// provider simulator, the bronze lake tools, the embedded Temporal dev
// stack, workers and ingest commands.
//
// Every subcommand lives in its own file and registers itself with
// register() from an init function, so adding a command never touches this
// file.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code through cobra without printing
// anything more: the command has already reported what went wrong.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

var commands []func() *cobra.Command

// register adds a subcommand constructor to the root command.
func register(f func() *cobra.Command) { commands = append(commands, f) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "sluice",
		Short: "Bronze-layer ingestion from rate-limited APIs, orchestrated by Temporal",
		Long: `Sluice pulls raw data from rate-limited public and financial APIs into a data
lake, holding every provider's declared limits across all workers.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return checkEnv(cmd.Flags())
		},
	}
	addRegistryFlag(root)
	var subs []*cobra.Command
	for _, f := range commands {
		subs = append(subs, f())
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	root.AddCommand(subs...)
	return root
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "sluice:", err)
	return 1
}
