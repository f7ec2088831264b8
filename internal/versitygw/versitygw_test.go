package versitygw

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestServerKeepsObjectsAndMetadataAcrossRestart(t *testing.T) {
	for _, sidecar := range []bool{false, true} {
		name := "xattr"
		if sidecar {
			name = "sidecar"
		}
		t.Run(name, func(t *testing.T) { testRestart(t, start(t, "127.0.0.1", sidecar)) })
	}
}

func testRestart(t *testing.T, srv *Server) {
	ctx := context.Background()
	c := srv.Client()
	_, err := c.PutObject(ctx, &s3.PutObjectInput{
		Bucket:   aws.String(srv.Bucket),
		Key:      aws.String("a/b.txt"),
		Body:     strings.NewReader("hello"),
		Metadata: map[string]string{"sluice-test": "value-1"},
	})
	if err != nil {
		t.Fatalf("put: %v", err)
	}

	srv.Restart()
	c = srv.Client()
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("a/b.txt")})
	if err != nil {
		t.Fatalf("head after restart: %v", err)
	}
	if got := head.Metadata["sluice-test"]; got != "value-1" {
		t.Errorf("metadata after restart = %q, want value-1 (all: %v)", got, head.Metadata)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("a/b.txt")})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	if string(b) != "hello" {
		t.Errorf("body = %q, want hello", b)
	}
}

func TestKilledServerRefusesRequests(t *testing.T) {
	srv := Start(t)
	srv.Kill()
	_, err := srv.Client().ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err == nil {
		t.Fatal("ListBuckets on a killed server succeeded")
	}
}

func TestBinaryHonoursEnvironment(t *testing.T) {
	t.Setenv(EnvBinary, "/nonexistent/versitygw")
	_, err := Binary()
	if err == nil || !strings.Contains(err.Error(), "versitygw not found") {
		t.Fatalf("Binary() error = %v, want a not-found error", err)
	}
}
