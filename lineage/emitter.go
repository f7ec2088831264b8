package lineage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/redact"
	"github.com/sluicehq/sluice/internal/version"
)

// Options configure an Emitter: URL, File or both.
type Options struct {
	// URL is the HTTP endpoint events are POSTed to as JSON, e.g.
	// Marquez's http://marquez:5000/api/v1/lineage.
	URL string
	// File is the JSON-lines file events are appended to, one event a
	// line.
	File string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>" with
	// every POST; it is never logged.
	APIKey string
	// Timeout bounds one POST (0: DefaultTimeout).
	Timeout time.Duration
	// Attempts bounds the POSTs of one event (0: DefaultAttempts); a 4xx
	// answer other than 408 and 429 is not retried.
	Attempts int
	// Backoff is the wait before the second attempt, doubled before each
	// next (0: DefaultBackoff).
	Backoff time.Duration
	// Queue is how many events may wait to be sent (0: DefaultQueue); an
	// event that finds the queue full is dropped and counted.
	Queue int
	// Client sends the POSTs (nil: a client of its own).
	Client *http.Client
	// Logger receives emission failures (nil: slog.Default()).
	Logger *slog.Logger
	// Count, when set, is told the outcome of every event: sent, failed
	// (every attempt failed, or the file could not be written) or dropped
	// (the queue was full, or the emitter closed).
	Count func(outcome string)
}

// The defaults of Options.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultAttempts = 3
	DefaultBackoff  = 500 * time.Millisecond
	DefaultQueue    = 1024
)

// The outcomes Options.Count is told.
const (
	OutcomeSent    = "sent"
	OutcomeFailed  = "failed"
	OutcomeDropped = "dropped"
)

// Emitter sends events in the background, in the order they were
// emitted, so that an ingest never waits for a lineage backend: Emit
// queues and returns. A nil *Emitter emits nothing. Safe for concurrent
// use.
type Emitter struct {
	opts  Options
	log   *slog.Logger
	queue chan Event
	done  chan struct{}
	// ctx is cancelled when Close gives up waiting: a POST in flight and
	// a wait between retries stop at once.
	ctx    context.Context
	cancel context.CancelFunc
	file   *os.File

	mu     sync.RWMutex // guards closed against sends on queue
	closed bool
}

// New checks the options and starts an emitter; it returns nil (emit
// nothing) when neither URL nor File is set. Close it when done.
func New(opts Options) (*Emitter, error) {
	if opts.URL == "" && opts.File == "" {
		return nil, nil
	}
	if opts.URL != "" {
		u, err := url.Parse(opts.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("lineage url %q: want an http or https URL", redact.URL(opts.URL))
		}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	e := &Emitter{opts: opts, log: opts.Logger, queue: make(chan Event, opts.Queue), done: make(chan struct{})}
	if e.log == nil {
		e.log = slog.Default()
	}
	if opts.File != "" {
		if err := os.MkdirAll(filepath.Dir(opts.File), 0o750); err != nil {
			return nil, fmt.Errorf("opening lineage file: %w", err)
		}
		f, err := os.OpenFile(opts.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, fmt.Errorf("opening lineage file: %w", err)
		}
		e.file = f
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.run()
	return e, nil
}

// Emit queues an event; when the queue is full, or the emitter is
// closed, the event is dropped, logged and counted.
func (e *Emitter) Emit(ev Event) {
	if e == nil {
		return
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if !e.closed {
		select {
		case e.queue <- ev:
			return
		default:
		}
	}
	e.log.Warn("lineage event dropped: the queue is full or the emitter closed", "job", ev.Job.Name, "event", ev.EventType, "run", ev.Run.RunID)
	e.count(OutcomeDropped)
}

// Close stops taking events and waits until the queued ones are sent, or
// ctx is done (then what is left is dropped, counted); it closes the file.
func (e *Emitter) Close(ctx context.Context) error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.queue)
	}
	e.mu.Unlock()
	var err error
	select {
	case <-e.done:
	case <-ctx.Done():
		e.cancel()
		<-e.done
		err = fmt.Errorf("closing lineage emitter: %w", ctx.Err())
	}
	e.cancel()
	if e.file != nil {
		if cerr := e.file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing lineage file: %w", cerr)
		}
	}
	return err
}

func (e *Emitter) count(outcome string) {
	if e.opts.Count != nil {
		e.opts.Count(outcome)
	}
}

func (e *Emitter) stopped() bool { return e.ctx.Err() != nil }

func (e *Emitter) run() {
	defer close(e.done)
	for ev := range e.queue {
		if e.stopped() {
			e.count(OutcomeDropped)
			continue
		}
		e.send(ev)
	}
}

// send writes one event to the file and POSTs it, counting each
// destination's outcome.
func (e *Emitter) send(ev Event) {
	body, err := json.Marshal(ev)
	if err != nil { // the model marshals; kept for safety
		e.log.Error("lineage event not encoded", "err", err)
		e.count(OutcomeFailed)
		return
	}
	if e.file != nil {
		// One write of the whole line on a file opened O_APPEND: lines
		// of several processes never interleave.
		if _, err := e.file.Write(append(body, '\n')); err != nil {
			e.log.Warn("lineage event not written", "file", e.opts.File, "job", ev.Job.Name, "event", ev.EventType, "err", err)
			e.count(OutcomeFailed)
		} else {
			e.count(OutcomeSent)
		}
	}
	if e.opts.URL != "" {
		if err := e.post(body); err != nil {
			e.log.Warn("lineage event not sent", "endpoint", e.endpoint(), "job", ev.Job.Name, "event", ev.EventType, "err", redact.Text(err.Error(), e.opts.APIKey))
			e.count(OutcomeFailed)
		} else {
			e.count(OutcomeSent)
		}
	}
}

// endpoint is the URL as logs may show it: scheme, host and path.
func (e *Emitter) endpoint() string {
	if e.opts.URL == "" {
		return ""
	}
	in := Endpoint(e.opts.URL, "")
	return in.Namespace + in.Name
}

// errPermanent marks an answer not worth retrying.
var errPermanent = errors.New("not retried")

func (e *Emitter) post(body []byte) error {
	wait := e.opts.Backoff
	var err error
	for attempt := 1; attempt <= e.opts.Attempts; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-e.ctx.Done():
				t.Stop()
				return fmt.Errorf("posting lineage event: emitter closed after %d attempts: %w", attempt-1, err)
			}
			wait *= 2
		}
		if err = e.postOnce(body); err == nil || errors.Is(err, errPermanent) {
			return err
		}
	}
	return fmt.Errorf("posting lineage event: %d attempts: %w", e.opts.Attempts, err)
}

func (e *Emitter) postOnce(body []byte) error {
	ctx, cancel := context.WithTimeout(e.ctx, e.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.opts.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building lineage request: %w: %w", errPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", version.UserAgent())
	if e.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.opts.APIKey)
	}
	resp, err := e.opts.Client.Do(req)
	if err != nil {
		// The error names the URL; Describe's form only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("posting to %s: %w", e.endpoint(), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("posting to %s: %s", e.endpoint(), resp.Status)
	}
	return fmt.Errorf("posting to %s: %s: %w", e.endpoint(), resp.Status, errPermanent)
}
