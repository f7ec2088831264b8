package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/registry"
)

func init() { register(newRegistryCmd) }

// registryDir is the --registry flag, shared by every command that reads
// the registry.
var registryDir string

func addRegistryFlag(root *cobra.Command) {
	root.PersistentFlags().StringVar(&registryDir, "registry", os.Getenv("SLUICE_REGISTRY"),
		"registry directory holding providers.yaml and datasets/ (env SLUICE_REGISTRY; default: the registry built into the binary)")
}

// loadRegistry loads the registry named by --registry, or the embedded
// default. The returned registry is nil whenever err is not.
func loadRegistry() (*registry.Registry, error) {
	reg, err := loadRegistryForReport()
	if err != nil {
		return nil, err
	}
	return reg, nil
}

// loadRegistryForReport is loadRegistry, but also returns the partial
// registry beside a validation error so that a report can show it.
func loadRegistryForReport() (*registry.Registry, error) {
	if registryDir == "" {
		return registry.Default(registry.Options{})
	}
	return registry.LoadDir(registryDir, registry.Options{})
}

func newRegistryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Inspect and validate the provider and dataset registry",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate",
		Short: "Load the registry, run the budget gate and print the budget table",
		Long: `Loads providers.yaml and datasets/*.yaml, checks every field, and runs the
budget gate: for every scope instance, the daily probes (× headroom) plus the
scheduled ingest calls must fit every declared limit. Prints one row per
scope instance and everything that needs checking (확인 필요); exits 1 on any
violation, listing every one with its file, line and YAML path.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := loadRegistryForReport()
			out := cmd.OutOrStdout()
			if reg != nil {
				if werr := registry.WriteReport(out, reg); werr != nil {
					return werr
				}
			}
			var problems registry.Errors
			if errors.As(err, &problems) {
				fmt.Fprintf(cmd.ErrOrStderr(), "\n%d problem(s):\n", len(problems))
				for _, p := range problems {
					fmt.Fprintln(cmd.ErrOrStderr(), p)
				}
				return exitError{code: 1}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "\nregistry OK: %d provider(s), %d dataset(s), %d scope instance(s)\n",
				len(reg.Providers), len(reg.Datasets), len(reg.Scopes))
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the registry's datasets: id, provider, scope instance, probe interval, ingest schedule",
		Args:  cobra.NoArgs,
		RunE: withRegistry(func(cmd *cobra.Command, reg *registry.Registry) error {
			t := newTable(cmd.OutOrStdout(), "DATASET\tPROVIDER\tSCOPE\tPROBE\tINGEST\tNAME")
			for _, d := range reg.Datasets {
				var scopes []string
				for _, s := range reg.ScopesFor(d.ID) {
					scopes = append(scopes, s.ID)
				}
				probe, ingest := "-", "-"
				if d.Probe != nil {
					probe = fmt.Sprintf("%dm", d.Probe.IntervalMinutes)
				}
				if d.Ingest != nil {
					ingest = d.Ingest.Schedule
				}
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Provider, strings.Join(scopes, ","), probe, ingest, d.Name)
			}
			return t.Flush()
		}),
	})
	return cmd
}

// withRegistry is the RunE of a command that takes no arguments and works
// on the loaded registry: the registry is loaded (an error names the file,
// field and value) before run is called.
func withRegistry(run func(cmd *cobra.Command, reg *registry.Registry) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		reg, err := loadRegistry()
		if err != nil {
			return err
		}
		return run(cmd, reg)
	}
}
