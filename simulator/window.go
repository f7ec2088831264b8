package simulator

// timeQueue is a FIFO of call times (nanoseconds since the scope's epoch)
// inside one sliding window: the exact log a sliding-window limit needs.
type timeQueue struct {
	buf  []int64
	head int
}

func (q *timeQueue) len() int { return len(q.buf) - q.head }

func (q *timeQueue) push(t int64) { q.buf = append(q.buf, t) }

// dropThrough removes every entry at or before cut.
func (q *timeQueue) dropThrough(cut int64) {
	for q.head < len(q.buf) && q.buf[q.head] <= cut {
		q.head++
	}
	if q.head > 64 && q.head*2 > len(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		q.buf = q.buf[:n]
		q.head = 0
	}
}

func (q *timeQueue) reset() {
	q.buf = q.buf[:0]
	q.head = 0
}

// callLog is one log of a window (its accepted calls, or all of them)
// with the most calls it ever held at once.
type callLog struct {
	timeQueue
	peak int
}

// reset empties the log and forgets its peak.
func (l *callLog) reset() {
	l.timeQueue.reset()
	l.peak = 0
}

// add logs a call at t, the calls at or before cut (the start of the
// window) dropped first.
func (l *callLog) add(t, cut int64) {
	l.dropThrough(cut)
	l.push(t)
	l.raise(l.len())
}

// raise makes n the peak when it is higher.
func (l *callLog) raise(n int) { l.peak = max(l.peak, n) }

// spacing follows the gaps between calls: when the last came and the
// smallest gap so far.
type spacing struct {
	last   int64
	seen   bool  // a call came since the last reset
	minGap int64 // -1: fewer than two calls
}

// note records a call at t.
func (s *spacing) note(t int64) {
	if s.seen {
		if gap := max(t-s.last, 0); s.minGap < 0 || gap < s.minGap {
			s.minGap = gap
		}
	}
	s.last, s.seen = t, true
}

// reset forgets every call.
func (s *spacing) reset() { *s = spacing{minGap: -1} }
