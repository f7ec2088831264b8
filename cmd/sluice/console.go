package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
	"github.com/sluicehq/sluice/watchsync"
)

// consoleLogger is sluice dev's log: every record at --log-level (at
// least info) to a log file under the data directory, and to the
// console only the warnings and errors a person must act on — or
// everything, at --log-level debug. It returns the logger and the file's
// path; close closes the file.
func consoleLogger(level, path string, console io.Writer) (*slog.Logger, func(), error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating the log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the log file: %w", err)
	}
	onConsole := max(lvl, slog.LevelWarn)
	if lvl <= slog.LevelDebug {
		onConsole = lvl
	}
	h := teeHandler{
		slog.NewTextHandler(f, &slog.HandlerOptions{Level: min(lvl, slog.LevelInfo)}),
		slog.NewTextHandler(console, &slog.HandlerOptions{Level: onConsole}),
	}
	return slog.New(h), func() { _ = f.Close() }, nil
}

// teeHandler hands each record to every handler that takes its level.
type teeHandler []slog.Handler

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

// watchSummary is the watch in one line: how many datasets it probes and
// how many are in each state, as the store has them now ("watch: 193
// datasets, 193 up").
func watchSummary(ctx context.Context, ws store.Store, datasets []string) (string, error) {
	if len(datasets) == 0 {
		return "watch: no dataset probed", nil
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	states, err := ws.States(qctx, time.Now(), datasets...)
	if err != nil {
		return "", fmt.Errorf("reading the watch's states: %w", err)
	}
	count := map[watch.State]int{}
	for _, s := range states {
		count[s.State]++
	}
	parts := []string{fmt.Sprintf("watch: %d datasets", len(datasets))}
	for _, st := range []watch.State{watch.Up, watch.Degraded, watch.Down, watch.Unknown} {
		if n := count[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", "), nil
}

// watchedDatasets are the datasets a watch sync left watched (started,
// kept or restarted; not stopped).
func watchedDatasets(steps []watchsync.Step) []string {
	var out []string
	for _, s := range steps {
		if s.Action != watchsync.Stop {
			out = append(out, s.Dataset)
		}
	}
	return out
}
