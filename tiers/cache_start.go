package tiers

import (
	"sync"
	"weak"
)

// maxStarts bounds how many questions a startVersions remembers: a question
// that never reaches Remember (every tier failed) is forgotten after this
// many newer ones.
const maxStarts = 4096

// startVersions remembers the knowledge-base version each question started
// with, keyed by the question's Memo. It holds its Memos weakly, so a
// forgotten question costs a few bytes until it is pushed out. The zero
// value is ready to use and safe for concurrent use.
type startVersions struct {
	mu    sync.Mutex // guards the fields below
	byKey map[weak.Pointer[Memo]]uint64
	order []weak.Pointer[Memo] // insertion order, for the bound
}

// set records version for m; a nil m is ignored.
func (s *startVersions) set(m *Memo, version uint64) {
	if m == nil {
		return
	}
	k := weak.Make(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = make(map[weak.Pointer[Memo]]uint64)
	}
	if _, ok := s.byKey[k]; !ok {
		s.order = append(s.order, k)
	}
	s.byKey[k] = version
	for len(s.byKey) > maxStarts || len(s.order) > 2*maxStarts {
		old := s.order[0]
		s.order = s.order[1:]
		delete(s.byKey, old) // may already be gone: taken earlier
		if len(s.order) == 0 {
			break
		}
	}
}

// take returns and forgets the version recorded for m.
func (s *startVersions) take(m *Memo) (uint64, bool) {
	if m == nil {
		return 0, false
	}
	k := weak.Make(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.byKey[k]
	delete(s.byKey, k)
	return v, ok
}
