package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/events"
)

func init() { register(newEventsCmd) }

func newEventsCmd() *cobra.Command {
	var tf temporalFlags
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List recent operational events (rate-limit backoffs, exhausted quotas, …)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var evs []events.Event
			err := tf.withClient(cmd.Context(), func(tc client.Client) error {
				var err error
				evs, err = events.List(cmd.Context(), tc)
				return err
			})
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "no events recorded yet")
				return err
			}
			t := newTable(cmd.OutOrStdout(), "AT\tKIND\tSCOPE\tDATASET\tMESSAGE\tDETAILS")
			for _, e := range evs {
				var attrs []string
				for k, v := range e.Attrs {
					attrs = append(attrs, k+"="+v)
				}
				sort.Strings(attrs)
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Format(time.RFC3339), e.Kind, e.Scope, e.Dataset, e.Message, strings.Join(attrs, " "))
			}
			return t.Flush()
		},
	}
	tf.bind(cmd.Flags())
	return cmd
}
