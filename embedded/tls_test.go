package embedded

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/sluicehq/sluice/internal/testcerts"
)

// TestTLSFrontend serves the frontend with mutual TLS from certificates
// the test generates: a client in clear, one that does not trust the CA,
// one without a client certificate and one whose certificate another CA
// signed are all refused; one with the CA and its certificate works. The
// Web UI reaches the frontend over TLS too and advertises the codec
// endpoint it was given.
func TestTLSFrontend(t *testing.T) {
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{
		DataDir: t.TempDir(), FrontendAddr: "127.0.0.1:0", UIAddr: "127.0.0.1:0", Logger: testLogger(t),
		CodecEndpoint: "http://127.0.0.1:1/codec/",
		TLS: &TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA, ClientCAFile: certs.CA,
			ClientCertFile: certs.ClientCert, ClientKeyFile: certs.ClientKey},
	})
	if err != nil {
		t.Fatalf("Start with TLS: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })

	pem, _ := os.ReadFile(certs.CA)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	pair := func(cert, key string) []tls.Certificate {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{c}
	}
	try := func(cfg *tls.Config) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := client.DialContext(ctx, client.Options{HostPort: s.FrontendHostPort(), Namespace: s.Namespace(),
			ConnectionOptions: client.ConnectionOptions{TLS: cfg}, Logger: sdklog.NewStructuredLogger(testLogger(t))})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.Namespace()})
		return err
	}
	for name, cfg := range map[string]*tls.Config{
		"plaintext":              nil,
		"without the CA":         {Certificates: pair(certs.ClientCert, certs.ClientKey)},
		"without a client cert":  {RootCAs: pool},
		"with a stranger's cert": {RootCAs: pool, Certificates: pair(certs.StrangerCert, certs.StrangerKey)},
	} {
		if err := try(cfg); err == nil {
			t.Errorf("a client %s was let in", name)
		}
	}
	if err := try(&tls.Config{RootCAs: pool, Certificates: pair(certs.ClientCert, certs.ClientKey)}); err != nil {
		t.Fatalf("a client with the CA and a certificate was refused: %v", err)
	}

	// The UI lists namespaces through the frontend: over mutual TLS.
	resp, err := http.Get(s.UIURL() + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	var ns struct {
		Namespaces []struct {
			NamespaceInfo struct{ Name string } `json:"namespaceInfo"`
		} `json:"namespaces"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ns)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(ns.Namespaces) == 0 {
		t.Errorf("the UI could not list namespaces over TLS: %d %v %+v", resp.StatusCode, err, ns)
	}
	resp, err = http.Get(s.UIURL() + "/api/v1/settings")
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Codec struct{ Endpoint string } `json:"Codec"`
	}
	err = json.NewDecoder(resp.Body).Decode(&settings)
	resp.Body.Close()
	if err != nil || settings.Codec.Endpoint != "http://127.0.0.1:1/codec" {
		t.Errorf("UI settings codec endpoint %q (%v)", settings.Codec.Endpoint, err)
	}
}

func TestTLSOptionsAreChecked(t *testing.T) {
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tls  TLS
		want string
	}{
		{TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey}, "CAFile are required"},
		{TLS{CertFile: certs.ServerCert, KeyFile: certs.ClientKey, CAFile: certs.CA}, "loading the frontend certificate"},
		{TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.ServerKey}, "holds no PEM certificate"},
		{TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA, ClientCAFile: certs.CA}, "needs ClientCertFile"},
		{TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA, ClientCertFile: certs.ClientCert}, "go together"},
		{TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"},
	} {
		tl := tc.tls
		_, err := Options{DataDir: t.TempDir(), TLS: &tl}.resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.tls, err, tc.want)
		}
	}
	if _, err := (Options{DataDir: t.TempDir(), CodecEndpoint: "ftp://x"}).resolve(); err == nil {
		t.Error("a non-http codec endpoint was accepted")
	}
}
