package textin

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
)

// CSVScanner reads CSV records (RFC 4180, as encoding/csv reads them with LazyQuotes off and
// FieldsPerRecord -1): fields separated by commas, a field in double quotes may hold commas,
// doubled quotes and line breaks, a CRLF line end (also inside a quoted field) is read as LF,
// empty lines are skipped. Give it text with LF line ends (NewTextReader); memory is bounded by
// three times its bound, whatever the input.
//
// A broken record does not stop reading. The rule:
//   - a line longer than the bound (Max bytes, its line end not counted) is rejected alone and
//     reading resumes at the next line;
//   - a record confined to one line (a quote inside an unquoted field, a closing quote followed
//     by text) is rejected alone and reading resumes at the next line;
//   - a record whose quoted field runs over several lines and then breaks — the field is not
//     closed at the end of the file, a closing quote is followed by text, or the record grows
//     past the bound — is rejected, and reading resumes at the line after the one it starts
//     on: the lines it had read are read again, each one alone as a record (a quoted field
//     must close on its own line there, else that line is rejected alone), then reading goes
//     on as usual after them. So a stray quote costs its own record only, and no line is read
//     more than twice;
//   - but a quoted field still open where the input ends, when the last line has no line end
//     or the record starts on the last line, is a file cut inside that record: the record is
//     rejected (CSVError.Cut) and its lines are not read again.
type CSVScanner struct {
	br      *bufio.Reader
	max     int
	reuse   bool
	line    int // number of the last line taken from br
	fields  []string
	buf     []byte // the current record's field bytes
	ends    []int  // field end offsets in buf
	long    []byte // a line longer than br's buffer
	raw     []byte // the lines of a record spanning lines, for reading them again
	rawEnds []rawLine
	replay  []rawLine // lines to read again, in order; their bytes in rbuf
	rbuf    []byte
	rnext   int
	term    bool  // the last line taken ended with a line end
	err     error // sticky: io.EOF or the reader's error
}

var crByte = []byte{'\r'}

// rawLine is one stored line: its bytes' offsets in the buffer, its number, whether it was too
// long to store (its bytes then are not kept) and whether it ended with a line end.
type rawLine struct {
	start, end, n int
	tooLong       bool
	term          bool
}

// bigBuffer is the capacity above which a buffer is dropped once used, so that one huge record
// does not keep its memory for the rest of the file.
const bigBuffer = 4 << 20

// DefaultMaxRecordBytes is the bound NewCSVScanner applies to a record and a line when given
// none.
const DefaultMaxRecordBytes = 64 << 20

// NewCSVScanner returns a scanner of r whose records and lines are bounded by max bytes
// (max ≤ 0: DefaultMaxRecordBytes). With reuse, the slice Scan returns is reused by the next call.
func NewCSVScanner(r io.Reader, max int, reuse bool) *CSVScanner {
	if max <= 0 {
		max = DefaultMaxRecordBytes
	}
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 64<<10 {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &CSVScanner{br: br, max: max, reuse: reuse}
}

// Terminated reports whether the last line of the record Scan returned last ended with a line
// end (false: the input ends right after it).
func (s *CSVScanner) Terminated() bool { return s.term }

// Line returns the number of the last line read (the line the input ends on, at the end).
func (s *CSVScanner) Line() int { return s.line }

// Scan returns the next record's fields and the line it starts on. Errors: io.EOF at the end;
// a *CSVError for a broken record (call Scan again to go on); any other error is the reader's,
// returned again by every later call. The fields' strings stay valid; the slice is reused when
// the scanner was made with reuse.
func (s *CSVScanner) Scan() ([]string, int, error) {
	for {
		text, n, st, err := s.next()
		if err != nil {
			return nil, n, err
		}
		if st.tooLong {
			return nil, n, &CSVError{StartLine: n, Line: n, Err: ErrRecordTooLong, Max: s.max}
		}
		if len(text) == 0 {
			continue // an empty line
		}
		fields, err := s.record(text, n, st.replayed)
		if err != nil {
			return nil, n, err
		}
		return fields, n, nil
	}
}

// lineState says how next got a line.
type lineState struct {
	tooLong  bool // the line is longer than max; text is nil
	replayed bool // the line is read again after a broken record
}

// next returns the next line without its line end (CRLF or LF; a CR at the very end of the
// input too), from the lines to read again first. The text is valid until the next call.
func (s *CSVScanner) next() ([]byte, int, lineState, error) {
	if s.rnext < len(s.replay) {
		l := s.replay[s.rnext]
		s.rnext++
		text := s.rbuf[l.start:l.end]
		if s.rnext == len(s.replay) {
			s.replay, s.rnext = s.replay[:0], 0
			if cap(s.rbuf) > bigBuffer {
				s.rbuf = nil // text stays valid until the next call
			}
		}
		s.term = l.term
		return text, l.n, lineState{tooLong: l.tooLong, replayed: true}, nil
	}
	if s.err != nil {
		return nil, s.line, lineState{}, s.err
	}
	line, err := s.br.ReadSlice('\n')
	tooLong := false
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.br.ReadSlice('\n')
			if tooLong || len(s.long)+len(line) > s.max+2 {
				tooLong = true
				s.long = s.long[:0]
				continue
			}
			s.long = AppendDoubling(s.long, line, s.max+2)
		}
		line = s.long
		if cap(s.long) > bigBuffer {
			s.long = nil // keep no huge buffer after one huge line
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		s.err = io.EOF
		if len(line) == 0 && !tooLong {
			return nil, s.line, lineState{}, io.EOF
		}
	default:
		// The part of a line before a read error is not a line: it is dropped.
		s.err = err
		return nil, s.line, lineState{}, err
	}
	s.line++
	// A CR at the very end of the input is a line end too (a CRLF file cut between the two).
	s.term = len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r')
	line = bytes.TrimSuffix(line, newlineByte)
	line = bytes.TrimSuffix(line, crByte)
	if tooLong || len(line) > s.max {
		return nil, s.line, lineState{tooLong: true}, nil
	}
	return line, s.line, lineState{}, nil
}

// record parses the record that starts with text, line n. alone: the line is read again after
// a broken record and must hold its whole record. The error is a *CSVError, or the reader's
// error met inside a quoted field (the record is then lost with the rest of the input).
func (s *CSVScanner) record(text []byte, n int, alone bool) ([]string, error) {
	s.buf, s.ends = s.buf[:0], s.ends[:0]
	s.raw, s.rawEnds = s.raw[:0], s.rawEnds[:0]
	if cap(s.raw) > bigBuffer {
		s.raw = nil
	}
	if cap(s.buf) > bigBuffer {
		s.buf = nil
	}
	line := n
	size := len(text)
	pos := 0
	for {
		if pos < len(text) && text[pos] == '"' {
			pos++
			for {
				i := bytes.IndexByte(text[pos:], '"')
				if i >= 0 {
					s.buf = append(s.buf, text[pos:pos+i]...)
					pos += i + 1
					if pos < len(text) && text[pos] == '"' {
						s.buf = append(s.buf, '"')
						pos++
						continue
					}
					break
				}
				// The quoted field goes on past this line.
				s.buf = append(s.buf, text[pos:]...)
				if alone {
					return nil, &CSVError{StartLine: n, Line: n, Column: len(text) + 1, Err: ErrQuoteNotClosed}
				}
				if line == n {
					s.keepRaw(text, n, true)
				}
				s.buf = append(s.buf, '\n')
				next, ln, st, err := s.next()
				if err == io.EOF {
					if !s.term || line == n {
						return nil, &CSVError{StartLine: n, Line: line, Err: ErrQuoteNotClosed, Cut: true}
					}
					return nil, s.broken(n, line, 0, ErrQuoteNotClosed)
				}
				if err != nil {
					return nil, err
				}
				line = ln
				if st.tooLong {
					s.rawEnds = append(s.rawEnds, rawLine{start: len(s.raw), end: len(s.raw), n: ln, tooLong: true, term: true})
					return nil, s.broken(n, ln, 0, ErrRecordTooLong)
				}
				s.keepRaw(next, ln, s.term)
				size += len(next) + 1
				if size > s.max {
					return nil, s.broken(n, ln, 0, ErrRecordTooLong)
				}
				text, pos = next, 0
			}
			switch {
			case pos == len(text):
				s.ends = append(s.ends, len(s.buf))
				return s.finish(), nil
			case text[pos] == ',':
				pos++
				s.ends = append(s.ends, len(s.buf))
				continue
			}
			if line == n {
				return nil, &CSVError{StartLine: n, Line: n, Column: pos + 1, Err: csv.ErrQuote}
			}
			return nil, s.broken(n, line, pos+1, csv.ErrQuote)
		}
		i := bytes.IndexByte(text[pos:], ',')
		field := text[pos:]
		if i >= 0 {
			field = text[pos : pos+i]
		}
		if j := bytes.IndexByte(field, '"'); j >= 0 {
			if line == n {
				return nil, &CSVError{StartLine: n, Line: n, Column: pos + j + 1, Err: csv.ErrBareQuote}
			}
			return nil, s.broken(n, line, pos+j+1, csv.ErrBareQuote)
		}
		s.buf = append(s.buf, field...)
		s.ends = append(s.ends, len(s.buf))
		if i < 0 {
			return s.finish(), nil
		}
		pos += i + 1
	}
}

// keepRaw stores one line of a record that spans lines.
func (s *CSVScanner) keepRaw(text []byte, n int, term bool) {
	start := len(s.raw)
	s.raw = append(s.raw, text...)
	s.rawEnds = append(s.rawEnds, rawLine{start: start, end: len(s.raw), n: n, term: term})
}

// broken reports the record that starts on line start and breaks on line at, and queues the
// lines after start that it read to be read again.
func (s *CSVScanner) broken(start, at, col int, err error) *CSVError {
	e := &CSVError{StartLine: start, Line: at, Column: col, Err: err, Max: s.max}
	if len(s.rawEnds) > 1 {
		// The record's lines become the lines to read again (the buffers swap: no copy).
		s.rbuf, s.raw = s.raw, s.rbuf[:0]
		s.replay = append(s.replay[:0], s.rawEnds[1:]...)
		s.rnext = 0
		e.Reread = len(s.replay)
	}
	return e
}

// finish turns the parsed fields into strings: one allocation for the record.
func (s *CSVScanner) finish() []string {
	all := string(s.buf)
	var out []string
	if s.reuse {
		out = s.fields[:0]
	} else {
		out = make([]string, 0, len(s.ends))
	}
	prev := 0
	for _, e := range s.ends {
		out = append(out, all[prev:e])
		prev = e
	}
	if s.reuse {
		s.fields = out
	}
	return out
}

// AppendDoubling appends src to dst and returns the result, doubling dst's capacity when it must
// grow, up to limit octets (a larger need gets exactly what it needs). Readers that gather one
// long line from several bufio reads use it: append grows a large slice by a quarter only, which
// copies a line of many MiB several times over.
func AppendDoubling(dst, src []byte, limit int) []byte {
	if need := len(dst) + len(src); need > cap(dst) {
		grown := make([]byte, len(dst), max(need, min(2*cap(dst), limit)))
		copy(grown, dst)
		dst = grown
	}
	return append(dst, src...)
}
