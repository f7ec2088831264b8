package worker

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/interceptor"
)

// ActivityDrain bounds how long Stop waits, once the activities' contexts
// are cancelled, for them to return: long enough for an interrupted write
// to abort (a local temporary file removed at once, an S3 multipart
// upload aborted in a few requests), short enough that a stuck activity
// does not hold a deploy.
const ActivityDrain = 15 * time.Second

// running counts the activity executions under way in a worker, so that
// Stop can wait for them: the SDK's Stop cancels their contexts and
// returns without waiting, and a process that then exits kills the
// interrupted writes before they abort, leaving a temporary file in a
// local lake or an unfinished multipart upload on S3.
type running struct {
	interceptor.WorkerInterceptorBase
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n is 0; replaced when it leaves 0
}

func newRunning() *running {
	r := &running{idle: make(chan struct{})}
	close(r.idle)
	return r
}

func (r *running) enter() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		r.idle = make(chan struct{})
	}
	r.n++
}

func (r *running) leave() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n--
	if r.n == 0 {
		close(r.idle)
	}
}

// wait waits until no activity runs or ctx is done, and returns how many
// still run.
func (r *running) wait(ctx context.Context) int {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// InterceptActivity implements interceptor.WorkerInterceptor: every
// activity execution is counted while it runs.
func (r *running) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &countedActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, r: r}
}

// countedActivity counts one activity execution in its running.
type countedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	r *running
}

// ExecuteActivity runs the activity, counted until it returns.
func (a *countedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	a.r.enter()
	defer a.r.leave()
	return a.Next.ExecuteActivity(ctx, in)
}
