package ledger

import "testing"

// TestCollect: the committer takes the requests already waiting, up to
// maxBatch receipts, and hands back the one that does not fit; it never
// waits for more, so a lone appender's request is committed at once; a
// closed queue ends the batch with what was collected.
func TestCollect(t *testing.T) {
	req := func(n int) *request { return &request{items: make([]item, n)} }
	newLog := func(waiting ...*request) *Log {
		l := &Log{reqs: make(chan *request, 8), maxBatch: 4}
		for _, r := range waiting {
			l.reqs <- r
		}
		return l
	}

	l := newLog(req(1), req(1), req(1), req(1))
	if batch, next := l.collect(req(1)); len(batch) != 4 || next != nil {
		t.Errorf("waiting requests: a batch of %d (next %v), want the 4 that fill it", len(batch), next)
	}
	if len(l.reqs) != 1 {
		t.Errorf("%d requests left waiting, want the 1 past maxBatch", len(l.reqs))
	}

	big := req(3)
	l = newLog(req(2), big)
	if batch, next := l.collect(req(1)); len(batch) != 2 || next != big {
		t.Errorf("a request past maxBatch: a batch of %d (next %v), want 2 and that request next", len(batch), next)
	}

	// A lone appender: an unbuffered queue no one sends on would block a
	// collect that waited.
	l = &Log{reqs: make(chan *request), maxBatch: 4}
	if batch, _ := l.collect(req(1)); len(batch) != 1 {
		t.Errorf("lone appender: a batch of %d, want 1", len(batch))
	}

	l = newLog(req(1))
	close(l.reqs)
	if batch, next := l.collect(req(1)); len(batch) != 2 || next != nil {
		t.Errorf("closed queue: a batch of %d (next %v), want 2", len(batch), next)
	}
}
