// Package lineage reports Sluice's ingests as OpenLineage run events
// (https://openlineage.io/spec/2-0-2/OpenLineage.json): a START when an
// ingest (a daily run, a backfill's chunk, a refetch) begins and a
// COMPLETE or FAIL when it ends, each naming the job (the dataset's
// ingest), its input (the provider endpoint: scheme, host and path, never
// a query, a credential or a full request URL) and its output (the
// dataset's prefix in the lake), with facets for the window asked, the
// records, bytes, pages and objects written. An Emitter sends them to an HTTP
// endpoint (Marquez's /api/v1/lineage) or appends them to a JSON-lines
// file, off the ingest's path: an emission that fails is logged and
// counted, never the ingest's failure. See docs/lineage.md.
package lineage

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/internal/redact"
	"github.com/sluicehq/sluice/internal/version"
)

// SchemaURL is the OpenLineage spec version the events follow.
const SchemaURL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"

// The standard facets' schemas, at the versions vendored under testdata.
const (
	nominalTimeSchema  = "https://openlineage.io/spec/facets/1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet"
	errorMessageSchema = "https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet"
	jobTypeSchema      = "https://openlineage.io/spec/facets/2-0-4/JobTypeJobFacet.json#/$defs/JobTypeJobFacet"
	outputStatsSchema  = "https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"
)

// The custom facets' schemas, kept in this package's schema directory.
const (
	schemaBase        = "https://github.com/sluicehq/sluice/blob/main/lineage/schema/"
	ingestFacetSchema = schemaBase + "SluiceIngestRunFacet.json#/$defs/SluiceIngestRunFacet"
	lakeFacetSchema   = schemaBase + "SluiceLakeOutputDatasetFacet.json#/$defs/SluiceLakeOutputDatasetFacet"
)

// Producer is the URI every event and facet names as its producer: Sluice
// at its release.
func Producer() string {
	return "https://github.com/sluicehq/sluice/tree/" + url.PathEscape(version.Version)
}

// EventType is a run's transition.
type EventType string

// The transitions Sluice reports: one START and one COMPLETE, FAIL or
// ABORT per run (an attempt of an ingest activity).
const (
	Start    EventType = "START"
	Complete EventType = "COMPLETE"
	Fail     EventType = "FAIL"
	// Abort ends a run that was cancelled (the workflow cancelled, the
	// activity timed out, the worker stopping) rather than one that failed.
	Abort EventType = "ABORT"
)

// Event is an OpenLineage RunEvent.
type Event struct {
	EventType EventType       `json:"eventType"`
	EventTime string          `json:"eventTime"` // RFC 3339, UTC
	Run       Run             `json:"run"`
	Job       Job             `json:"job"`
	Inputs    []InputDataset  `json:"inputs"`
	Outputs   []OutputDataset `json:"outputs"`
	Producer  string          `json:"producer"`
	SchemaURL string          `json:"schemaURL"`
}

// Run is the run an event reports on, and its facets.
type Run struct {
	RunID  string    `json:"runId"`
	Facets RunFacets `json:"facets"`
}

// RunFacets are the run's facets: the nominal time (the window asked),
// Sluice's ingest facet, and the error of a FAIL.
type RunFacets struct {
	NominalTime  *NominalTimeFacet  `json:"nominalTime,omitempty"`
	Ingest       *IngestFacet       `json:"sluice_ingest,omitempty"`
	ErrorMessage *ErrorMessageFacet `json:"errorMessage,omitempty"`
}

// Job names the job: the dataset's ingest.
type Job struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Facets    JobFacets `json:"facets"`
}

// JobFacets are the job's facets.
type JobFacets struct {
	JobType *JobTypeFacet `json:"jobType,omitempty"`
}

// InputDataset is a dataset the run reads: the provider endpoint.
type InputDataset struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// OutputDataset is a dataset the run writes: the dataset's lake prefix.
type OutputDataset struct {
	Namespace    string        `json:"namespace"`
	Name         string        `json:"name"`
	OutputFacets *OutputFacets `json:"outputFacets,omitempty"`
}

// OutputFacets are what a COMPLETE says about the output.
type OutputFacets struct {
	Statistics *OutputStatisticsFacet `json:"outputStatistics,omitempty"`
	Lake       *LakeFacet             `json:"sluice_lake,omitempty"`
}

// BaseFacet holds the fields every facet carries.
type BaseFacet struct {
	Producer  string `json:"_producer"`
	SchemaURL string `json:"_schemaURL"`
}

func base(schema string) BaseFacet { return BaseFacet{Producer: Producer(), SchemaURL: schema} }

// NominalTimeFacet is the standard nominalTime run facet: the window the
// provider was asked for, its first day's start to the day after its
// last.
type NominalTimeFacet struct {
	BaseFacet
	NominalStartTime string `json:"nominalStartTime"`
	NominalEndTime   string `json:"nominalEndTime,omitempty"`
}

// ErrorMessageFacet is the standard errorMessage run facet of a FAIL.
type ErrorMessageFacet struct {
	BaseFacet
	Message             string `json:"message"`
	ProgrammingLanguage string `json:"programmingLanguage"`
}

// JobTypeFacet is the standard jobType job facet.
type JobTypeFacet struct {
	BaseFacet
	ProcessingType string `json:"processingType"`
	Integration    string `json:"integration"`
	JobType        string `json:"jobType,omitempty"`
}

// OutputStatisticsFacet is the standard outputStatistics output facet:
// the records written, the compressed bytes written and the objects
// written. RowCount is absent when the records could not be counted for
// sure, never a guess.
type OutputStatisticsFacet struct {
	BaseFacet
	RowCount  *int64 `json:"rowCount,omitempty"`
	Size      int64  `json:"size"`
	FileCount int    `json:"fileCount"`
}

// IngestFacet (sluice_ingest, schema/SluiceIngestRunFacet.json) says what
// the run was asked: the dataset, its provider, the kind of ingest, the
// logical dates its object is filed under, the window the provider was
// asked for, and the attempt.
type IngestFacet struct {
	BaseFacet
	Dataset  string `json:"dataset"`
	Provider string `json:"provider"`
	// Kind is daily (a daily run with its look-back), backfill (a
	// backfill's chunk) or range (any other ingest of a range).
	Kind        string `json:"kind"`
	LogicalFrom string `json:"logicalFrom"`           // YYYY-MM-DD
	LogicalTo   string `json:"logicalTo"`             // YYYY-MM-DD
	WindowFrom  string `json:"windowFrom,omitempty"`  // YYYY-MM-DD; empty for a request naming no dates
	WindowTo    string `json:"windowTo,omitempty"`    // YYYY-MM-DD
	Attempt     int32  `json:"attempt"`               // 1 on the first try
	WorkflowID  string `json:"workflowId,omitempty"`  // the Temporal workflow that ran it
	ActivityID  string `json:"activityId,omitempty"`  // and its activity
	WorkflowRun string `json:"workflowRun,omitempty"` // the workflow's run id
}

// LakeFacet (sluice_lake, schema/SluiceLakeOutputDatasetFacet.json) is
// what a COMPLETE wrote to the lake.
type LakeFacet struct {
	BaseFacet
	Objects         int    `json:"objects"` // objects written or confirmed (0 with noData)
	Object          string `json:"object,omitempty"`
	RawBytes        int64  `json:"rawBytes"`
	CompressedBytes int64  `json:"compressedBytes"`
	Pages           int    `json:"pages"`
	SHA256          string `json:"sha256,omitempty"`
	Skipped         bool   `json:"skipped"` // the stored object already held these bytes
	NoData          bool   `json:"noData"`  // the provider answered with no rows
}

// Ingest describes one run: one attempt of an ingest activity.
type Ingest struct {
	// RunID is the run's id, shared by its START and its COMPLETE or
	// FAIL (RunID).
	RunID uuid.UUID
	// Namespace is the job namespace ("sluice" when empty).
	Namespace string
	// Facet is what the run was asked (its base fields are filled in).
	Facet IngestFacet
	// Source is the provider endpoint (Endpoint).
	Source InputDataset
	// Lake is the dataset's prefix in the lake (LakeOutput).
	Lake OutputDataset
}

// Result is what a completed run wrote.
type Result struct {
	Object          string // the object's key; empty with NoData
	RawBytes        int64
	CompressedBytes int64
	Pages           int
	SHA256          string
	Skipped         bool
	NoData          bool
	// Rows is the records the provider's answers held, counted as they
	// streamed into the lake; nil when they could not be counted (the
	// event then says no rowCount), 0 with NoData.
	Rows *int64
}

// DefaultNamespace is the job namespace when none is configured.
const DefaultNamespace = "sluice"

// JobName is the job of a dataset's ingest: "<dataset>.ingest".
func JobName(dataset string) string { return dataset + ".ingest" }

// StartEvent is the run's START.
func (in Ingest) StartEvent(at time.Time) Event { return in.event(Start, at) }

// CompleteEvent is the run's COMPLETE, with what it wrote.
func (in Ingest) CompleteEvent(at time.Time, r Result) Event {
	ev := in.event(Complete, at)
	objects := 1
	if r.NoData {
		objects = 0
	}
	ev.Outputs[0].OutputFacets = &OutputFacets{
		Statistics: &OutputStatisticsFacet{BaseFacet: base(outputStatsSchema), RowCount: r.Rows, Size: r.CompressedBytes, FileCount: objects},
		Lake: &LakeFacet{BaseFacet: base(lakeFacetSchema), Objects: objects, Object: redact.Text(r.Object), RawBytes: r.RawBytes,
			CompressedBytes: r.CompressedBytes, Pages: r.Pages, SHA256: r.SHA256, Skipped: r.Skipped, NoData: r.NoData},
	}
	return ev
}

// FailEvent is the run's FAIL with the error's message, redacted again
// here of anything shaped like a credential.
func (in Ingest) FailEvent(at time.Time, message string) Event {
	return in.end(Fail, at, message)
}

// AbortEvent is the run's ABORT: it was cancelled, with the reason.
func (in Ingest) AbortEvent(at time.Time, message string) Event {
	return in.end(Abort, at, message)
}

func (in Ingest) end(t EventType, at time.Time, message string) Event {
	ev := in.event(t, at)
	ev.Run.Facets.ErrorMessage = &ErrorMessageFacet{BaseFacet: base(errorMessageSchema), Message: redact.Text(message), ProgrammingLanguage: "go"}
	return ev
}

func (in Ingest) event(t EventType, at time.Time) Event {
	ns := in.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	f := in.Facet
	f.BaseFacet = base(ingestFacetSchema)
	ev := Event{
		EventType: t,
		EventTime: at.UTC().Format(time.RFC3339Nano),
		Run:       Run{RunID: in.RunID.String(), Facets: RunFacets{Ingest: &f}},
		Job: Job{Namespace: ns, Name: JobName(f.Dataset), Facets: JobFacets{
			JobType: &JobTypeFacet{BaseFacet: base(jobTypeSchema), ProcessingType: "BATCH", Integration: "SLUICE", JobType: "INGEST"}}},
		Inputs:    []InputDataset{in.Source},
		Outputs:   []OutputDataset{{Namespace: in.Lake.Namespace, Name: in.Lake.Name}},
		Producer:  Producer(),
		SchemaURL: SchemaURL,
	}
	if from, err := time.Parse(time.DateOnly, f.WindowFrom); err == nil {
		nt := &NominalTimeFacet{BaseFacet: base(nominalTimeSchema), NominalStartTime: from.Format(time.RFC3339)}
		if to, err := time.Parse(time.DateOnly, f.WindowTo); err == nil {
			nt.NominalEndTime = to.AddDate(0, 0, 1).Format(time.RFC3339)
		}
		ev.Run.Facets.NominalTime = nt
	}
	return ev
}

// Endpoint is the input dataset of a provider endpoint: namespace the
// base URL's scheme, host and port, name its path prefix joined with the
// endpoint's path. User info, query and fragment are dropped and what is
// left is redacted again, so neither a credential nor a request's
// parameters reach an event. A base URL that does not parse is named by
// its redacted text.
func Endpoint(baseURL, path string) InputDataset {
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return InputDataset{Namespace: redact.Text(baseURL), Name: redact.Text(cleanPath("", path))}
	}
	return InputDataset{Namespace: u.Scheme + "://" + u.Host, Name: redact.Text(cleanPath(u.Path, path))}
}

// cleanPath joins a base path and an endpoint path, without a query.
func cleanPath(prefix, path string) string {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	p := strings.TrimSuffix(prefix, "/") + "/" + strings.TrimPrefix(path, "/")
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// Lake names where the lake is, for the output datasets: an S3 bucket
// (namespace s3://<bucket>) or a local directory (namespace file, names
// under the directory's absolute path), as OpenLineage's naming
// conventions have them.
type Lake struct {
	Namespace string
	Root      string // prefixed to every name; "" in a bucket
}

// S3Lake is the lake in an S3 bucket.
func S3Lake(bucket string) Lake { return Lake{Namespace: "s3://" + bucket} }

// LocalLake is the lake in a local directory, by its absolute path.
func LocalLake(dir string) Lake { return Lake{Namespace: "file", Root: dir} }

// Output is the output dataset of a lake prefix.
func (l Lake) Output(prefix string) OutputDataset {
	name := strings.TrimSuffix(prefix, "/")
	if l.Root != "" {
		name = strings.TrimSuffix(l.Root, "/") + "/" + name
	}
	ns := l.Namespace
	if ns == "" {
		ns = "file"
	}
	return OutputDataset{Namespace: ns, Name: name}
}

// runNamespace is the UUIDv5 namespace of Sluice's run ids.
var runNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/sluicehq/sluice/lineage/run"))

// RunID is the run id of one attempt of an activity: a UUIDv5 (SHA-1,
// RFC 9562) of the workflow id, the workflow's run id, the activity id and
// the attempt. The START and the COMPLETE or FAIL of an attempt share it,
// whichever process sends them, and a retried attempt is a run of its own;
// the same ids give the same run id however often they are asked.
func RunID(workflowID, workflowRunID, activityID string, attempt int32) uuid.UUID {
	name := strings.Join([]string{workflowID, workflowRunID, activityID, strconv.Itoa(int(attempt))}, "\x00")
	return uuid.NewSHA1(runNamespace, []byte(name))
}
