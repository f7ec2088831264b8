package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/planner"
	"github.com/sluicehq/sluice/registry"
)

func init() { register(newPlanCmd) }

func newPlanCmd() *cobra.Command {
	var from, to, date, start string
	var providers, datasets []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan (--from YYYY-MM-DD --to YYYY-MM-DD | --date YYYY-MM-DD) [--provider P]... [--dataset D]... [--json]",
		Short: "Say what a backfill or a daily run will cost, without calling a provider",
		Long: `Plans a backfill of --from..--to (both included), or with --date the daily run
for that logical date, from the registry alone: no provider, Temporal server
or simulator is contacted. Prints, per scope instance, the datasets, chunks
and calls, the daily quota (an unknown limit is planned at
defaults.unknown_limits and flagged, as the budget gate does), the demand the
day's schedules and probes reserve, the backfill's daily share (quota less
reserved), the provider-days the run needs and its predicted makespan at the
declared limits; then totals, and for a backfill the ratio to one call per
dataset per day. --json prints the plan as JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := planner.Input{Providers: providers, Datasets: datasets}
			daily := date != ""
			switch {
			case daily && (from != "" || to != ""):
				return fmt.Errorf("--date %q: plan a daily run (--date) or a backfill (--from/--to), not both", date)
			case !daily && (from == "" || to == ""):
				return fmt.Errorf("plan: give --from and --to (a backfill) or --date (a daily run)")
			}
			var err error
			if daily {
				if in.From, err = parsePlanDate("date", date); err != nil {
					return err
				}
			} else {
				if in.From, err = parsePlanDate("from", from); err != nil {
					return err
				}
				if in.To, err = parsePlanDate("to", to); err != nil {
					return err
				}
				if in.To.Before(in.From) {
					return fmt.Errorf("--to %q is before --from %q", to, from)
				}
			}
			if start != "" {
				if in.Start, err = time.Parse(time.RFC3339, start); err != nil {
					return fmt.Errorf("--start %q: want an RFC 3339 time such as 2026-12-01T00:00:00+09:00", start)
				}
			}
			reg, err := loadRegistry()
			if err != nil {
				return err
			}
			if err := checkKnown(reg, providers, datasets); err != nil {
				return err
			}
			var p *planner.Plan
			if daily {
				p, err = planner.DailyWith(reg, in)
			} else {
				p, err = planner.Backfill(reg, in)
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(p)
			}
			return writePlan(cmd.OutOrStdout(), p)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "first day of the backfill, YYYY-MM-DD")
	cmd.Flags().StringVar(&to, "to", "", "last day of the backfill, YYYY-MM-DD (included)")
	cmd.Flags().StringVar(&date, "date", "", "plan the daily run for this logical date, YYYY-MM-DD")
	cmd.Flags().StringArrayVar(&providers, "provider", nil, "plan only this provider's datasets (repeatable)")
	cmd.Flags().StringArrayVar(&datasets, "dataset", nil, "plan only this dataset (repeatable)")
	cmd.Flags().StringVar(&start, "start", "", "when the run starts, RFC 3339 (default: at the start of a provider-local day)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

func parsePlanDate(flag, v string) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s %q: want a date YYYY-MM-DD", flag, v)
	}
	return d, nil
}

// checkKnown names an unknown --provider or --dataset.
func checkKnown(reg *registry.Registry, providers, datasets []string) error {
	for _, p := range providers {
		if reg.Provider(p) == nil {
			var ids []string
			for _, pr := range reg.Providers {
				ids = append(ids, pr.ID)
			}
			return fmt.Errorf("--provider %q: no such provider in the registry (known: %s)", p, strings.Join(ids, ", "))
		}
	}
	for _, d := range datasets {
		if reg.Dataset(d) == nil {
			return fmt.Errorf("--dataset %q: no such dataset in the registry (sluice registry validate lists them)", d)
		}
	}
	return nil
}

// writePlan prints a plan as tables.
func writePlan(w io.Writer, p *planner.Plan) error {
	kind := "backfill " + p.From + ".." + p.To
	if p.Kind == "daily" {
		kind = "daily run for " + p.From
	}
	fmt.Fprintf(w, "plan: %s — %s dataset(s), %s chunk(s), %s call(s); no provider was called\n\n",
		kind, group(p.Totals.Datasets), group(p.Totals.Chunks), group(p.Totals.Calls))
	tw := newFigureTable(w, "scope\tdatasets\tchunks\tcalls\tdaily quota\treserved\tshare\tprovider-days\tmakespan\t")
	flagged := false
	for _, s := range p.Scopes {
		quota := "none"
		if s.DailyQuota > 0 {
			quota = group(s.DailyQuota)
		}
		if len(s.Unknown) > 0 {
			flagged = true
			for _, u := range s.Unknown {
				if u == "requests_per_day" || u == "rate_limits" {
					quota += "*"
					break
				}
			}
		}
		share := "unbounded"
		if s.DailyQuota > 0 {
			share = group(s.Share)
		}
		mk := formatSpan(s.Makespan)
		if s.Stalled {
			mk = "never (no share)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", s.Scope, len(s.Datasets), group(s.Chunks), group(s.Calls),
			quota, group(s.Reserved.Total), share, s.ProviderDays, mk)
	}
	fmt.Fprintf(tw, "total\t%d\t%s\t%s\t\t\t\t%d\t%s\t\n", p.Totals.Datasets, group(p.Totals.Chunks), group(p.Totals.Calls),
		p.Totals.ProviderDays, formatSpan(p.Totals.Makespan))
	if err := tw.Flush(); err != nil {
		return err
	}
	if flagged {
		fmt.Fprintln(w, "\nlimits declared unknown, planned at defaults.unknown_limits as the budget gate does (확인 필요; * marks a daily quota):")
		for _, s := range p.Scopes {
			if len(s.Unknown) > 0 {
				fmt.Fprintf(w, "  %s: %s\n", s.Scope, strings.Join(s.Unknown, ", "))
			}
		}
	}
	if p.Kind == "backfill" {
		fmt.Fprintf(w, "\none call per dataset per day: %s calls; this plan: %s calls, %.1f× fewer\n",
			group(p.Totals.OneCallPerDay), group(p.Totals.Calls), p.Totals.Ratio)
		for _, s := range p.Scopes {
			switch {
			case s.Stalled:
				fmt.Fprintf(w, "%s: the day's reserved demand (%s) leaves no share of the daily quota %s: the backfill cannot run\n",
					s.Scope, group(s.Reserved.Total), group(s.DailyQuota))
			case s.ProviderDays > 1:
				fmt.Fprintf(w, "%s: spans %d provider-days: %s calls at a share of %s a day (daily quota %s less %s reserved), waiting for each provider-local midnight\n",
					s.Scope, s.ProviderDays, group(s.Calls), group(s.Share), group(s.DailyQuota), group(s.Reserved.Total))
			}
		}
	}
	return nil
}

// formatSpan writes a duration as days, hours, minutes and seconds.
func formatSpan(d time.Duration) string {
	d = d.Round(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	if days > 0 {
		return fmt.Sprintf("%dd%s", days, d)
	}
	return d.String()
}

// group formats an integer with thousands separators.
func group(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && c != '-' && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
