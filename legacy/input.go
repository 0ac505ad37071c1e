package legacy

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/arkhe-ledger/arkhe/textin"
)

// MaxLineBytes is the longest line (in octets, without its line end) the
// line-oriented readers accept, and the longest CSV row (which may span
// lines inside a quoted field). A longer line or row is reported as a
// *textin.RowError and skipped, reading resumes after it, so one runaway value
// never takes unbounded memory. N2T allows values up to 4 GB; real values are
// far smaller.
const MaxLineBytes = 16 << 20

// maxGroupBytes bounds the decoded bytes kept for one N2T identifier, one
// ANVL block or one element of a dumpdata JSON array before it is refused as
// too large (a *textin.RowError; reading goes on after it).
const maxGroupBytes = 64 << 20

// utf8BOM is the UTF-8 byte order mark tolerated at the start of any input.
const utf8BOM = "\xEF\xBB\xBF"

// errLineTooLong is wrapped into a *textin.RowError when a line exceeds MaxLineBytes.
var errLineTooLong = errors.New("line longer than the limit")

// textInput returns the text of raw: gunzipped or un-xz'd when its first bytes carry the gzip
// (1f 8b) or xz (fd 37 7a 58 5a 00) magic, with its line ends read by the rule of
// textin.NewLineEndReader (a file whose first line end is a bare CR has CR-only line ends:
// every CR, LF and CRLF then ends one line; otherwise LF ends a line, a CR before it is dropped,
// and a CR elsewhere is data). A compressed stream that breaks reads as a *textin.DecodeError.
func textInput(raw *bufio.Reader) (io.Reader, error) {
	head, _ := raw.Peek(6)
	c := textin.CompressionNone
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		c = textin.CompressionGzip
	case len(head) == 6 && string(head) == "\xfd7zXZ\x00":
		c = textin.CompressionXZ
	}
	return textin.NewTextReader(raw, c)
}

// skipBOM discards a leading UTF-8 byte order mark.
func skipBOM(br *bufio.Reader) {
	if b, err := br.Peek(3); err == nil && string(b) == utf8BOM {
		_, _ = br.Discard(3)
	}
}

// lineReader reads LF- or CRLF-terminated lines and counts them (CR-only input reaches it with
// LF line ends: textInput). The slice it returns is only valid until the next call.
type lineReader struct {
	br   *bufio.Reader
	buf  []byte
	line int // number of the line last returned, 1-based
	eof  bool
}

func newLineReader(br *bufio.Reader) *lineReader { return &lineReader{br: br} }

// next returns the next line without its line end, its 1-based number and
// whether it was terminated by a newline. At end of input it returns io.EOF.
// A line longer than MaxLineBytes is discarded up to its newline and
// errLineTooLong is returned (with the line's number).
func (lr *lineReader) next() (text []byte, n int, terminated bool, err error) {
	if lr.eof {
		return nil, lr.line, false, io.EOF
	}
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, rerr := lr.br.ReadSlice('\n')
		if !tooLong {
			if len(lr.buf)+len(chunk) > MaxLineBytes+2 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if rerr != nil && rerr != io.EOF {
			return nil, lr.line, false, rerr
		}
		if rerr == io.EOF {
			lr.eof = true
			if len(chunk) == 0 && len(lr.buf) == 0 && !tooLong {
				return nil, lr.line, false, io.EOF
			}
		}
		break
	}
	lr.line++
	if tooLong {
		return nil, lr.line, !lr.eof, errLineTooLong
	}
	text = lr.buf
	if len(text) > 0 && text[len(text)-1] == '\n' {
		terminated = true
		text = text[:len(text)-1]
		if len(text) > 0 && text[len(text)-1] == '\r' {
			text = text[:len(text)-1]
		}
	} else if len(text) > 0 && text[len(text)-1] == '\r' {
		// A lone CR at end of input is a CRLF file cut between CR and LF.
		text = text[:len(text)-1]
	}
	return text, lr.line, terminated, nil
}

// lineCounter passes bytes through and remembers where the newlines are, so
// that a byte offset reported by encoding/json can be turned into a line
// number. Offsets must be asked in increasing order; newline positions
// already passed are dropped, so memory stays bounded by the decoder's
// look-ahead.
type lineCounter struct {
	r       io.Reader
	read    int64   // bytes passed through so far
	pending []int64 // offsets of newlines not yet passed by a query
	passed  int     // newlines before the last queried offset
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			break
		}
		c.pending = append(c.pending, c.read+int64(i+j))
		i += j + 1
	}
	c.read += int64(n)
	return n, err
}

// lineAt returns the 1-based line of byte offset off.
func (c *lineCounter) lineAt(off int64) int {
	k := 0
	for k < len(c.pending) && c.pending[k] < off {
		k++
	}
	if k > 0 {
		c.passed += k
		c.pending = append(c.pending[:0], c.pending[k:]...)
	}
	return c.passed + 1
}

// lastLine returns the number of the last line read so far (the line on
// which the input ended, once it is exhausted).
func (c *lineCounter) lastLine() int {
	n := c.passed + len(c.pending)
	if len(c.pending) > 0 && c.pending[len(c.pending)-1] == c.read-1 {
		return n // input ends with a newline: the last line is the one it closes
	}
	return n + 1
}
