package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/registry"
)

func init() { register(newLimiterCmd) }

func newLimiterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "limiter",
		Short: "Inspect the scope limiters, or change a scope's limits without losing its ledger",
		Long: `Every scope instance has one limiter workflow (limiter/<scope>) holding its
ledger: recent grants, the day's quota count, the backoff. Its limits are the
stricter of what the live workers ask for and what an operator set here.

  sluice limiter state                  the state of every scope's limiter
  sluice limiter reconfigure --scope S  apply the registry's limits of S now

Reconfigure is how to change a limit: edit the registry, run reconfigure
(a lower limit holds at once; the ledger keeps its history and day count),
then roll the workers onto the new registry (a raised limit holds once no
live worker asks for the old one). Never terminate a limiter to change a
limit: a new run recovers the old one's state, but a quarantine (when that
state cannot be read) spends the rest of the day's quota.`,
	}
	cmd.AddCommand(newLimiterStateCmd(), newLimiterReconfigureCmd())
	return cmd
}

// limiterScopes returns the scope instances named (all with datasets when
// none is).
func limiterScopes(reg *registry.Registry, names []string) ([]*registry.ScopeInstance, error) {
	if len(names) == 0 {
		var out []*registry.ScopeInstance
		for _, s := range reg.Scopes {
			if len(s.Datasets) > 0 {
				out = append(out, s)
			}
		}
		return out, nil
	}
	var out []*registry.ScopeInstance
	for _, n := range names {
		s := reg.Scope(n)
		if s == nil {
			var known []string
			for _, s := range reg.Scopes {
				known = append(known, s.ID)
			}
			return nil, fmt.Errorf("--scope %q: no such scope instance (known: %s)", n, strings.Join(known, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

func newLimiterStateCmd() *cobra.Command {
	var tf temporalFlags
	var scopes []string
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Print each scope limiter's limits, backoff, pause and day count",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeLimiters(cmd, &tf, scopes, func(lc *ratelimit.Client, t io.Writer, s *registry.ScopeInstance) error {
				st, err := lc.State(cmd.Context(), s.ID)
				if err != nil {
					fmt.Fprintf(t, "%s\t-\t-\t-\t-\t-\t-\t-\tnot running (%v)\n", s.ID, firstLine(err))
					return nil
				}
				writeLimiterRow(t, s.ID, st)
				return nil
			})
		},
	}
	tf.bind(cmd.Flags())
	cmd.Flags().StringSliceVar(&scopes, "scope", nil, "only this scope instance, e.g. kis/key (repeatable)")
	return cmd
}

// writeLimiters writes the table of the named scopes' limiters (every
// scope with datasets when none is named), one row a scope from row, which
// asks or tells the scope's limiter through lc; an error of row ends the
// table. The registry is loaded and the names checked before Temporal is
// dialled.
func writeLimiters(cmd *cobra.Command, tf *temporalFlags, names []string, row func(lc *ratelimit.Client, t io.Writer, s *registry.ScopeInstance) error) error {
	reg, err := loadRegistry()
	if err != nil {
		return err
	}
	sel, err := limiterScopes(reg, names)
	if err != nil {
		return err
	}
	return tf.withClient(cmd.Context(), func(tc client.Client) error {
		lc := ratelimit.NewClient(tc, ratelimit.ClientOptions{TaskQueue: tf.taskQueue})
		t := newTable(cmd.OutOrStdout(), "SCOPE\tLIMITS\tOPERATOR\tFACTOR\tPAUSED UNTIL\tTODAY\tGRANTED\tCALLERS\tSTATE")
		for _, s := range sel {
			if err := row(lc, t, s); err != nil {
				return err
			}
		}
		return t.Flush()
	})
}

func writeLimiterRow(w io.Writer, id string, st ratelimit.State) {
	operator := "-"
	if st.Override != nil {
		operator = describe(*st.Override)
	}
	paused := "-"
	if st.Ledger.PausedUntil.After(st.Now) {
		paused = st.Ledger.PausedUntil.Format(time.RFC3339)
	}
	state := "ok"
	switch {
	case st.Recovering:
		state = "recovering the last run's state"
	case st.Ledger.Quarantines > 0:
		state = fmt.Sprintf("quarantined %d time(s)", st.Ledger.Quarantines)
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%.3g\t%s\t%d\t%d\t%d\t%s\n", id, describe(st.Limits), operator, st.Factor, paused,
		st.Ledger.DayCount(st.Now, st.Limits), st.Ledger.Granted, len(st.Callers), state)
}

func describe(l ledger.Limits) string {
	var parts []string
	for _, w := range l.Windows {
		parts = append(parts, fmt.Sprintf("%d/%s", w.Count, w.Length))
	}
	if l.MinInterval > 0 {
		parts = append(parts, "interval "+l.MinInterval.String())
	}
	if l.DailyQuota > 0 {
		parts = append(parts, fmt.Sprintf("%d/day", l.DailyQuota))
	}
	parts = append(parts, "τ "+l.Tolerance.String())
	return strings.Join(parts, " ")
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func newLimiterReconfigureCmd() *cobra.Command {
	var tf temporalFlags
	var scopes []string
	var clearLimits bool
	var reason string
	var tolerance time.Duration
	cmd := &cobra.Command{
		Use:   "reconfigure",
		Short: "Apply the registry's limits to scope limiters now, keeping their ledgers",
		Long: `Sends each named scope's limiter (every scope with datasets when none is
named) the registry's limits for it through the reconfigure update. They hold
over the live workers' limits at once; the ledger keeps its grants, day count
and backoff. Workers still running an older registry keep asking for theirs:
a stricter old value holds until they stop (10 minutes after their last call),
so roll the workers too. --clear drops the operator's limits again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tolerance <= 0 {
				return fmt.Errorf("--limiter-tolerance %v: must be positive", tolerance)
			}
			return writeLimiters(cmd, &tf, scopes, func(lc *ratelimit.Client, t io.Writer, s *registry.ScopeInstance) error {
				var lim *ledger.Limits
				if !clearLimits {
					l := ledger.FromScope(s, 1, tolerance)
					lim = &l
				}
				st, err := lc.Reconfigure(cmd.Context(), s.ID, lim, reason)
				if err != nil {
					return err
				}
				writeLimiterRow(t, s.ID, st)
				return nil
			})
		},
	}
	tf.bind(cmd.Flags())
	fs := cmd.Flags()
	fs.StringSliceVar(&scopes, "scope", nil, "only this scope instance, e.g. kis/key (repeatable)")
	fs.BoolVar(&clearLimits, "clear", false, "drop the operator's limits: the live workers' limits hold alone")
	fs.StringVar(&reason, "reason", "sluice limiter reconfigure", "why, recorded in the limiter's history")
	durationFlag(fs, &tolerance, "limiter-tolerance", "SLUICE_LIMITER_TOLERANCE", ledger.DefaultTolerance, "the send tolerance the limits carry")
	return cmd
}
