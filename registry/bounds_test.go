package registry

import (
	"strings"
	"testing"
	"time"
)

func TestBoundsDefaultsAndOverrides(t *testing.T) {
	providers := strings.Replace(baseProviders, "    terms_source: {url: \"https://apiportal.koreainvestment.com/intro\", verified_at: 2026-11-01}\n",
		"    terms_source: {url: \"https://apiportal.koreainvestment.com/intro\", verified_at: 2026-11-01}\n    bounds: {max_page_mib: 8, page_timeout_seconds: 120}\n", 1)
	if providers == baseProviders {
		t.Fatal("base providers changed: no kis terms_source line")
	}
	kisDS := "id: chart\nprovider: kis\n"
	kisBig := "id: chart-big\nprovider: kis\nbounds:\n  max_page_mib: 16\n  max_object_mib: 32\n"
	reg, err := load(t, providers, map[string]string{"tour.yaml": tourDataset, "chart.yaml": kisDS, "big.yaml": kisBig})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if got, want := reg.Provider("datago").Bounds, DefaultBounds(); got != want {
		t.Errorf("datago bounds = %+v, want the defaults %+v", got, want)
	}
	if got, want := reg.Dataset("tour").Bounds, DefaultBounds(); got != want {
		t.Errorf("tour bounds = %+v, want the defaults %+v", got, want)
	}
	kis := Bounds{PageBytes: 8 << 20, ObjectBytes: DefaultObjectBytes, PageTimeout: 2 * time.Minute}
	if got := reg.Provider("kis").Bounds; got != kis {
		t.Errorf("kis bounds = %+v, want %+v", got, kis)
	}
	if got := reg.Dataset("chart").Bounds; got != kis {
		t.Errorf("chart bounds = %+v, want its provider's %+v", got, kis)
	}
	big := Bounds{PageBytes: 16 << 20, ObjectBytes: 32 << 20, PageTimeout: 2 * time.Minute}
	if got := reg.Dataset("chart-big").Bounds; got != big {
		t.Errorf("chart-big bounds = %+v, want %+v", got, big)
	}
	if got := reg.Dataset("chart-big").BoundsOverride; got != (Bounds{PageBytes: 16 << 20, ObjectBytes: 32 << 20}) {
		t.Errorf("chart-big override = %+v", got)
	}
	if got := (Bounds{PageTimeout: time.Second}).OrDefault(); got != (Bounds{PageBytes: DefaultPageBytes, ObjectBytes: DefaultObjectBytes, PageTimeout: time.Second}) {
		t.Errorf("OrDefault = %+v", got)
	}
}

func TestBoundsProblems(t *testing.T) {
	withKIS := func(block string) string {
		return strings.Replace(baseProviders, "    terms_source: {url: \"https://apiportal.koreainvestment.com/intro\", verified_at: 2026-11-01}\n",
			"    terms_source: {url: \"https://apiportal.koreainvestment.com/intro\", verified_at: 2026-11-01}\n"+block, 1)
	}
	tests := []struct {
		name      string
		providers string
		dataset   string
		want      string
	}{
		{"zero page cap", withKIS("    bounds: {max_page_mib: 0}\n"), "",
			`registry/providers.yaml:26: providers[1].bounds.max_page_mib: value 0 out of range (1 to 4096)`},
		{"page cap beyond range", withKIS("    bounds:\n      max_page_mib: 5000\n"), "",
			`registry/providers.yaml:27: providers[1].bounds.max_page_mib: value 5000 out of range (1 to 4096)`},
		{"quoted size", withKIS("    bounds:\n      max_object_mib: \"1GiB\"\n"), "",
			`registry/providers.yaml:27: providers[1].bounds.max_object_mib: expected a whole number, got "1GiB" (a quoted string: remove the quotes)`},
		{"negative timeout", withKIS("    bounds:\n      page_timeout_seconds: -5\n"), "",
			`registry/providers.yaml:27: providers[1].bounds.page_timeout_seconds: value -5 out of range (1 to 1800)`},
		{"timeout beyond the activity's", withKIS("    bounds:\n      page_timeout_seconds: 3600\n"), "",
			`registry/providers.yaml:27: providers[1].bounds.page_timeout_seconds: value 3600 out of range (1 to 1800)`},
		{"unknown field", withKIS("    bounds:\n      max_page_bytes: 10\n"), "",
			`registry/providers.yaml:27: providers[1].bounds.max_page_bytes: unknown field "max_page_bytes" (allowed: max_page_mib, max_object_mib, page_timeout_seconds)`},
		{"provider's object below its page", withKIS("    bounds:\n      max_page_mib: 64\n      max_object_mib: 8\n"), "",
			`registry/providers.yaml:28: providers[1].bounds.max_object_mib: provider kis: max_object_mib 8 is less than max_page_mib 64: an object holds at least one whole page; raise max_object_mib or lower max_page_mib`},
		{"provider's page above the default object", withKIS("    bounds:\n      max_page_mib: 2048\n"), "",
			`registry/providers.yaml:27: providers[1].bounds.max_page_mib: provider kis: max_object_mib 1024 is less than max_page_mib 2048: an object holds at least one whole page; raise max_object_mib or lower max_page_mib`},
		{"dataset's object below its provider's page", baseProviders, "id: chart\nprovider: kis\nbounds:\n  max_object_mib: 4\n",
			`registry/datasets/chart.yaml:4: bounds.max_object_mib: dataset chart: max_object_mib 4 is less than max_page_mib 64: an object holds at least one whole page; raise max_object_mib or lower max_page_mib`},
		{"dataset's page above its provider's object", withKIS("    bounds: {max_object_mib: 100}\n"), "id: chart\nprovider: kis\nbounds: {max_page_mib: 200}\n",
			`registry/datasets/chart.yaml:3: bounds.max_page_mib: dataset chart: max_object_mib 100 is less than max_page_mib 200: an object holds at least one whole page; raise max_object_mib or lower max_page_mib`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := map[string]string{}
			if tt.dataset != "" {
				ds["chart.yaml"] = tt.dataset
			}
			_, err := load(t, tt.providers, ds)
			if err == nil {
				t.Fatal("loaded")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
