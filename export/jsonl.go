package export

import (
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/report"
)

// jsonlSink writes JSON Lines through report.Writer: one object per ARK, the columns of
// ledger.ARKRow.
type jsonlSink struct {
	w *report.Writer[ledger.ARKRow]
}

func newJSONL(path string) (*jsonlSink, error) {
	w, err := report.Create[ledger.ARKRow](path, report.JSONL)
	if err != nil {
		return nil, err
	}
	return &jsonlSink{w: w}, nil
}

func (s *jsonlSink) ark(r *ledger.ARKRow) error { return s.w.Write(*r) }

func (s *jsonlSink) commit(_ []Forward, _ Watermark) ([]string, error) {
	if err := s.w.Close(); err != nil {
		return nil, err
	}
	return []string{s.w.Path()}, nil
}

func (s *jsonlSink) abort() { _ = s.w.Abort() }
