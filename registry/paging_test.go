package registry

import (
	"errors"
	"strings"
	"testing"
)

// TestPagingDeclarations: defaults.max_pages_per_call bounds the pages an
// ingest follows (1,000 unless declared), and a dataset may declare that
// it is the first page of a longer list by design.
func TestPagingDeclarations(t *testing.T) {
	reg, err := load(t, baseProviders, map[string]string{"tour.yaml": tourDataset})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Defaults.MaxPagesPerCall != DefaultMaxPagesPerCall || reg.Dataset("tour").Request.FirstPageOnly() {
		t.Errorf("defaults: max pages %d, first page only %v", reg.Defaults.MaxPagesPerCall, reg.Dataset("tour").Request.FirstPageOnly())
	}
	providers := strings.Replace(baseProviders, "  stale_after_days: 180\n", "  stale_after_days: 180\n  max_pages_per_call: 40\n", 1)
	first := strings.Replace(tourDataset, "  params:", "  paging: first_page\n  params:", 1)
	reg, err = load(t, providers, map[string]string{"tour.yaml": first})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Defaults.MaxPagesPerCall != 40 || !reg.Dataset("tour").Request.FirstPageOnly() {
		t.Errorf("declared: max pages %d, first page only %v", reg.Defaults.MaxPagesPerCall, reg.Dataset("tour").Request.FirstPageOnly())
	}

	for _, tc := range []struct{ providers, dataset, want string }{
		{strings.Replace(baseProviders, "  stale_after_days: 180\n", "  stale_after_days: 180\n  max_pages_per_call: 0\n", 1), tourDataset,
			`registry/providers.yaml:4: defaults.max_pages_per_call`},
		{baseProviders, strings.Replace(tourDataset, "  params:", "  paging: some\n  params:", 1),
			`registry/datasets/tour.yaml:6: request.paging: invalid value "some" (allowed: all, first_page)`},
	} {
		_, err := load(t, tc.providers, map[string]string{"tour.yaml": tc.dataset})
		var problems Errors
		if !errors.As(err, &problems) || !strings.Contains(problems.Error(), tc.want) {
			t.Errorf("err = %v, want one naming %s", err, tc.want)
		}
	}

	def, err := Default(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if def.Defaults.MaxPagesPerCall != 1000 || !def.Dataset("visitkorea-tourism").Request.FirstPageOnly() {
		t.Errorf("default registry: max pages %d, visitkorea first page only %v", def.Defaults.MaxPagesPerCall,
			def.Dataset("visitkorea-tourism").Request.FirstPageOnly())
	}
}
