package connectortest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

// Recorded is a provider's corpus of answers recorded from the real
// service (public clients' fixtures, provider documentation, users' bug
// reports) for RunRecorded.
type Recorded struct {
	// Provider is the registry provider id, e.g. "datago". Its connector
	// must be linked into the test binary.
	Provider string
	// Dir holds cases.yaml and the body files it names, usually
	// "testdata/recorded".
	Dir string
	// Fallback answers the requests a case does not answer, by the URL
	// path's suffix (KIS: a token at "/oauth2/tokenP").
	Fallback map[string]Answer
}

// Answer is one HTTP answer to serve.
type Answer struct {
	Status int               `yaml:"status"`
	Header map[string]string `yaml:"headers"`
	Body   string            `yaml:"body"`
}

// RecordedCase is one recorded answer and what the connector must make of
// it (the format of cases.yaml, one list entry a case).
type RecordedCase struct {
	// Name names the case (unique in the file).
	Name string `yaml:"name"`
	// Source is where the answer was recorded: a public client's fixture,
	// a provider document, an issue report (URL).
	Source string `yaml:"source"`
	// Meaning says what the provider meant.
	Meaning string `yaml:"meaning"`
	// Reasoning explains a choice where the field disagrees on the meaning.
	Reasoning string `yaml:"reasoning"`
	// Probe runs the case through Connector.Probe instead of Fetch.
	Probe bool `yaml:"probe"`
	// Dataset is the sample dataset asked for; empty: the provider's first.
	Dataset string `yaml:"dataset"`
	// Path, when set, limits the recorded answer to requests whose URL
	// path ends with it; the others get the Fallback answers.
	Path string `yaml:"path"`
	// Status, Headers and Body (or BodyFile, beside cases.yaml) are the
	// answer as recorded.
	Status   int               `yaml:"status"`
	Headers  map[string]string `yaml:"headers"`
	Body     string            `yaml:"body"`
	BodyFile string            `yaml:"body_file"`
	// Expect is what the connector must make of it.
	Expect RecordedExpect `yaml:"expect"`
}

// RecordedExpect is a case's expected outcome.
type RecordedExpect struct {
	// Class is a connector.Class name, or "ok" for a success.
	Class string `yaml:"class"`
	// Code is the provider's own code the error carries.
	Code string `yaml:"code"`
	// Message is a substring of the error's text.
	Message string `yaml:"message"`
	// RetryAfter is Error.RetryAfter exactly, e.g. "1s".
	RetryAfter string `yaml:"retry_after"`
	// Reset "next_midnight": Error.ResetAt is the first midnight after the
	// test clock in the provider's timezone.
	Reset string `yaml:"reset"`
	// More, for a success: whether the page says further pages follow
	// (Response.Next).
	More *bool `yaml:"more"`
	// Rows, for a success: how many records the answer holds where the
	// dataset's wire facts put them, counted by hand from the body, which
	// a wire.Counter streaming it must count; "none" when the answer has
	// no place for rows there, so that no count may be given. Empty: the
	// rows wire.Extract reads, or no count where it finds no place.
	Rows string `yaml:"rows"`
	// Confirm: the answer is ambiguous, confirmed only by this many in a
	// row (Error.Confirm): the first answers are unconfirmed Transient
	// errors whose Unconfirmed is Class, the Confirm-th has Class.
	Confirm int `yaml:"confirm"`
}

// LoadRecorded reads dir/cases.yaml, checking that every case names its
// source and meaning and an expected class.
func LoadRecorded(dir string) ([]RecordedCase, error) {
	path := filepath.Join(dir, "cases.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading recorded answers: %w", err)
	}
	var cases []RecordedCase
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&cases); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	seen := map[string]bool{}
	for i := range cases {
		c := &cases[i]
		where := fmt.Sprintf("%s: case %d (%q)", path, i+1, c.Name)
		switch {
		case c.Name == "":
			return nil, fmt.Errorf("%s: field name is empty", where)
		case seen[c.Name]:
			return nil, fmt.Errorf("%s: field name %q is used twice", where, c.Name)
		case c.Source == "":
			return nil, fmt.Errorf("%s: field source is empty: say where the answer was recorded", where)
		case c.Meaning == "":
			return nil, fmt.Errorf("%s: field meaning is empty: say what the provider meant", where)
		case c.Status == 0:
			return nil, fmt.Errorf("%s: field status is missing", where)
		case c.Expect.Class == "":
			return nil, fmt.Errorf("%s: field expect.class is empty", where)
		}
		seen[c.Name] = true
		if r := c.Expect.Rows; r != "" {
			if n, err := strconv.Atoi(r); (err != nil || n < 0) && r != "none" {
				return nil, fmt.Errorf("%s: field expect.rows %q: want a count of rows or none", where, r)
			}
			if c.Expect.Class != "ok" || c.Probe {
				return nil, fmt.Errorf("%s: field expect.rows is set on a case that hands on no answer (class %s, probe %v)", where, c.Expect.Class, c.Probe)
			}
		}
		if c.Expect.Class != "ok" {
			if _, err := connector.ParseClass(c.Expect.Class); err != nil {
				return nil, fmt.Errorf("%s: field expect.class: %w", where, err)
			}
		}
		if c.BodyFile != "" {
			if c.Body != "" {
				return nil, fmt.Errorf("%s: fields body and body_file are both set", where)
			}
			b, err := os.ReadFile(filepath.Join(dir, c.BodyFile))
			if err != nil {
				return nil, fmt.Errorf("%s: field body_file: %w", where, err)
			}
			c.Body = string(b)
		}
	}
	return cases, nil
}

// RunRecorded runs every recorded answer of r through the provider's real
// connector: a loopback server answers with the case's status, headers and
// body, the connector fetches (or probes) the case's dataset on the frozen
// clock SimNow, and the outcome is checked: class, provider code, message,
// retry-after or reset, and for a success whether more pages follow. An
// ambiguous case (expect.confirm) is asked that many times in a row.
func RunRecorded(t *testing.T, r Recorded) {
	t.Helper()
	cases, err := LoadRecorded(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	reg := Registry(t)
	p := reg.Provider(r.Provider)
	if p == nil {
		t.Fatalf("recorded answers: no provider %q in the sample registry", r.Provider)
	}
	first := ""
	if all := reg.DatasetsOf(r.Provider); len(all) > 0 {
		first = all[0].ID
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				a, ok := answerFor(c, r.Fallback, req.URL.Path)
				if !ok {
					http.Error(w, "recorded answers: no answer for "+req.URL.Path, http.StatusNotImplemented)
					return
				}
				for k, v := range a.Header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(a.Status)
				io.WriteString(w, a.Body)
			}))
			t.Cleanup(srv.Close)
			cn, err := connector.New(p, connector.Options{BaseURL: srv.URL, Credentials: Credentials(),
				TokenStore: tokenstore.NewMemory(), Now: FrozenClock, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			dsID := c.Dataset
			if dsID == "" {
				dsID = first
			}
			ds := reg.Dataset(dsID)
			if ds == nil {
				t.Fatalf("field dataset: no dataset %q in the sample registry", dsID)
			}
			n := max(c.Expect.Confirm, 1)
			for i := 1; i <= n; i++ {
				more, count, err := runOnce(cn, ds, c.Probe)
				checkRecorded(t, c, p.Location, i, more, err)
				if err == nil && !c.Probe {
					checkCount(t, c, ds, count)
				}
			}
		})
	}
}

// answerFor picks the answer to a request's path: the case's when its
// Path matches (or it has none and no fallback matches), else a fallback.
func answerFor(c RecordedCase, fallback map[string]Answer, path string) (Answer, bool) {
	own := Answer{Status: c.Status, Header: c.Headers, Body: c.Body}
	if c.Path != "" && strings.HasSuffix(path, c.Path) {
		return own, true
	}
	for suffix, a := range fallback {
		if strings.HasSuffix(path, suffix) {
			return a, true
		}
	}
	return own, c.Path == ""
}

// runOnce fetches (or probes) ds once and reads the page to its end,
// counting its rows as they stream (wire.Counter, as an ingest does); more
// reports whether the page named a next one.
func runOnce(cn connector.Connector, ds *registry.Dataset, probe bool) (bool, *wire.Counter, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if probe {
		_, err := cn.Probe(ctx, ds)
		return false, nil, err
	}
	today := connector.CivilDate(SimNow)
	resp, err := cn.Fetch(ctx, connector.Request{Dataset: ds, From: today.AddDate(0, 0, -7), To: today.AddDate(0, 0, -1)})
	if err != nil {
		return false, nil, err
	}
	defer resp.Body.Close()
	count := wire.NewCounter(ds.Wire.Rows)
	if _, err := io.Copy(count, resp.Body); err != nil {
		return false, nil, err
	}
	_, more, err := connector.NextPage(resp)
	return more, count, err
}

// checkCount checks the rows counted of a recorded answer the connector
// handed on: the case's expect.rows, else the rows wire.Extract reads in
// the recorded body under the dataset's facts, or, where Extract finds no
// rows' place in it, no count at all (never a guess).
func checkCount(t *testing.T, c RecordedCase, ds *registry.Dataset, count *wire.Counter) {
	t.Helper()
	n, sure := count.Count()
	what := fmt.Sprintf("%s (recorded at %s)", c.Name, c.Source)
	rows, err := wire.Extract([]byte(c.Body), ds.Wire.Rows)
	switch want := c.Expect.Rows; {
	case want == "none":
		if sure {
			t.Errorf("%s: counted %d rows streaming an answer with no rows' place: want no count", what, n)
		}
	case want != "":
		w, _ := strconv.Atoi(want)
		if !sure || n != w {
			t.Errorf("%s: counted %d rows (sure %v) streaming the answer; it holds %d", what, n, sure, w)
		}
		if err == nil && len(rows) != w {
			t.Errorf("%s: wire.Extract reads %d rows; the case says it holds %d", what, len(rows), w)
		}
	case err == nil && (!sure || n != len(rows)):
		t.Errorf("%s: counted %d rows (sure %v) streaming the answer; it holds %d", what, n, sure, len(rows))
	case err != nil && sure:
		t.Errorf("%s: counted %d rows streaming an answer wire.Extract reads no rows in (%v): want no count or expect.rows", what, n, err)
	}
}

// checkRecorded checks the i-th answer to case c.
func checkRecorded(t *testing.T, c RecordedCase, loc *time.Location, i int, more bool, err error) {
	t.Helper()
	x := c.Expect
	what := fmt.Sprintf("%s (answer %d; recorded at %s)", c.Meaning, i, c.Source)
	if x.Class == "ok" {
		if err != nil {
			t.Fatalf("%s: want success, got %v", what, err)
		}
		if x.More != nil && more != *x.More {
			t.Errorf("%s: more pages %v, want %v", what, more, *x.More)
		}
		return
	}
	if err == nil {
		t.Fatalf("%s: want %s, got success", what, x.Class)
	}
	var e *connector.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: want a classified error, got %v", what, err)
	}
	want, _ := connector.ParseClass(x.Class)
	if x.Confirm > 1 && i < x.Confirm {
		if e.Class != connector.Transient || e.Unconfirmed != want {
			t.Errorf("%s: got %s (unconfirmed %s), want transient until confirmed as %s: %v", what, e.Class, e.Unconfirmed, want, err)
		}
	} else if e.Class != want {
		t.Errorf("%s: class %s, want %s: %v", what, e.Class, want, err)
	}
	if e.Code != x.Code {
		t.Errorf("%s: code %q, want %q: %v", what, e.Code, x.Code, err)
	}
	if x.Message != "" && !strings.Contains(e.Error(), x.Message) {
		t.Errorf("%s: error %q lacks %q", what, e.Error(), x.Message)
	}
	if x.RetryAfter != "" && (x.Confirm <= 1 || i == x.Confirm) {
		d, perr := time.ParseDuration(x.RetryAfter)
		if perr != nil {
			t.Fatalf("field expect.retry_after %q: %v", x.RetryAfter, perr)
		}
		if e.RetryAfter != d {
			t.Errorf("%s: retry after %s, want %s", what, e.RetryAfter, d)
		}
	}
	switch x.Reset {
	case "":
	case "next_midnight":
		if wantAt := connector.NextMidnight(SimNow, loc); !e.ResetAt.Equal(wantAt) {
			t.Errorf("%s: resets at %v, want %v", what, e.ResetAt, wantAt)
		}
	default:
		t.Fatalf("field expect.reset %q: want next_midnight", x.Reset)
	}
}
