package embedded

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"go.temporal.io/server/common/config"
)

// TLS configures TLS on the embedded frontend (the gRPC and HTTP API
// ports). The internal services talk to each other over loopback in
// clear; everything a client reaches is TLS.
type TLS struct {
	// CertFile and KeyFile are the frontend's certificate and private key
	// (PEM). Required.
	CertFile, KeyFile string
	// ClientCAFile, when set, makes the frontend require a client
	// certificate signed by a CA in this PEM bundle (mutual TLS).
	ClientCAFile string
	// CAFile is the PEM bundle the server's own clients — its system
	// worker, the Web UI, Start's readiness check — verify the frontend's
	// certificate with. Required.
	CAFile string
	// ClientCertFile and ClientKeyFile are the certificate the server's
	// own clients present to the frontend; required with ClientCAFile.
	ClientCertFile, ClientKeyFile string
	// ServerName is the name the server's own clients verify the
	// frontend's certificate against; default the frontend host.
	ServerName string
}

// validate checks that every file the configuration needs is named and
// readable, so that a mistake fails Start with the file named rather than
// inside the server.
func (t *TLS) validate() error {
	if t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" {
		return errors.New("TLS: CertFile, KeyFile and CAFile are required")
	}
	if (t.ClientCertFile == "") != (t.ClientKeyFile == "") {
		return errors.New("TLS: ClientCertFile and ClientKeyFile go together")
	}
	if t.ClientCAFile != "" && t.ClientCertFile == "" {
		return errors.New("TLS: ClientCAFile (mutual TLS) needs ClientCertFile and ClientKeyFile for the server's own clients")
	}
	if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
		return fmt.Errorf("TLS: loading the frontend certificate %s and key %s: %w", t.CertFile, t.KeyFile, err)
	}
	for _, f := range []struct{ name, path string }{{"CAFile", t.CAFile}, {"ClientCAFile", t.ClientCAFile}} {
		if f.path == "" {
			continue
		}
		if _, err := certPool(f.path); err != nil {
			return fmt.Errorf("TLS: %s: %w", f.name, err)
		}
	}
	if t.ClientCertFile != "" {
		if _, err := tls.LoadX509KeyPair(t.ClientCertFile, t.ClientKeyFile); err != nil {
			return fmt.Errorf("TLS: loading the client certificate %s and key %s: %w", t.ClientCertFile, t.ClientKeyFile, err)
		}
	}
	return nil
}

func certPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// apply sets the server's TLS configuration.
func (t *TLS) apply(c *config.Config, host string) {
	name := t.ServerName
	if name == "" {
		name = host
	}
	client := config.ClientTLS{ServerName: name, RootCAFiles: []string{t.CAFile}}
	c.Global.TLS.Frontend = config.GroupTLS{
		Server: config.ServerTLS{CertFile: t.CertFile, KeyFile: t.KeyFile},
		Client: client,
	}
	if t.ClientCAFile != "" {
		c.Global.TLS.Frontend.Server.ClientCAFiles = []string{t.ClientCAFile}
		c.Global.TLS.Frontend.Server.RequireClientAuth = true
	}
	c.Global.TLS.SystemWorker = config.WorkerTLS{CertFile: t.ClientCertFile, KeyFile: t.ClientKeyFile, Client: client}
}

// clientConfig is the tls.Config of the server's own clients.
func (t *TLS) clientConfig(host string) (*tls.Config, error) {
	pool, err := certPool(t.CAFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if t.ClientCertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.ClientCertFile, t.ClientKeyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
