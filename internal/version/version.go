// Package version holds the build version of Sluice, set at link time.
package version

// Version is the Sluice release, injected with
// -ldflags "-X github.com/sluicehq/sluice/internal/version.Version=…".
// It is "dev" in a plain go build.
var Version = "dev"

// UserAgent is the User-Agent header value Sluice sends to providers.
func UserAgent() string {
	return "Sluice/" + Version + " (+https://github.com/sluicehq/sluice)"
}
