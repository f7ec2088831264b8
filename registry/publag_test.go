package registry

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestPublicationLag: probe.publication_lag_days is optional, takes
// fractions, and a bad value names file, line, YAML path and value.
func TestPublicationLag(t *testing.T) {
	ok := strings.Replace(tourDataset, "interval_minutes: 60", "interval_minutes: 60\n  publication_lag_days: 1.5", 1)
	reg, err := load(t, baseProviders, map[string]string{"tour.yaml": ok})
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Dataset("tour").Probe.PublicationLag; got != 36*time.Hour {
		t.Errorf("publication lag = %v, want 36h", got)
	}
	reg, err = load(t, baseProviders, map[string]string{"tour.yaml": tourDataset})
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Dataset("tour").Probe.PublicationLag; got != 0 {
		t.Errorf("undeclared publication lag = %v, want 0 (the watch's default)", got)
	}

	for _, tc := range []struct{ value, want string }{
		{"0", `registry/datasets/tour.yaml:9: probe.publication_lag_days: expected a number of days greater than 0 and at most 731, got "0"`},
		{"-3", `registry/datasets/tour.yaml:9: probe.publication_lag_days: expected a number of days greater than 0 and at most 731, got "-3"`},
		{"800", `registry/datasets/tour.yaml:9: probe.publication_lag_days: expected a number of days greater than 0 and at most 731, got "800"`},
		{".nan", `registry/datasets/tour.yaml:9: probe.publication_lag_days: expected a number of days greater than 0 and at most 731, got ".nan"`},
		{`"3"`, `registry/datasets/tour.yaml:9: probe.publication_lag_days: expected a number of days, got "3" (a quoted string: remove the quotes)`},
		{"0.0000001", `registry/datasets/tour.yaml:9: probe.publication_lag_days: "0.0000001" days is less than a minute: a publication lag that small is not meant`},
		{"[1]", `registry/datasets/tour.yaml:9: probe.publication_lag_days: expected a number of days, got a list`},
	} {
		body := strings.Replace(tourDataset, "interval_minutes: 60", "interval_minutes: 60\n  publication_lag_days: "+tc.value, 1)
		_, err := load(t, baseProviders, map[string]string{"tour.yaml": body})
		var problems Errors
		if !errors.As(err, &problems) {
			t.Fatalf("%s: err = %v", tc.value, err)
		}
		if got := problems.Error(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.value, got, tc.want)
		}
	}
}
