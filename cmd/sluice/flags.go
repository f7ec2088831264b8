package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// envAnnotation marks a flag with the environment variable that sets its
// default; the compose test reads it.
const envAnnotation = "sluice-env"

func annotate(fs *pflag.FlagSet, name, env string) {
	_ = fs.SetAnnotation(name, envAnnotation, []string{env})
}

// secretEnvAnnotation marks a flag naming a secret file with the
// environment variable that may hold the secret itself instead (NAME for
// the flag's NAME_FILE); the compose test reads it.
const secretEnvAnnotation = "sluice-secret-env"

func annotateSecret(fs *pflag.FlagSet, name, env string) {
	_ = fs.SetAnnotation(name, secretEnvAnnotation, []string{env})
}

// envProblems records environment variables that could not be parsed as
// their flag's type, by variable name; a command refuses to run when one
// of its own flags reads such a variable (checkEnv).
var envProblems = map[string]string{}

func badEnv(env, value, want string) {
	envProblems[env] = fmt.Sprintf("environment variable %s=%q is not %s", env, value, want)
}

// checkEnv returns an error naming every bad environment variable that a
// flag of cmd reads.
func checkEnv(fs *pflag.FlagSet) error {
	var msgs []string
	seen := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) {
		for _, env := range f.Annotations[envAnnotation] {
			if msg, bad := envProblems[env]; bad && !seen[env] {
				seen[env] = true
				msgs = append(msgs, msg)
			}
		}
	})
	if len(msgs) == 0 {
		return nil
	}
	sort.Strings(msgs)
	return errors.New(strings.Join(msgs, "; "))
}

func stringFlag(fs *pflag.FlagSet, p *string, name, env, def, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		def = v
	}
	fs.StringVar(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
	annotate(fs, name, env)
}

func boolFlag(fs *pflag.FlagSet, p *bool, name, env string, def bool, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		if b, err := strconv.ParseBool(v); err == nil {
			def = b
		} else {
			badEnv(env, v, "true or false")
		}
	}
	fs.BoolVar(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
	annotate(fs, name, env)
}

func floatFlag(fs *pflag.FlagSet, p *float64, name, env string, def float64, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			def = f
		} else {
			badEnv(env, v, "a number")
		}
	}
	fs.Float64Var(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
	annotate(fs, name, env)
}

func intFlag(fs *pflag.FlagSet, p *int, name, env string, def int, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		if i, err := strconv.Atoi(v); err == nil {
			def = i
		} else {
			badEnv(env, v, "a whole number")
		}
	}
	fs.IntVar(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
	annotate(fs, name, env)
}

func durationFlag(fs *pflag.FlagSet, p *time.Duration, name, env string, def time.Duration, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		if d, err := time.ParseDuration(v); err == nil {
			def = d
		} else {
			badEnv(env, v, "a duration such as 30s or 5m")
		}
	}
	fs.DurationVar(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
	annotate(fs, name, env)
}

// valueFlag binds a flag of its own type; a non-empty environment variable
// sets its default, and one v refuses is reported as not being want.
func valueFlag(fs *pflag.FlagSet, v pflag.Value, name, env, usage, want string) {
	if s, ok := os.LookupEnv(env); ok && s != "" {
		if err := v.Set(s); err != nil {
			badEnv(env, s, want)
		}
	}
	fs.Var(v, name, fmt.Sprintf("%s (env %s)", usage, env))
	annotate(fs, name, env)
}
