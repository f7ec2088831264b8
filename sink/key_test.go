package sink

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func TestKey(t *testing.T) {
	seoul := time.FixedZone("KST", 9*3600)
	for _, tc := range []struct {
		name string
		spec KeySpec
		want string
	}{
		{"single day", KeySpec{Provider: "kis", Dataset: "kis_kospi_daily", From: day(2025, 1, 2), Ext: "json"},
			"provider=kis/job=kis_kospi_daily/year=2025/kis_kospi_daily_20250102.json.zst"},
		{"To equal to From", KeySpec{Provider: "kis", Dataset: "kis_kospi_daily", From: day(2025, 1, 2), To: day(2025, 1, 2), Ext: "json"},
			"provider=kis/job=kis_kospi_daily/year=2025/kis_kospi_daily_20250102.json.zst"},
		{"range under the first day's year", KeySpec{Provider: "ecos", Dataset: "ecos_base_rate", From: day(2024, 12, 30), To: day(2025, 1, 3), Ext: "xml"},
			"provider=ecos/job=ecos_base_rate/year=2024/ecos_base_rate_20241230-20250103.xml.zst"},
		{"the date as read in its own location", KeySpec{Provider: "upbit", Dataset: "upbit-krw.btc", From: time.Date(2025, 1, 1, 0, 30, 0, 0, seoul), Ext: "json"},
			"provider=upbit/job=upbit-krw.btc/year=2025/upbit-krw.btc_20250101.json.zst"},
		{"the time of day does not matter", KeySpec{Provider: "fred", Dataset: "DGS10", From: time.Date(2025, 3, 4, 23, 59, 59, 0, time.UTC),
			To: time.Date(2025, 3, 4, 1, 0, 0, 0, time.UTC), Ext: "json"},
			"provider=fred/job=DGS10/year=2025/DGS10_20250304.json.zst"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Key(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Key = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestKeyRejects(t *testing.T) {
	ok := KeySpec{Provider: "kis", Dataset: "kis_kospi_daily", From: day(2025, 1, 2), Ext: "json"}
	for _, tc := range []struct {
		name   string
		mutate func(*KeySpec)
		want   string
	}{
		{"empty provider", func(s *KeySpec) { s.Provider = "" }, "empty provider"},
		{"dot-dot dataset", func(s *KeySpec) { s.Dataset = ".." }, `dataset ".." starts with '.'`},
		{"dot-dot inside", func(s *KeySpec) { s.Dataset = "a..b" }, `contains ".."`},
		{"slash", func(s *KeySpec) { s.Provider = "kis/../x" }, "provider"},
		{"backslash", func(s *KeySpec) { s.Dataset = `a\b` }, "dataset"},
		{"equals", func(s *KeySpec) { s.Dataset = "job=x" }, "dataset"},
		{"space", func(s *KeySpec) { s.Dataset = "a b" }, "dataset"},
		{"upper-case ext", func(s *KeySpec) { s.Ext = "JSON" }, "extension"},
		{"dotted ext", func(s *KeySpec) { s.Ext = "json.gz" }, "extension"},
		{"empty ext", func(s *KeySpec) { s.Ext = "" }, "extension"},
		{"no date", func(s *KeySpec) { s.From = time.Time{} }, "missing logical date"},
		{"range backwards", func(s *KeySpec) { s.To = day(2025, 1, 1) }, "before it starts"},
		{"long dataset", func(s *KeySpec) { s.Dataset = strings.Repeat("d", 129) }, "longer than 128"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := ok
			tc.mutate(&spec)
			k, err := Key(spec)
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("Key = %q, %v; want an ErrInvalidKey error", k, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestValidatePrefix(t *testing.T) {
	for _, p := range []string{"", "provider=kis/", "provider=kis/job=kis_k", "provider"} {
		if err := ValidatePrefix(p); err != nil {
			t.Errorf("ValidatePrefix(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"/", "../", "a//b", "a/../b", "_sluice/", "_sluice", "a/.tmp"} {
		if err := ValidatePrefix(p); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidatePrefix(%q) = %v, want ErrInvalidKey", p, err)
		}
	}
}

func TestExtForContentType(t *testing.T) {
	for ct, want := range map[string]string{
		"application/json; charset=utf-8": "json",
		"text/json":                       "json",
		"application/vnd.api+json":        "json",
		"text/xml;charset=UTF-8":          "xml",
		"application/xml":                 "xml",
		"application/atom+xml":            "xml",
		"text/csv":                        "csv",
	} {
		got, err := ExtForContentType(ct)
		if err != nil || got != want {
			t.Errorf("ExtForContentType(%q) = %q, %v; want %q", ct, got, err, want)
		}
	}
	for _, ct := range []string{"text/html", "", "application/octet-stream"} {
		if got, err := ExtForContentType(ct); err == nil {
			t.Errorf("ExtForContentType(%q) = %q, want an error", ct, got)
		}
	}
}

// FuzzKey checks that whatever the parts, Key either rejects them or
// builds a valid key that stays under provider=<Provider>/.
func FuzzKey(f *testing.F) {
	f.Add("kis", "kis_kospi_daily", "json", int64(0), int64(0))
	f.Add("..", "a/b", "x", int64(-86400), int64(86400*400))
	f.Add("p", "d..", "JSON", int64(1e10), int64(-1))
	f.Fuzz(func(t *testing.T, provider, dataset, ext string, fromSec, spanSec int64) {
		from := time.Unix(fromSec, 0).UTC()
		spec := KeySpec{Provider: provider, Dataset: dataset, From: from, Ext: ext}
		if spanSec != 0 {
			spec.To = from.Add(time.Duration(spanSec%(86400*4000)) * time.Second)
		}
		k, err := Key(spec)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("error %v does not wrap ErrInvalidKey", err)
			}
			return
		}
		if err := ValidateKey(k); err != nil {
			t.Fatalf("Key built %q, which ValidateKey rejects: %v", k, err)
		}
		if !strings.HasPrefix(k, "provider="+provider+"/job="+dataset+"/year=") || !strings.HasSuffix(k, "."+ext+".zst") {
			t.Fatalf("Key built %q from %+v", k, spec)
		}
		if strings.Count(k, "/") != 3 {
			t.Fatalf("Key %q does not have exactly four segments", k)
		}
	})
}

// FuzzValidateKey checks that an accepted key can never leave the lake
// root as a path.
func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"a/b.zst", "../x", "a/./b", "a//b", "/a", "a/", "_sluice/x", "a\x00b", "é/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if err := ValidateKey(key); err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("error %v does not wrap ErrInvalidKey", err)
			}
			return
		}
		root := "/lake"
		p := filepath.Join(root, filepath.FromSlash(key))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) || filepath.Clean(p) != p || p == root {
			t.Fatalf("key %q maps to %q, outside or not below %s", key, p, root)
		}
		for _, seg := range strings.Split(key, "/") {
			if seg == "" || seg[0] == '.' {
				t.Fatalf("key %q has segment %q", key, seg)
			}
		}
		if err := ValidatePrefix(key); err != nil {
			t.Fatalf("valid key %q is not a valid prefix: %v", key, err)
		}
	})
}

func TestParseKey(t *testing.T) {
	for _, spec := range []KeySpec{
		{Provider: "kis", Dataset: "kis-kospi-daily", From: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), Ext: "json"},
		{Provider: "ecos", Dataset: "ecos-base-rate", From: time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC),
			To: time.Date(2016, 12, 31, 0, 0, 0, 0, time.UTC), Ext: "xml"},
		{Provider: "datago", Dataset: "a_b.c", From: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Ext: "json"},
	} {
		k, err := Key(spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseKey(k)
		if err != nil {
			t.Fatalf("ParseKey(%s): %v", k, err)
		}
		if got.Provider != spec.Provider || got.Dataset != spec.Dataset || !got.From.Equal(spec.From) || !got.To.Equal(spec.To) || got.Ext != spec.Ext {
			t.Errorf("ParseKey(%s) = %+v, want %+v", k, got, spec)
		}
	}
	for _, k := range []string{
		"", "provider=kis/job=x/year=2025/x_20250101.json",
		"provider=kis/job=x/year=2024/x_20250101.json.zst",          // wrong year
		"provider=kis/job=x/year=2025/y_20250101.json.zst",          // another dataset
		"provider=kis/job=x/year=2025/x_20250132.json.zst",          // no such date
		"provider=kis/job=x/year=2025/x_20250102-20250101.json.zst", // reversed
		"provider=kis/job=x/year=2025/x_20250101-20250101.json.zst", // a range of one day is written without it
		"provider=kis/job=x/year=2025/x_20250101.JSON.zst",
		"a/b/c/d", "provider=kis/job=x/x_20250101.json.zst",
	} {
		if _, err := ParseKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add("provider=kis/job=x/year=2025/x_20250101.json.zst")
	f.Add("provider=ecos/job=e/year=2016/e_20160101-20161231.xml.zst")
	f.Fuzz(func(t *testing.T, k string) {
		spec, err := ParseKey(k)
		if err != nil {
			return
		}
		if again, err := Key(spec); err != nil || again != k {
			t.Errorf("ParseKey(%q) = %+v, which builds %q, %v", k, spec, again, err)
		}
	})
}
