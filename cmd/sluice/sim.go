package main

import (
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	// Every simulated provider: sluice sim, sluice dev and the worker's
	// simulator credentials serve all of them.
	_ "github.com/sluicehq/sluice/simulator/all"
)

func init() { register(newSimCmd) }

func newSimCmd() *cobra.Command {
	var (
		addr      string
		rateScale float64
		seed      int
		faults    []string
		verbose   bool
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the provider simulator (KIS, ECOS, FRED, UPBIT, data.go.kr) on one port",
		Long: `Serves every provider of the registry at its real paths, with its real
envelopes, errors and limits, and deterministic synthetic data, until
interrupted. Point every provider's base URL at the printed URL and use the
printed simulator test keys (they are not secrets).

The registry's limits are enforced per scope instance; --rate-scale N
multiplies every rate (windows, minimum intervals, KIS's token interval,
UPBIT block times) but never the daily quotas. GET /_sim/stats proves the
callers never exceeded a limit; POST /_sim/faults, /_sim/reset and
/_sim/kis/expire-tokens steer it during tests.

--fault injects a fault and may be repeated, e.g.
  --fault provider=kis,error-rate=0.1
  --fault provider=fred,latency=200ms,jitter=100ms
  --fault provider=upbit,truncate-after=64
  --fault provider=datago,down
  --fault provider=ecos,reject-at=0.5
  --fault provider=datago,dataset=visitkorea-tourism,shape=gateway-json,code=22,status=429
  --fault provider=upbit,shape=429-text,times=3
  --fault provider=ecos,shape=html-maintenance,from=+1m,until=+5m
shape= answers with a real answer shape of the recorded corpus (see
docs/simulator.md); from/until bound any fault in time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(rateScale > 0) || math.IsInf(rateScale, 0) {
				return fmt.Errorf("--rate-scale %v (env SLUICE_RATE_SCALE): must be a positive finite number", rateScale)
			}
			reg, err := loadRegistry()
			if err != nil {
				return err
			}
			var fs []simulator.Fault
			for _, spec := range faults {
				f, err := simulator.ParseFault(spec)
				if err != nil {
					return err
				}
				fs = append(fs, f)
			}
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			sim, err := simulator.New(simulator.Options{
				Registry: reg, RateScale: rateScale, Seed: int64(seed), Faults: fs, Logger: logger,
			})
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			base, err := sim.Start(ctx, addr)
			if err != nil {
				return err
			}
			printSimBanner(cmd, reg, sim, base, fs, seed)
			select {
			case <-ctx.Done():
			case <-sim.Done():
			}
			return sim.Close()
		},
	}
	fl := cmd.Flags()
	stringFlag(fl, &addr, "addr", "SLUICE_SIM_ADDR", "127.0.0.1:8090", "HOST:PORT to serve on (port 0: a free port)")
	floatFlag(fl, &rateScale, "rate-scale", "SLUICE_RATE_SCALE", 1, "multiply every rate (not the daily quotas)")
	intFlag(fl, &seed, "seed", "SLUICE_SIM_SEED", 0, "seed of the synthetic data and the fault dice")
	fl.StringArrayVar(&faults, "fault", nil, "inject a fault: provider=ID[,dataset=ID],error-rate=F,error-status=N,latency=D,jitter=D,quantiles=D/D/…,slow-body=BYTES_PER_S,truncate-after=BYTES,reset-rate=F,down,reject-at=F,shape=NAME,code=C,msg-cd=C,message=TEXT,status=N,shape-rate=F,times=N,from=T,until=T (T: RFC 3339 or +DURATION; repeatable)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "log every request (never keys or tokens)")
	return cmd
}

func printSimBanner(cmd *cobra.Command, reg *registry.Registry, sim *simulator.Simulator, base string, faults []simulator.Fault, seed int) {
	out := cmd.OutOrStdout()
	var ids []string
	for _, p := range reg.Providers {
		ids = append(ids, p.ID)
	}
	fmt.Fprintf(out, "sluice sim: listening on %s\n", base)
	fmt.Fprintf(out, "  providers: %s (%d datasets, %d scope instances)\n", strings.Join(ids, ", "), len(reg.Datasets), len(reg.Scopes))
	fmt.Fprintf(out, "  rate scale %g (daily quotas are not scaled), seed %d, %d fault(s)\n", sim.RateScale(), seed, len(faults))
	fmt.Fprintf(out, "  control: %s%s\n", base, strings.Join(sim.ControlPaths(), "  "))
	fmt.Fprintln(out)
	fmt.Fprintln(out, "# Simulator test keys (fake, not secrets) for connectors pointed at the URL above:")
	creds := sim.Credentials()
	names := make([]string, 0, len(creds))
	for name := range creds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(out, "export %s='%s'\n", name, creds[name])
	}
}
