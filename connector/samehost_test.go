package connector

import (
	"net/url"
	"testing"
)

func TestSameHost(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"https://api.example/a", "https://api.example/b?x=1", true},
		{"https://api.example/a", "https://API.example:443/b", true},
		{"https://api.example:9443/a", "https://api.example:9443/b", true},
		{"https://api.example:9443/a", "https://api.example/b", false},
		{"https://api.example/a", "https://api.example.evil/b", false},
		{"https://api.example/a", "https://evil.example/b", false},
		{"http://api.example/a", "https://api.example/b", true}, // the upgrade, 80 to 443
		{"http://api.example:8080/a", "https://api.example:8080/b", true},
		{"http://api.example:8080/a", "https://api.example/b", false},
		{"http://api.example/a", "http://api.example:8080/b", false},
		{"https://127.0.0.1:1/a", "https://[::1]:1/b", false},
	} {
		from, _ := url.Parse(tc.from)
		to, _ := url.Parse(tc.to)
		if got := sameHost(from, to); got != tc.want {
			t.Errorf("sameHost(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}
