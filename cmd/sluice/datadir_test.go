package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/sink"
)

func clearLakeEnv(t *testing.T) {
	for _, name := range []string{envS3Bucket, envS3Endpoint, envS3Region, envS3PartSize, envS3Concurrency, envDataDir} {
		t.Setenv(name, "")
	}
}

// bindLake binds the lake flags as a command does (after the environment
// is set) and parses args.
func bindLake(t *testing.T, args ...string) (*lakeFlags, *pflag.FlagSet) {
	t.Helper()
	var l lakeFlags
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	l.bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return &l, fs
}

// TestDataDirYieldsEveryLocalPath: one --data-dir holds the lake, the
// token files, Temporal's database, the watch store and the operator
// token; an empty value means ./var.
func TestDataDirYieldsEveryLocalPath(t *testing.T) {
	d := dataDir{dir: "/srv/sluice"}
	for got, want := range map[string]string{
		d.lake():          "/srv/sluice/lake",
		d.tokens():        "/srv/sluice/tokens",
		d.temporal():      "/srv/sluice/temporal",
		d.watchDB():       "/srv/sluice/watch/watch.db",
		d.operatorToken(): "/srv/sluice/operator-token",
		d.codecKey():      "/srv/sluice/codec.key",
	} {
		if got != want {
			t.Errorf("path %q, want %q", got, want)
		}
	}
	if got := (dataDir{}).lake(); got != filepath.Join("var", "lake") {
		t.Errorf("empty data dir: lake %q, want var/lake", got)
	}
	var w watchDBFlag
	if got := w.dsnIn(d); got != "sqlite:/srv/sluice/watch/watch.db" {
		t.Errorf("default watch DSN %q", got)
	}
	w.dsn = "postgres://u:secret@db/sluice"
	if got := w.dsnIn(d); got != w.dsn {
		t.Errorf("--watch-db DSN %q", got)
	}
	if got := w.describe(d); strings.Contains(got, "secret") {
		t.Errorf("describe shows the password: %q", got)
	}
}

// TestEveryDataDirFlagReadsTheSameVariable: the commands that take
// --data-dir all read SLUICE_DATA_DIR, and the flag beats it.
func TestEveryDataDirFlagReadsTheSameVariable(t *testing.T) {
	t.Setenv(envDataDir, "/from-env")
	root := newRootCmd()
	n := 0
	for _, path := range [][]string{{"worker"}, {"dev"}, {"server"}, {"lake"}, {"status"}, {"watch", "status"}, {"changes"}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatalf("finding %v: %v", path, err)
		}
		f := cmd.Flags().Lookup("data-dir")
		if f == nil {
			f = cmd.PersistentFlags().Lookup("data-dir")
		}
		if f == nil {
			f = cmd.InheritedFlags().Lookup("data-dir")
		}
		if f == nil {
			t.Errorf("sluice %v has no --data-dir", path)
			continue
		}
		n++
		if f.DefValue != "/from-env" || !strings.Contains(f.Usage, envDataDir) {
			t.Errorf("sluice %v --data-dir: default %q, usage %q; want the environment's, naming %s", path, f.DefValue, f.Usage, envDataDir)
		}
		if got := f.Annotations[envAnnotation]; len(got) != 1 || got[0] != envDataDir {
			t.Errorf("sluice %v --data-dir annotation %v", path, got)
		}
	}
	if n == 0 {
		t.Fatal("no command checked")
	}
}

// TestLakeFlagsPrecedence: a flag beats its environment variable, which
// beats the default; an empty variable counts as unset.
func TestLakeFlagsPrecedence(t *testing.T) {
	clearLakeEnv(t)
	l, _ := bindLake(t)
	c, err := l.config()
	if err != nil {
		t.Fatal(err)
	}
	want := sink.Config{S3PartSize: sink.DefaultPartSize, S3Concurrency: sink.DefaultConcurrency, LocalDir: filepath.Join("var", "lake")}
	if *c != want {
		t.Errorf("defaults: %+v, want %+v", *c, want)
	}
	if l.describe() != "local lake var/lake" {
		t.Errorf("describe = %q", l.describe())
	}

	t.Setenv(envS3Bucket, "lake-env")
	t.Setenv(envS3Endpoint, "http://127.0.0.1:9000")
	t.Setenv(envS3Region, "ap-northeast-2")
	t.Setenv(envS3PartSize, "16MiB")
	t.Setenv(envS3Concurrency, "3")
	t.Setenv(envDataDir, "/srv/sluice")
	l, _ = bindLake(t)
	if c, err = l.config(); err != nil {
		t.Fatal(err)
	}
	want = sink.Config{S3Bucket: "lake-env", S3Endpoint: "http://127.0.0.1:9000", S3Region: "ap-northeast-2",
		S3PartSize: 16 << 20, S3Concurrency: 3, LocalDir: "/srv/sluice/lake"}
	if *c != want {
		t.Errorf("from env: %+v, want %+v", *c, want)
	}

	l, _ = bindLake(t, "--s3-bucket", "lake-flag", "--s3-part-size", "32MB", "--s3-concurrency", "8", "--data-dir", "d")
	if c, err = l.config(); err != nil {
		t.Fatal(err)
	}
	want = sink.Config{S3Bucket: "lake-flag", S3Endpoint: "http://127.0.0.1:9000", S3Region: "ap-northeast-2",
		S3PartSize: 32e6, S3Concurrency: 8, LocalDir: filepath.Join("d", "lake")}
	if *c != want {
		t.Errorf("flags over env: %+v, want %+v", *c, want)
	}
	if l.describe() != "s3://lake-flag at http://127.0.0.1:9000" {
		t.Errorf("describe = %q", l.describe())
	}
}

func TestLakeFlagsHelpNamesEnvironment(t *testing.T) {
	clearLakeEnv(t)
	_, fs := bindLake(t)
	for flag, env := range map[string]string{"s3-bucket": envS3Bucket, "s3-endpoint": envS3Endpoint, "s3-region": envS3Region,
		"s3-part-size": envS3PartSize, "s3-concurrency": envS3Concurrency, "data-dir": envDataDir} {
		f := fs.Lookup(flag)
		if f == nil {
			t.Errorf("--%s is not registered", flag)
			continue
		}
		if !strings.Contains(f.Usage, env) {
			t.Errorf("--%s help %q does not name %s", flag, f.Usage, env)
		}
		if got := f.Annotations[envAnnotation]; len(got) != 1 || got[0] != env {
			t.Errorf("--%s annotation %v, want [%s]", flag, got, env)
		}
	}
	if got := fs.Lookup("s3-part-size").DefValue; got != "8MiB" {
		t.Errorf("--s3-part-size default shows %q, want 8MiB", got)
	}
}

// TestLakeFlagsReject: a bad flag fails parsing; a bad variable fails the
// command that reads it (checkEnv), naming it and its value.
func TestLakeFlagsReject(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
		want []string // substrings of the error
	}{
		"bad env size":            {env: map[string]string{envS3PartSize: "lots"}, want: []string{envS3PartSize, `"lots"`}},
		"bad env concurrency":     {env: map[string]string{envS3Concurrency: "four"}, want: []string{envS3Concurrency, `"four"`}},
		"env small part size":     {env: map[string]string{envS3PartSize: "3"}, want: []string{envS3PartSize, `"3"`, "5MiB to 5GiB"}},
		"env zero concurrency":    {env: map[string]string{envS3Concurrency: "0"}, want: []string{envS3Concurrency, `"0"`, "1 to 64"}},
		"env huge concurrency":    {env: map[string]string{envS3Concurrency: "65"}, want: []string{envS3Concurrency, `"65"`, "1 to 64"}},
		"endpoint alone":          {args: []string{"--s3-endpoint", "http://x"}, want: []string{"--s3-bucket"}},
		"small part":              {args: []string{"--s3-bucket", "b", "--s3-part-size", "1MiB"}, want: []string{"--s3-part-size", "1MiB", "5MiB to 5GiB"}},
		"huge concurrency":        {args: []string{"--s3-bucket", "b", "--s3-concurrency", "1000"}, want: []string{"--s3-concurrency", "1000", "1 to 64"}},
		"zero concurrency":        {args: []string{"--s3-concurrency", "0"}, want: []string{"--s3-concurrency", `"0"`, "1 to 64"}},
		"negative concurrency":    {args: []string{"--s3-concurrency", "-1"}, want: []string{"--s3-concurrency", `"-1"`, "1 to 64"}},
		"zero part size":          {args: []string{"--s3-part-size", "0"}, want: []string{"--s3-part-size", `"0"`, "5MiB to 5GiB"}},
		"bad size unit":           {args: []string{"--s3-part-size", "8 parsecs"}, want: []string{"--s3-part-size", "unknown unit"}},
		"bad endpoint at opening": {args: []string{"--s3-bucket", "b", "--s3-endpoint", "127.0.0.1:9000"}, want: []string{"not an http(s) URL"}},
	} {
		t.Run(name, func(t *testing.T) {
			clearLakeEnv(t)
			t.Setenv(envDataDir, t.TempDir())
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			delete(envProblems, envS3PartSize)
			delete(envProblems, envS3Concurrency)
			var l lakeFlags
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			l.bind(fs)
			err := fs.Parse(tc.args) // a flag out of range fails here
			if err == nil {
				err = checkEnv(fs) // as the root command does before running
			}
			if err == nil {
				var s sink.Sink
				s, err = l.open(context.Background())
				if err == nil {
					s.Close()
					t.Fatalf("open succeeded, want an error mentioning %q", tc.want)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	delete(envProblems, envS3PartSize)
	delete(envProblems, envS3Concurrency)
}
