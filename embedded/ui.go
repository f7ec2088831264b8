package embedded

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// webUI is the running Temporal Web UI server.
type webUI struct {
	server *uiserver.Server
	url    string
	done   chan error
}

// startUI starts the Web UI on r's UI address, proxying to the frontend at
// frontendHostPort (over TLS when r has it), and waits until it answers
// its health check.
//
// The UI server binds its port itself and, should binding fail, logs a fatal
// error and exits the process. startUI therefore checks the port is free
// just before starting it; the remaining window for another process to take
// the port is a few microseconds.
func startUI(ctx context.Context, r resolved, frontendHostPort string) (*webUI, error) {
	host := r.uiHost
	port, err := resolvePort(host, r.uiPort)
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	cfg := &uiconfig.Config{
		Host:                host,
		Port:                port,
		TemporalGRPCAddress: frontendHostPort,
		EnableUI:            true,
		DefaultNamespace:    r.namespace,
		// The machine may have no internet access; the UI must not try it.
		DisableNewsFetch:   true,
		NotifyOnNewVersion: false,
		// Plain HTTP on loopback: the CSRF cookie must not require HTTPS.
		CORS:         uiconfig.CORS{CookieInsecure: true},
		HideLogs:     true,
		Distribution: "sluice",
	}
	if r.codec != "" {
		cfg.Codec.Endpoint = r.codec
	}
	if t := r.tls; t != nil {
		cfg.TLS.CaFile, cfg.TLS.CertFile, cfg.TLS.KeyFile = t.CAFile, t.ClientCertFile, t.ClientKeyFile
		cfg.TLS.ServerName = t.ServerName
		if cfg.TLS.ServerName == "" {
			cfg.TLS.ServerName = r.frontendHost
		}
		cfg.TLS.EnableHostVerification = true
	}
	srv := uiserver.NewServer(uioptions.WithConfigProvider(cfg))
	ui := &webUI{
		server: srv,
		url:    "http://" + net.JoinHostPort(host, strconv.Itoa(port)),
		done:   make(chan error, 1),
	}
	go func() { ui.done <- srv.Start() }()
	if err := ui.waitHealthy(ctx); err != nil {
		ui.stop()
		return nil, err
	}
	return ui, nil
}

// waitHealthy polls the UI's /healthz until it answers 200.
func (u *webUI) waitHealthy(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.url+"/healthz", nil)
		if err != nil {
			return fmt.Errorf("ui: building health request: %w", err)
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ui: waiting for %s to answer: %w", u.url, ctx.Err())
		case err := <-u.done:
			return fmt.Errorf("ui: server at %s ended before answering: %v", u.url, err)
		case <-tick.C:
		}
	}
}

// stop closes the UI server's listener and connections.
func (u *webUI) stop() {
	u.server.Stop()
}
