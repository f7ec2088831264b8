package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// StagingPrefix is where the S3 sink stages multipart uploads before
// copying them into place.
const StagingPrefix = reservedPrefix + "staging/"

// RecommendedLifecycle is the bucket lifecycle configuration that cleans
// up after writers killed mid-upload, for
// `aws s3api put-bucket-lifecycle-configuration --bucket B
// --lifecycle-configuration '…'`: staged objects expire after a day and
// incomplete multipart uploads anywhere in the bucket (staged pages, and
// the part-by-part copies of objects over 5 GiB to their key) are aborted
// after a day.
const RecommendedLifecycle = `{"Rules":[` +
	`{"ID":"sluice-staging-expiry","Status":"Enabled","Filter":{"Prefix":"` + StagingPrefix + `"},"Expiration":{"Days":1}},` +
	`{"ID":"sluice-abort-incomplete-uploads","Status":"Enabled","Filter":{"Prefix":""},"AbortIncompleteMultipartUpload":{"DaysAfterInitiation":1}}]}`

// LifecycleReport says whether a bucket's lifecycle rules clean up what a
// killed writer leaves: staged objects and incomplete multipart uploads.
// Sluice removes both itself whenever it can (a failed or cancelled Put
// aborts and deletes); only a process killed mid-write needs the rules.
type LifecycleReport struct {
	// Err is why the rules could not be read (the server does not
	// implement lifecycle, access denied); nil when they were.
	Err error
	// StagingExpiryDays is after how many days an enabled rule expires
	// objects under StagingPrefix; 0 when no rule does.
	StagingExpiryDays int32
	// StagingAbortDays is after how many days an enabled rule aborts
	// incomplete multipart uploads under StagingPrefix; 0 when none does.
	StagingAbortDays int32
	// LakeAbortDays is the same for the lake's own keys (the multipart
	// copy of an object over 5 GiB into place); 0 when none does.
	LakeAbortDays int32
}

// Problems lists, in words an operator can act on, what the rules leave
// behind; empty when they clean up everything.
func (r LifecycleReport) Problems() []string {
	fix := "apply: aws s3api put-bucket-lifecycle-configuration --bucket BUCKET --lifecycle-configuration '" + RecommendedLifecycle + "'"
	if r.Err != nil {
		return []string{fmt.Sprintf("could not read the bucket's lifecycle rules (%v): make sure a rule expires %s and aborts incomplete multipart uploads; %s",
			r.Err, StagingPrefix, fix)}
	}
	var p []string
	if r.StagingExpiryDays == 0 {
		p = append(p, "no enabled lifecycle rule expires objects under "+StagingPrefix+
			": a worker killed between staging an object and copying it into place leaves the staged copy forever; "+fix)
	}
	const minio = " (MinIO aborts stale multipart uploads by itself, after api stale_uploads_expiry, 24 h by default: there this warning can be ignored)"
	if r.StagingAbortDays == 0 {
		p = append(p, "no enabled lifecycle rule aborts incomplete multipart uploads under "+StagingPrefix+
			": the parts of a worker killed mid-upload are kept (and billed) forever; "+fix+minio)
	}
	if r.LakeAbortDays == 0 {
		p = append(p, "no enabled lifecycle rule aborts incomplete multipart uploads of lake keys"+
			": a worker killed while copying an object over 5 GiB into place leaves its parts forever; "+fix+minio)
	}
	return p
}

// CheckLifecycle reads the bucket's lifecycle rules and reports whether
// they clean up after killed writers. A bucket without rules reports
// every problem; a server that cannot say (NotImplemented, AccessDenied)
// reports Err.
func (s *S3) CheckLifecycle(ctx context.Context) LifecycleReport {
	out, err := s.client.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: &s.bucket})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchLifecycleConfiguration" {
			return evaluateLifecycle(nil)
		}
		if errors.As(err, &ae) {
			return LifecycleReport{Err: fmt.Errorf("%s: %s", ae.ErrorCode(), ae.ErrorMessage())}
		}
		return LifecycleReport{Err: err}
	}
	return evaluateLifecycle(out.Rules)
}

// evaluateLifecycle decides what the rules clean up. A rule counts for a
// key when it is enabled and its filter selects the key by prefix alone:
// tag and object-size conditions never match staged uploads for sure, so
// such rules are not counted.
func evaluateLifecycle(rules []types.LifecycleRule) LifecycleReport {
	var r LifecycleReport
	const lakeKey = "provider=" // every key Key builds starts so
	for _, rule := range rules {
		if rule.Status != types.ExpirationStatusEnabled {
			continue
		}
		prefix, ok := rulePrefix(rule)
		if !ok {
			continue
		}
		staging := strings.HasPrefix(StagingPrefix, prefix)
		lake := strings.HasPrefix(lakeKey, prefix)
		if e := rule.Expiration; e != nil && staging {
			if d := aws.ToInt32(e.Days); d > 0 {
				r.StagingExpiryDays = minDays(r.StagingExpiryDays, d)
			}
		}
		if a := rule.AbortIncompleteMultipartUpload; a != nil {
			if d := aws.ToInt32(a.DaysAfterInitiation); d > 0 {
				if staging {
					r.StagingAbortDays = minDays(r.StagingAbortDays, d)
				}
				if lake {
					r.LakeAbortDays = minDays(r.LakeAbortDays, d)
				}
			}
		}
	}
	return r
}

// rulePrefix returns the key prefix a rule selects, and false when its
// filter has conditions beyond a prefix.
func rulePrefix(rule types.LifecycleRule) (string, bool) {
	f := rule.Filter
	if f == nil {
		//lint:ignore SA1019 buckets configured before Filter existed still carry the top-level prefix
		return aws.ToString(rule.Prefix), true
	}
	if f.Tag != nil || f.ObjectSizeGreaterThan != nil || f.ObjectSizeLessThan != nil {
		return "", false
	}
	if a := f.And; a != nil {
		if len(a.Tags) > 0 || a.ObjectSizeGreaterThan != nil || a.ObjectSizeLessThan != nil {
			return "", false
		}
		return aws.ToString(a.Prefix), true
	}
	return aws.ToString(f.Prefix), true
}

func minDays(cur, d int32) int32 {
	if cur == 0 || d < cur {
		return d
	}
	return cur
}
