package worker_test

import (
	"go.temporal.io/sdk/activity"
)

func activityName(name string) activity.RegisterOptions { return activity.RegisterOptions{Name: name} }

// nopLogger silences the Temporal SDK in benchmarks.
type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
func (nopLogger) Error(string, ...any) {}
