package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/registry"
)

func init() {
	register(newMaintenanceCmd)
}

// notificationsFlag is the --notifications flag of the commands that run
// a worker: the notifications file (docs/notifications.md).
type notificationsFlag struct{ path string }

func (n *notificationsFlag) bind(fs *pflag.FlagSet) {
	stringFlag(fs, &n.path, "notifications", "SLUICE_NOTIFICATIONS", "",
		"the notifications file: sinks (webhook, slack) whose URLs and keys come from the environment variables it names (empty: the sinks SLUICE_NOTIFY_WEBHOOK_URL, SLUICE_NOTIFY_WEBHOOK_KEY and SLUICE_NOTIFY_SLACK_URL set, if any); docs/notifications.md")
}

// load reads the notifications configuration; secrets come from the
// environment (NAME, or the file NAME_FILE names).
func (n *notificationsFlag) load() (*notify.Config, error) {
	cfg, err := notify.Load(n.path, connector.EnvCredentials)
	if err != nil {
		return nil, fmt.Errorf("--notifications (env SLUICE_NOTIFICATIONS): %w", err)
	}
	return cfg, nil
}

func newMaintenanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "maintenance",
		Short: "Declare, list and end maintenance windows, which silence notifications",
		Long: `Maintenance windows of a provider or a dataset, kept in the watch store
(--watch-db, or SQLite under --data-dir) beside those the registry declares
(maintenance lists). Changes confirmed inside a window are recorded as always
but nobody is notified of them; the public status page shows the windows open
or to come. docs/notifications.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newMaintenanceAddCmd(), newMaintenanceListCmd(), newMaintenanceEndCmd())
	return cmd
}

// storeFlags are the maintenance commands' flags naming the watch store.
type storeFlags struct {
	db      watchDBFlag
	dataDir dataDir
}

func (s *storeFlags) bind(fs *pflag.FlagSet) {
	s.db.bind(fs)
	s.dataDir.bind(fs, "the default watch store lives in its watch/ subdirectory")
}

// parseMaintenanceTime reads a time flag: RFC 3339 (2026-12-08T01:00:00+09:00), or
// "now".
func parseMaintenanceTime(flag, s string, now time.Time) (time.Time, error) {
	if s == "" || s == "now" {
		return now, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s %q: want an RFC 3339 time with an offset, such as 2026-12-08T01:00:00+09:00, or now", flag, s)
	}
	return t, nil
}

func newMaintenanceAddCmd() *cobra.Command {
	var sf storeFlags
	var provider, dataset, start, end, reason string
	var dur time.Duration
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Declare a maintenance window of a provider or a dataset",
		Long: `Records a maintenance window: from --start (default now) to --end, or for
--for. A provider's window covers each of its datasets.`,
		Example: `  sluice maintenance add --provider kis --for 2h --reason "KIS system upgrade"
  sluice maintenance add --dataset fred-dgs10 --start 2026-12-08T01:00:00+09:00 --end 2026-12-08T03:00:00+09:00`,
		Args: cobra.NoArgs,
		RunE: withRegistry(func(cmd *cobra.Command, reg *registry.Registry) error {
			w := notify.Window{Reason: reason}
			switch {
			case (provider == "") == (dataset == ""):
				return fmt.Errorf("name exactly one of --provider and --dataset")
			case provider != "":
				if reg.Provider(provider) == nil {
					return fmt.Errorf("--provider %s: not in the registry", provider)
				}
				w.Provider = provider
			default:
				ds := reg.Dataset(dataset)
				if ds == nil {
					return fmt.Errorf("--dataset %s: not in the registry (list them with `sluice registry list`)", dataset)
				}
				w.Dataset, w.Provider = ds.ID, ds.Provider
			}
			now := time.Now()
			var err error
			if w.Start, err = parseMaintenanceTime("start", start, now); err != nil {
				return err
			}
			switch {
			case (end == "") == (dur == 0):
				return fmt.Errorf("give exactly one of --end and --for")
			case dur < 0:
				return fmt.Errorf("--for %s: must be positive", dur)
			case dur > 0:
				w.End = w.Start.Add(dur)
			default:
				if w.End, err = parseMaintenanceTime("end", end, now); err != nil {
					return err
				}
			}
			st, err := sf.db.open(cmd.Context(), sf.dataDir)
			if err != nil {
				return err
			}
			defer st.Close()
			if w, err = st.AddMaintenance(cmd.Context(), w); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "maintenance window %s of %s from %s to %s\n", w.ID, w.Target(),
				w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339))
			return nil
		}),
	}
	sf.bind(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&provider, "provider", "", "the provider in maintenance (every dataset of it)")
	fs.StringVar(&dataset, "dataset", "", "the dataset in maintenance")
	fs.StringVar(&start, "start", "now", "when it starts: RFC 3339 with an offset, or now")
	fs.StringVar(&end, "end", "", "when it ends: RFC 3339 with an offset")
	fs.DurationVar(&dur, "for", 0, "how long it lasts from --start (instead of --end), e.g. 2h")
	fs.StringVar(&reason, "reason", "", "why, for the status page")
	return cmd
}

func newMaintenanceListCmd() *cobra.Command {
	var sf storeFlags
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the maintenance windows open or to come (the registry's and the store's)",
		Args:  cobra.NoArgs,
		RunE: withRegistry(func(cmd *cobra.Command, reg *registry.Registry) error {
			st, err := sf.db.openExisting(cmd.Context(), sf.dataDir)
			if err != nil {
				return err
			}
			defer st.Close()
			now := time.Now()
			since := now
			if all {
				since = time.Time{}
			}
			windows, err := st.Maintenance(cmd.Context(), since)
			if err != nil {
				return err
			}
			regWindows := notify.RegistryWindows(reg)
			if !all {
				regWindows = notify.ActiveAt(regWindows, now)
			}
			windows = append(regWindows, windows...)
			if asJSON {
				if windows == nil {
					windows = []notify.Window{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(windows)
			}
			writeMaintenance(cmd.OutOrStdout(), windows, now)
			return nil
		}),
	}
	sf.bind(cmd.Flags())
	cmd.Flags().BoolVar(&all, "all", false, "the ended windows too")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}

func writeMaintenance(w io.Writer, windows []notify.Window, now time.Time) {
	tw := newTable(w, "ID\tTARGET\tSTART\tEND\tSTATUS\tREASON")
	for _, m := range windows {
		id := m.ID
		if id == "" {
			id = "registry"
		}
		status := "planned"
		switch {
		case m.Active(now):
			status = "open"
		case !now.Before(m.End):
			status = "ended"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", id, m.Target(), m.Start.UTC().Format(time.RFC3339), m.End.UTC().Format(time.RFC3339), status, m.Reason)
	}
	tw.Flush()
}

func newMaintenanceEndCmd() *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "end ID",
		Short: "End a maintenance window now (one `sluice maintenance add` declared)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := sf.db.openExisting(cmd.Context(), sf.dataDir)
			if err != nil {
				return err
			}
			defer st.Close()
			w, err := st.EndMaintenance(cmd.Context(), args[0], time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "maintenance window %s of %s ends %s\n", w.ID, w.Target(), w.End.Format(time.RFC3339))
			return nil
		},
	}
	sf.bind(cmd.Flags())
	return cmd
}
