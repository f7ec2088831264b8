package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/embedded"
)

// allowInsecureRemoteFlag binds --allow-insecure-remote, which lets the
// embedded Temporal frontend and Web UI listen off loopback unprotected.
func allowInsecureRemoteFlag(fs *pflag.FlagSet, v *bool) {
	boolFlag(fs, v, "allow-insecure-remote", "SLUICE_ALLOW_INSECURE_REMOTE", false,
		"let --frontend-addr listen off loopback without mutual TLS and --ui-addr off loopback at all (anyone reaching them can read payloads and terminate workflows)")
}

// checkExposure refuses, before anything binds, to serve the embedded
// Temporal frontend off loopback without mutual TLS (plaintext or not,
// Temporal asks nobody who they are: anyone reaching it could terminate
// the rate limiters) and the Web UI, which has no authentication, off
// loopback at all, unless --allow-insecure-remote forces it.
func checkExposure(frontendAddr, uiAddr string, tls *embedded.TLS, allow bool) error {
	if allow {
		return nil
	}
	if frontendAddr != "" && !isLoopback(frontendAddr) && (tls == nil || tls.ClientCAFile == "") {
		return fmt.Errorf("refusing --frontend-addr %s: off loopback the Temporal frontend needs mutual TLS (sluice server --tls-cert-file, --tls-key-file, --tls-ca-file and --tls-client-ca-file), as anyone reaching it could terminate workflows; bind loopback (127.0.0.1) or pass --allow-insecure-remote to force it", frontendAddr)
	}
	if uiAddr != "" && uiAddr != embedded.UIOff && !isLoopback(uiAddr) {
		return fmt.Errorf("refusing --ui-addr %s: the Web UI has no authentication, and anyone reaching it could terminate workflows; bind loopback (127.0.0.1), use --ui-addr off, or pass --allow-insecure-remote to force it", uiAddr)
	}
	return nil
}
