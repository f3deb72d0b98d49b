package renewal

import (
	"container/heap"
	"fmt"
	"time"
)

// deadlines is a min-heap of entries ordered by maxUntil. Each entry
// knows its index, so forget removes it in O(log n). Guarded by s.mu.
type deadlines []*Entry

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].maxUntil < d[j].maxUntil }
func (d deadlines) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].heapIndex = i
	d[j].heapIndex = j
}

func (d *deadlines) Push(x any) {
	e := x.(*Entry)
	e.heapIndex = len(*d)
	*d = append(*d, e)
}

func (d *deadlines) Pop() any {
	old := *d
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	e.heapIndex = -1
	*d = old[:n-1]
	return e
}

func (d *deadlines) push(e *Entry) { heap.Push(d, e) }

func (d *deadlines) remove(e *Entry) {
	if e.heapIndex >= 0 && e.heapIndex < len(*d) && (*d)[e.heapIndex] == e {
		heap.Remove(d, e.heapIndex)
	}
}

// nextMaxHold returns the earliest MaxHold deadline, if any.
func (s *Scheduler) nextMaxHold() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.maxHolds) == 0 {
		return time.Time{}, false
	}
	return s.maxHolds[0].maxUntil.Time(), true
}

// expireMaxHolds ends every entry whose MaxHold deadline is not after now.
// An unlock in flight for such an entry still reports what the server did,
// but the holds it leaves are no longer renewed.
func (s *Scheduler) expireMaxHolds(now time.Time) {
	var lost []lostEntry
	s.mu.Lock()
	for len(s.maxHolds) > 0 && !s.maxHolds[0].maxUntil.Time().After(now) {
		e := heap.Pop(&s.maxHolds).(*Entry)
		lost = append(lost, s.lose(e, e.task.lostBy(s.cfg.MaxHoldErr, fmt.Errorf("after %v", s.cfg.MaxHold)), now))
	}
	s.mu.Unlock()
	s.reportLost(lost)
}
