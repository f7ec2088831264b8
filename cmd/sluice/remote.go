package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
)

// withClient is how a command talks to Temporal: it dials as the flags say
// (the SDK's own logs dropped, warnings about the configuration on stderr,
// a failure naming the address and how the connection is secured), runs
// do with the client and closes it when do returns. Checks that need no
// server belong before it, so that a wrong flag is told without one.
func (t *temporalFlags) withClient(ctx context.Context, do func(client.Client) error) error {
	tc, err := t.dialQuiet(ctx)
	if err != nil {
		return err
	}
	defer tc.Close()
	return do(tc)
}

// newActCmd returns the command use (its first argument the id of a
// workflow or schedule) that does one thing to it through Temporal: act
// sends the signal, cancellation or schedule change, its error saying
// what it was doing, and returns the line printed once it is done. The
// connection flags are bound; the caller adds any other flag, and checks
// them in PreRunE, before any connection is made.
func newActCmd(use, short string, act func(ctx context.Context, tc client.Client, id string) (string, error)) *cobra.Command {
	var tf temporalFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return tf.withClient(cmd.Context(), func(tc client.Client) error {
				done, err := act(cmd.Context(), tc, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), done)
				return nil
			})
		},
	}
	tf.bind(cmd.Flags())
	return cmd
}
