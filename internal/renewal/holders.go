package renewal

import "slices"

// Owners returns the owners with holds on key, sorted: whoever this
// Scheduler records as holding it. It walks every entry, so it is for
// paths that already failed (an unlock by an owner that holds nothing).
func (s *Scheduler) Owners(key string) []string {
	s.mu.Lock()
	var owners []string
	for k, e := range s.entries {
		if k.key == key && e.count() > 0 {
			owners = append(owners, k.owner)
		}
	}
	s.mu.Unlock()
	slices.Sort(owners)
	return owners
}
