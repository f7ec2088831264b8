package sink

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/sluicehq/sluice/internal/versitygw"
)

func TestEvaluateLifecycle(t *testing.T) {
	on := types.ExpirationStatusEnabled
	prefix := func(p string) *types.LifecycleRuleFilter { return &types.LifecycleRuleFilter{Prefix: aws.String(p)} }
	expire := &types.LifecycleExpiration{Days: aws.Int32(1)}
	abort := func(d int32) *types.AbortIncompleteMultipartUpload {
		return &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(d)}
	}
	tests := []struct {
		name  string
		rules []types.LifecycleRule
		want  LifecycleReport
	}{
		{"none", nil, LifecycleReport{}},
		{"compose's MinIO rule: staging expiry only", []types.LifecycleRule{
			{Status: on, Filter: prefix("_sluice/staging/"), Expiration: expire}}, LifecycleReport{StagingExpiryDays: 1}},
		{"the recommended rules", []types.LifecycleRule{
			{Status: on, Filter: prefix(StagingPrefix), Expiration: expire},
			{Status: on, Filter: prefix(""), AbortIncompleteMultipartUpload: abort(1)}},
			LifecycleReport{StagingExpiryDays: 1, StagingAbortDays: 1, LakeAbortDays: 1}},
		{"one rule for all of _sluice/", []types.LifecycleRule{
			{Status: on, Filter: prefix("_sluice/"), Expiration: &types.LifecycleExpiration{Days: aws.Int32(3)}, AbortIncompleteMultipartUpload: abort(2)}},
			LifecycleReport{StagingExpiryDays: 3, StagingAbortDays: 2}},
		{"disabled rules do not count", []types.LifecycleRule{
			{Status: types.ExpirationStatusDisabled, Filter: prefix(""), Expiration: expire, AbortIncompleteMultipartUpload: abort(1)}},
			LifecycleReport{}},
		{"other prefixes do not count", []types.LifecycleRule{
			{Status: on, Filter: prefix("logs/"), Expiration: expire, AbortIncompleteMultipartUpload: abort(1)},
			{Status: on, Filter: prefix("_sluice/staging/x"), Expiration: expire}}, LifecycleReport{}},
		{"tag and size conditions do not count", []types.LifecycleRule{
			{Status: on, Filter: &types.LifecycleRuleFilter{Tag: &types.Tag{Key: aws.String("k"), Value: aws.String("v")}}, Expiration: expire},
			{Status: on, Filter: &types.LifecycleRuleFilter{And: &types.LifecycleRuleAndOperator{Prefix: aws.String(""), ObjectSizeGreaterThan: aws.Int64(1)}}, Expiration: expire}},
			LifecycleReport{}},
		{"an And filter by prefix counts", []types.LifecycleRule{
			{Status: on, Filter: &types.LifecycleRuleFilter{And: &types.LifecycleRuleAndOperator{Prefix: aws.String("_sluice/")}}, Expiration: expire}},
			LifecycleReport{StagingExpiryDays: 1}},
		{"the deprecated top-level prefix counts", []types.LifecycleRule{
			{Status: on, Prefix: aws.String(""), AbortIncompleteMultipartUpload: abort(7)}},
			LifecycleReport{StagingAbortDays: 7, LakeAbortDays: 7}},
		{"the shortest wins; zero days is no rule", []types.LifecycleRule{
			{Status: on, Filter: prefix(""), AbortIncompleteMultipartUpload: abort(5)},
			{Status: on, Filter: prefix(""), AbortIncompleteMultipartUpload: abort(2)},
			{Status: on, Filter: prefix(""), Expiration: &types.LifecycleExpiration{Days: aws.Int32(0)}}},
			LifecycleReport{StagingAbortDays: 2, LakeAbortDays: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := evaluateLifecycle(tt.rules)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			wantProblems := 0
			for _, d := range []int32{tt.want.StagingExpiryDays, tt.want.StagingAbortDays, tt.want.LakeAbortDays} {
				if d == 0 {
					wantProblems++
				}
			}
			if p := got.Problems(); len(p) != wantProblems {
				t.Errorf("%d problems, want %d: %q", len(p), wantProblems, p)
			}
		})
	}
	if p := (LifecycleReport{StagingExpiryDays: 1, StagingAbortDays: 1, LakeAbortDays: 1}).Problems(); len(p) != 0 {
		t.Errorf("a complete set of rules reports %q", p)
	}
	if p := (LifecycleReport{}).Problems(); !strings.Contains(p[0], RecommendedLifecycle) {
		t.Errorf("the problem does not say what to apply: %q", p[0])
	}
}

// lifecycleServer answers GetBucketLifecycleConfiguration as AWS does:
// with the XML of the rules, or 404 NoSuchLifecycleConfiguration.
func lifecycleServer(t *testing.T, status int, body string) *S3 {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.URL.Query()["lifecycle"]; !ok || r.Method != http.MethodGet {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	s, err := NewS3(context.Background(), S3Config{Bucket: "lake", Endpoint: srv.URL, Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCheckLifecycleReadsTheBucketsRules(t *testing.T) {
	ctx := context.Background()
	s := lifecycleServer(t, http.StatusOK, `<?xml version="1.0" encoding="UTF-8"?>
<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Rule><ID>staging</ID><Filter><Prefix>_sluice/staging/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>
  <Rule><ID>uploads</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>
</LifecycleConfiguration>`)
	if r := s.CheckLifecycle(ctx); r != (LifecycleReport{StagingExpiryDays: 1, StagingAbortDays: 2, LakeAbortDays: 2}) {
		t.Errorf("report %+v", r)
	}
	s = lifecycleServer(t, http.StatusNotFound, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchLifecycleConfiguration</Code><Message>The lifecycle configuration does not exist</Message><BucketName>lake</BucketName></Error>`)
	if r := s.CheckLifecycle(ctx); r.Err != nil || len(r.Problems()) != 3 {
		t.Errorf("a bucket without rules: %+v, problems %q", r, r.Problems())
	}
	s = lifecycleServer(t, http.StatusForbidden, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
	if r := s.CheckLifecycle(ctx); r.Err == nil || !strings.Contains(r.Problems()[0], "AccessDenied") {
		t.Errorf("access denied: %+v", r)
	}
}

// TestCheckLifecycleOnVersitygw: versitygw implements no lifecycle API, so
// a writer opening the lake there warns that it cannot tell.
func TestCheckLifecycleOnVersitygw(t *testing.T) {
	srv := versitygw.Start(t)
	var logs bytes.Buffer
	c := Config{S3Bucket: srv.Bucket, S3Endpoint: srv.Endpoint, S3Region: srv.Region, Credentials: srv.Credentials(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	lake, err := c.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	r := lake.(*S3).CheckLifecycle(context.Background())
	if r.Err == nil || !strings.Contains(r.Err.Error(), "NotImplemented") {
		t.Errorf("versitygw report %+v, want NotImplemented", r)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "could not read the bucket's lifecycle rules") {
		t.Errorf("opening the lake logged no warning:\n%s", logs.String())
	}
	// Readers do not check.
	logs.Reset()
	if _, err := c.OpenExisting(context.Background()); err != nil || logs.Len() != 0 {
		t.Errorf("OpenExisting: %v, logged %q", err, logs.String())
	}
}
