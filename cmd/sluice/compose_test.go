package main

import (
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/status"
	"github.com/sluicehq/sluice/watch/store"
)

type composeFile struct {
	// WatchDB is the watch store's DSN (x-watch-db).
	WatchDB  string `yaml:"x-watch-db"`
	Services map[string]struct {
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Profiles    []string          `yaml:"profiles"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Build *struct {
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
	} `yaml:"services"`
}

func flagEnvs(cmd *cobra.Command) map[string]string {
	out := map[string]string{}
	visit := func(f *pflag.Flag) {
		if v := f.Annotations[envAnnotation]; len(v) == 1 {
			out[v[0]] = f.Name
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return out
}

// TestComposeMatchesFlags keeps deploy/docker-compose.yml honest without a
// Docker engine: every SLUICE_* variable given to the worker and simulator
// services is one a flag of that command reads, every flag in their
// command lines exists, and every other variable is a credential name the
// registry declares or the AWS credential chain's.
func TestComposeMatchesFlags(t *testing.T) {
	data, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("parsing compose file: %v", err)
	}
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]bool{}
	for _, p := range reg.Providers {
		for _, name := range p.Auth.Credentials {
			creds[name] = true
		}
	}
	root := newRootCmd()
	for _, svc := range []string{"worker", "simulator", "status"} {
		s, ok := cf.Services[svc]
		if !ok {
			t.Fatalf("compose file has no %s service", svc)
		}
		if s.Build == nil || s.Build.Dockerfile != "deploy/Dockerfile" {
			t.Errorf("%s: not built from deploy/Dockerfile", svc)
		}
		sub, _, err := root.Find(s.Command[:1])
		if err != nil || sub.Name() != s.Command[0] {
			t.Fatalf("%s: command %q is not a sluice subcommand", svc, s.Command)
		}
		envs := flagEnvs(sub)
		envs["SLUICE_REGISTRY"] = "registry"
		for key := range s.Environment {
			switch {
			case envs[key] != "":
			case creds[key] && svc == "worker":
			case strings.HasPrefix(key, "AWS_") && (svc == "worker" || svc == "status"):
			case (key == status.EnvOperatorToken || key == status.EnvOperatorTokenFile) && svc == "status":
			default:
				t.Errorf("%s: environment variable %s is read by no flag of `sluice %s`", svc, key, s.Command[0])
			}
		}
		for _, arg := range s.Command[1:] {
			if name, ok := strings.CutPrefix(arg, "--"); ok {
				name, _, _ = strings.Cut(name, "=")
				if sub.Flags().Lookup(name) == nil {
					t.Errorf("%s: flag --%s is not a flag of `sluice %s`", svc, name, s.Command[0])
				}
			}
		}
	}
	if st := cf.Services["status"]; st.Environment["SLUICE_WATCH_DB"] != cf.WatchDB || st.Environment["SLUICE_S3_BUCKET"] == "" {
		t.Errorf("status: it must read the stack's watch database and lake: %v", st.Environment)
	}
	if !slices.Contains(cf.Services["simulator"].Profiles, "sim") {
		t.Error("the simulator must run under the sim profile")
	}
	for _, want := range []string{"postgresql", "temporal", "temporal-ui", "minio", "minio-init", "watch-db"} {
		if _, ok := cf.Services[want]; !ok {
			t.Errorf("compose file lacks the %s service", want)
		}
	}
	w := cf.Services["worker"].Environment
	for _, want := range []string{"SLUICE_TEMPORAL", "SLUICE_S3_BUCKET", "SLUICE_S3_ENDPOINT"} {
		if w[want] == "" {
			t.Errorf("worker environment lacks %s", want)
		}
	}
}

// TestComposeWatchDatabase: the watch store has a database of its own on
// the stack's PostgreSQL, which the store opens (ParseDSN), distinct from
// Temporal's; the watch-db one-shot creates it and its role, and workers
// start after it.
func TestComposeWatchDatabase(t *testing.T) {
	data, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("parsing compose file: %v", err)
	}
	kind, _, err := store.ParseDSN(cf.WatchDB)
	if err != nil || kind != store.Postgres {
		t.Fatalf("x-watch-db %q: %s %v", cf.WatchDB, kind, err)
	}
	u, err := url.Parse(cf.WatchDB)
	if err != nil {
		t.Fatal(err)
	}
	db, user := strings.TrimPrefix(u.Path, "/"), u.User.Username()
	if u.Hostname() != "postgresql" || db == "temporal" || db == "temporal_visibility" || db == "" {
		t.Errorf("x-watch-db names host %s database %s: want the stack's postgresql and a database of its own", u.Hostname(), db)
	}
	init, ok := cf.Services["watch-db"]
	if !ok {
		t.Fatal("no watch-db service")
	}
	cmd := strings.Join(init.Command, " ")
	for _, want := range []string{"CREATE DATABASE " + db + " OWNER " + user, "CREATE ROLE " + user + " LOGIN", "datname = '" + db + "'", "rolname = '" + user + "'"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("watch-db command lacks %q: %s", want, cmd)
		}
	}
	if init.DependsOn["postgresql"].Condition != "service_healthy" {
		t.Error("watch-db must wait for postgresql to be healthy")
	}
	if cf.Services["worker"].DependsOn["watch-db"].Condition != "service_completed_successfully" {
		t.Error("workers must start after watch-db created the database")
	}
}
