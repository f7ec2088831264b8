package main

import (
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	temporalschema "go.temporal.io/server/schema"
	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/schedules"
	"github.com/sluicehq/sluice/status"
	"github.com/sluicehq/sluice/watch/store"
)

type composeFile struct {
	// WatchDB is the watch store's DSN (x-watch-db).
	WatchDB string `yaml:"x-watch-db"`
	// TemporalVersion is x-temporal-version.
	TemporalVersion string `yaml:"x-temporal-version"`
	Services        map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Profiles    []string          `yaml:"profiles"`
		User        string            `yaml:"user"`
		Restart     string            `yaml:"restart"`
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
		if v := f.Annotations[secretEnvAnnotation]; len(v) == 1 {
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
	checked := []string{"worker", "simulator", "watch-sync", "status"}
	// Every service running the Sluice image is checked here, or (the
	// schedules one-shot) by TestComposeSyncsSchedules.
	for name, s := range cf.Services {
		if s.Build != nil && !slices.Contains(checked, name) && name != "schedules" {
			t.Errorf("service %s runs the Sluice image but no test checks its command and variables", name)
		}
	}
	for _, svc := range checked {
		s, ok := cf.Services[svc]
		if !ok {
			t.Fatalf("compose file has no %s service", svc)
		}
		if s.Build == nil || s.Build.Dockerfile != "deploy/Dockerfile" {
			t.Errorf("%s: not built from deploy/Dockerfile", svc)
		}
		// The command and its subcommands (watch sync), up to the flags.
		words := s.Command
		for i, w := range words {
			if strings.HasPrefix(w, "-") {
				words = words[:i]
				break
			}
		}
		sub, rest, err := root.Find(words)
		if err != nil || sub == root || len(rest) > 0 || sub.Name() != words[len(words)-1] {
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
	for _, want := range []string{"SLUICE_TEMPORAL", "SLUICE_S3_BUCKET", "SLUICE_S3_ENDPOINT", "SLUICE_CODEC_KEY"} {
		if w[want] == "" {
			t.Errorf("worker environment lacks %s", want)
		}
	}
	// Workers on several hosts share one KIS token through the keepers,
	// and the key that seals them is required, never defaulted.
	if w["SLUICE_TOKEN_STORE"] != tokensKeeper {
		t.Errorf("SLUICE_TOKEN_STORE = %q, want %s", w["SLUICE_TOKEN_STORE"], tokensKeeper)
	}
	if !strings.HasPrefix(w["SLUICE_CODEC_KEY"], "${SLUICE_CODEC_KEY:?") {
		t.Errorf("SLUICE_CODEC_KEY = %q: it must be required from the host (${SLUICE_CODEC_KEY:?…}), never a value in the file", w["SLUICE_CODEC_KEY"])
	}
}

// TestComposeWorkersAreNotRoot: the worker and simulator services run as
// the image's nonroot user, which the Dockerfile makes owner of the data
// directory the worker's volume is mounted on.
func TestComposeWorkersAreNotRoot(t *testing.T) {
	data, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}
	root := func(user string) bool {
		name, _, _ := strings.Cut(user, ":")
		return name == "0" || name == "root"
	}
	for _, svc := range []string{"worker", "simulator"} {
		if u := cf.Services[svc].User; root(u) {
			t.Errorf("%s runs as %q", svc, u)
		}
	}
	df, err := os.ReadFile("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var user string
	var owned bool
	for _, line := range strings.Split(string(df), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "USER":
			user = f[1]
		case len(f) >= 3 && f[0] == "COPY" && slices.Contains(f, "/var/lib/sluice") && slices.Contains(f, "--chown=65532:65532"):
			owned = true
		}
	}
	if user == "" || root(user) {
		t.Errorf("the image's last USER is %q, want a non-root user", user)
	}
	if w := cf.Services["worker"].User; w != "" && w != user {
		t.Errorf("worker user %q differs from the image's %q, which owns the data directory", w, user)
	}
	if !owned {
		t.Error("the Dockerfile does not create /var/lib/sluice owned by the nonroot user (65532): the worker's volume would be root's")
	}
	if !strings.Contains(string(df), "/var/lib/sluice") || cf.Services["worker"].Environment["SLUICE_DATA_DIR"] != "/var/lib/sluice" {
		t.Error("the worker's data directory and the image's disagree")
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

// TestComposeSyncsSchedules: a one-shot service runs
// `sluice schedules sync` once the namespace exists, against the same
// Temporal, namespace and task queue as the workers, with the image the
// workers run (so the registry they run), reading only variables its
// flags read.
func TestComposeSyncsSchedules(t *testing.T) {
	data, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("parsing compose file: %v", err)
	}
	s, ok := cf.Services["schedules"]
	if !ok {
		t.Fatal("compose file has no schedules service")
	}
	if !slices.Equal(s.Command, []string{"schedules", "sync"}) {
		t.Errorf("schedules command %q, want schedules sync", s.Command)
	}
	sub, _, err := newRootCmd().Find(s.Command)
	if err != nil || sub.CommandPath() != "sluice schedules sync" {
		t.Fatalf("%q is not a sluice subcommand: %v", s.Command, err)
	}
	envs := flagEnvs(sub)
	envs["SLUICE_REGISTRY"] = "registry"
	for key := range s.Environment {
		if envs[key] == "" {
			t.Errorf("schedules: environment variable %s is read by no flag of `sluice schedules sync`", key)
		}
	}
	if v := s.Environment["SLUICE_SCHEDULE_CATCHUP_WINDOW"]; v != "" {
		if d, err := time.ParseDuration(v); err != nil || d < schedules.MinCatchupWindow {
			t.Errorf("SLUICE_SCHEDULE_CATCHUP_WINDOW %q: %v", v, err)
		}
	}
	w := cf.Services["worker"]
	for _, k := range []string{"SLUICE_TEMPORAL", "SLUICE_NAMESPACE", "SLUICE_TASK_QUEUE"} {
		if s.Environment[k] == "" || s.Environment[k] != w.Environment[k] {
			t.Errorf("%s: schedules %q, workers %q: the schedules must start what the workers run", k, s.Environment[k], w.Environment[k])
		}
	}
	if s.DependsOn["temporal-namespace"].Condition != "service_completed_successfully" {
		t.Error("the sync must wait for the namespace to exist")
	}
	if s.Build == nil || w.Build == nil || s.Build.Dockerfile != w.Build.Dockerfile {
		t.Error("the sync must run the workers' image (their registry)")
	}
	if s.Restart != "no" || len(s.Profiles) != 0 {
		t.Errorf("schedules: restart %q, profiles %v; want a one-shot of the default profile", s.Restart, s.Profiles)
	}
}

// TestComposeRegistersBackfillAttributes: the namespace step registers
// every search attribute the embedded server does, with its type, so the
// Web UI lists backfills with their state and share done under compose too.
func TestComposeRegistersBackfillAttributes(t *testing.T) {
	data, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("parsing compose file: %v", err)
	}
	cmd := strings.Join(cf.Services["temporal-namespace"].Command, " ")
	types := map[enumspb.IndexedValueType]string{enumspb.INDEXED_VALUE_TYPE_KEYWORD: "Keyword", enumspb.INDEXED_VALUE_TYPE_INT: "Int"}
	for name, typ := range embedded.SearchAttributes {
		if !strings.Contains(cmd, "--name "+name+" --type "+types[typ]) {
			t.Errorf("temporal-namespace does not register %s as %s: %s", name, types[typ], cmd)
		}
	}
}

// requiredVersion returns the version go.mod requires of module.
func requiredVersion(t *testing.T, module string) string {
	t.Helper()
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	t.Fatalf("go.mod does not require %s", module)
	return ""
}

// TestComposeVersionsMatchBuild: the compose stack runs the Temporal
// server, admin tools and Web UI of the versions Sluice is built and
// tested against (the server and UI modules go.mod requires, which the
// embedded server runs), and its schema step applies the schema
// directories that server version ships.
func TestComposeVersionsMatchBuild(t *testing.T) {
	data, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("parsing compose file: %v", err)
	}
	server := strings.TrimPrefix(requiredVersion(t, "go.temporal.io/server"), "v")
	ui := strings.TrimPrefix(requiredVersion(t, "github.com/temporalio/ui-server/v2"), "v")
	if cf.TemporalVersion != server {
		t.Errorf("x-temporal-version %q, want %s (go.temporal.io/server in go.mod)", cf.TemporalVersion, server)
	}
	for svc, want := range map[string]string{
		"temporal":           "temporalio/server:" + server,
		"temporal-schema":    "temporalio/admin-tools:" + server,
		"temporal-namespace": "temporalio/admin-tools:" + server,
		"temporal-ui":        "temporalio/ui:" + ui,
	} {
		if got := cf.Services[svc].Image; got != want {
			t.Errorf("%s runs image %q, want %q (the version Sluice embeds and tests)", svc, got, want)
		}
	}
	cmd := strings.Join(cf.Services["temporal-schema"].Command, " ")
	for _, dir := range []string{"postgresql/v12/temporal/versioned", "postgresql/v12/visibility/versioned"} {
		if !strings.Contains(cmd, "/etc/temporal/schema/"+dir) {
			t.Errorf("temporal-schema does not apply %s: %s", dir, cmd)
		}
		if _, err := fs.Stat(temporalschema.Assets(), dir); err != nil {
			t.Errorf("Temporal %s ships no %s: %v", server, dir, err)
		}
	}
}
