package simulator

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/registry"
)

// checkFaults validates each fault's values and its target against reg:
// the provider, when set, must be declared, and the dataset, when set,
// must be declared and belong to that provider. New and SetFaults share
// it, so a fault the simulator could never match is an error, not a
// silent no-op.
func checkFaults(reg *registry.Registry, faults []Fault) error {
	for _, f := range faults {
		if err := f.Validate(); err != nil {
			return err
		}
		if f.Provider != "" && reg.Provider(f.Provider) == nil {
			return fmt.Errorf("fault names provider %q, which the registry does not declare (known providers: %s)",
				f.Provider, knownProviders(reg))
		}
		if f.Dataset == "" {
			continue
		}
		ds := reg.Dataset(f.Dataset)
		switch {
		case ds == nil:
			return fmt.Errorf("fault names dataset %q, which the registry does not declare (datasets of %s: %s)",
				f.Dataset, f.Provider, datasetsOf(reg, f.Provider))
		case ds.Provider != f.Provider:
			return fmt.Errorf("fault names dataset %q of provider %q, but the dataset belongs to %q",
				f.Dataset, f.Provider, ds.Provider)
		}
	}
	return nil
}

// knownProviders lists the registry's provider ids, comma-separated.
func knownProviders(reg *registry.Registry) string {
	ids := make([]string, 0, len(reg.Providers))
	for _, p := range reg.Providers {
		ids = append(ids, p.ID)
	}
	return strings.Join(ids, ", ")
}

// datasetsOf lists up to ten dataset ids of provider, comma-separated,
// with a count of the rest.
func datasetsOf(reg *registry.Registry, provider string) string {
	const most = 10
	var ids []string
	all := reg.DatasetsOf(provider)
	for i, ds := range all {
		if i == most {
			ids = append(ids, fmt.Sprintf("and %d more", len(all)-most))
			break
		}
		ids = append(ids, ds.ID)
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}
