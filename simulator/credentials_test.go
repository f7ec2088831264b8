package simulator

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/registry"
)

func TestTestCredentialsShapes(t *testing.T) {
	reg := loadFixture(t)
	creds := TestCredentials(reg)
	shapes := map[string]*regexp.Regexp{
		"KIS_APP_KEY":        regexp.MustCompile(`^PS[A-Za-z0-9]{34}$`),
		"KIS_APP_SECRET":     regexp.MustCompile(`^[A-Za-z0-9+/]{180}$`),
		"ECOS_API_KEY":       regexp.MustCompile(`^[A-Z0-9]{20}$`),
		"FRED_API_KEY":       regexp.MustCompile(`^[a-z0-9]{32}$`),
		"UPBIT_ACCESS_KEY":   regexp.MustCompile(`^[A-Za-z0-9]{40}$`),
		"UPBIT_SECRET_KEY":   regexp.MustCompile(`^[A-Za-z0-9]{40}$`),
		"DATAGO_SERVICE_KEY": regexp.MustCompile(`^[A-Za-z0-9+/]{86}==$`),
	}
	if len(creds) != len(shapes) {
		t.Errorf("got %d credentials, want %d: %v", len(creds), len(shapes), keys(creds))
	}
	for env, re := range shapes {
		if !re.MatchString(creds[env]) {
			t.Errorf("%s = %q does not match %s", env, creds[env], re)
		}
	}
	if k := creds["DATAGO_SERVICE_KEY"]; !strings.Contains(k, "+") || !strings.Contains(k, "/") {
		t.Errorf("service key %q lacks + or /: it would not exercise encoding", k)
	}
	again := TestCredentials(reg)
	for env, v := range creds {
		if again[env] != v {
			t.Errorf("%s not deterministic", env)
		}
	}
	if creds["UPBIT_ACCESS_KEY"] == creds["UPBIT_SECRET_KEY"] {
		t.Error("access and secret key are equal")
	}
	if len(TestCredentials(nil)) != 0 {
		t.Error("nil registry gave credentials")
	}
}

func TestTestCredentialsCoverDefaultRegistry(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatalf("loading default registry: %v", err)
	}
	creds := TestCredentials(reg)
	for _, p := range reg.Providers {
		for _, role := range p.Auth.Roles() {
			if creds[p.Auth.Credentials[role]] == "" {
				t.Errorf("provider %s role %s (%s): no test credential", p.ID, role, p.Auth.Credentials[role])
			}
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
