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
