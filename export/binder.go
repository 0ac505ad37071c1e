package export

import (
	"fmt"
	"strconv"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// binderSink writes an N2T egg binder dump in `db_dump -p` print format: a header, then for
// each ARK its key/value line pairs (`ark:/NAAN/name|element`, then the value), each line
// starting with one space, then DATA=END.
type binderSink struct {
	data *atomicFile
	buf  []byte
	n    int64
}

func newBinder(path string) (*binderSink, error) {
	f, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	f.WriteString("VERSION=3\nformat=print\ntype=btree\nduplicates=1\nHEADER=END\n")
	return &binderSink{data: f}, nil
}

// appendDBPrint appends s as db_dump's print format writes a key or value: printable ASCII as
// is, a backslash doubled, every other octet as \hh.
func appendDBPrint(b []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c >= 0x20 && c < 0x7f:
			b = append(b, c)
		default:
			b = append(b, '\\', hexdigits[c>>4], hexdigits[c&15])
		}
	}
	return b
}

// element appends one key/value pair of the ARK id.
func (s *binderSink) element(id, elem, value string) {
	s.buf = append(s.buf, ' ')
	s.buf = appendDBPrint(s.buf, id)
	s.buf = append(s.buf, '|')
	s.buf = append(s.buf, elem...)
	s.buf = append(s.buf, '\n', ' ')
	s.buf = appendDBPrint(s.buf, value)
	s.buf = append(s.buf, '\n')
}

// ark writes an ARK's elements: `_t` always (empty for no target, so that every ARK has one),
// `_is` for a status other than public, the ERC kernel who, what, when, and `_,ec`, the creation
// time in Unix seconds.
func (s *binderSink) ark(r *ledger.ARKRow) error {
	id := "ark:/" + key(r) // N2T keeps its keys in the classic form
	s.buf = s.buf[:0]
	t := ""
	if r.Target != nil {
		t = *r.Target
	}
	s.element(id, "_t", t)
	switch r.Status {
	case "reserved":
		s.element(id, "_is", "reserved")
	case "unavailable":
		v := "unavailable"
		if r.TombstoneReason != nil && *r.TombstoneReason != "" {
			v += " | " + *r.TombstoneReason
		}
		s.element(id, "_is", v)
	}
	for _, e := range [...]struct {
		name string
		v    *string
	}{{"who", r.Who}, {"what", r.What}, {"when", r.When}} {
		if e.v != nil {
			s.element(id, e.name, *e.v)
		}
	}
	if r.CreatedAt != nil {
		s.element(id, "_,ec", strconv.FormatInt(r.CreatedAt.Unix(), 10))
	}
	s.data.Write(s.buf)
	s.n++
	return nil
}

func (s *binderSink) commit(_ []Forward, w Watermark) ([]string, error) {
	s.data.WriteString("DATA=END\n")
	_ = w // a db_dump has no place for a comment: the watermark is the caller's to print
	if err := s.data.commit(); err != nil {
		return nil, fmt.Errorf("export n2t-dump: %w", err)
	}
	return []string{s.data.path}, nil
}

func (s *binderSink) abort() { s.data.abort() }
