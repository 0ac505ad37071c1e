package linkcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// FileRecord is one line of a FileSink: a check with the state and
// transitions it produced.
type FileRecord struct {
	Result      Result       `json:"result"`
	State       State        `json:"state"`
	Transitions []Transition `json:"transitions,omitempty"`
}

// FileSink is a ResultSink that appends one JSON object (a FileRecord) per
// line to a file and syncs the file (fsync) before Record returns, so a
// recorded check survives the process being killed and the machine losing
// power. It is safe for concurrent use.
type FileSink struct {
	mu sync.Mutex
	f  *os.File
}

// NewFileSink returns a FileSink appending to f; the caller opens f (with
// os.O_APPEND to keep earlier lines) and closes it after the run.
func NewFileSink(f *os.File) *FileSink { return &FileSink{f: f} }

// Record writes one line with a single write and syncs the file. It fails
// when the write or the sync fails, naming the file.
func (s *FileSink) Record(_ context.Context, r Result, next State, ts []Transition) error {
	b, err := json.Marshal(FileRecord{Result: r, State: next, Transitions: ts})
	if err != nil {
		return fmt.Errorf("encoding the check of %s: %w", r.Key, err)
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Write(b); err != nil {
		return fmt.Errorf("writing %s: %w", s.f.Name(), err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", s.f.Name(), err)
	}
	return nil
}
