package textin

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/ulikunitz/xz"
)

// This file is the text layer under every line-oriented reader of arkhe (the CSV and JSON
// Lines manifests of package pipeline, the legacy exports of package legacy): decompression that reports where
// a truncated or corrupt stream breaks, and one rule for line ends.

// Compression is how an input file's bytes are compressed.
type Compression uint8

// The compressions NewTextReader undoes.
const (
	CompressionNone Compression = iota
	CompressionGzip             // RFC 1952, several members allowed
	CompressionXZ               // the .xz container
)

// String returns "none", "gzip" or "xz".
func (c Compression) String() string {
	switch c {
	case CompressionGzip:
		return "gzip"
	case CompressionXZ:
		return "xz"
	}
	return "none"
}

// NewTextReader returns the text of src, decompressed as c says, with its line ends read by the
// rule of NewLineEndReader. An error of src itself comes through unchanged; a failure of the
// decompressor — the stream ends early or is corrupt — comes as a *DecodeError (sticky) that
// counts the whole lines handed on before it. A stream that is not of format c at all (a bad
// gzip header, no xz magic) is an error here, wrapping the decoder's.
func NewTextReader(src io.Reader, c Compression) (io.Reader, error) {
	if c == CompressionNone {
		return NewLineEndReader(src), nil
	}
	tag := &sourceTagger{r: src}
	var dec io.Reader
	switch c {
	case CompressionGzip:
		zr, err := gzip.NewReader(tag)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("gzip: the file ends inside its gzip header, before any record: it is cut short (%w)", untag(err))
		}
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", untag(err))
		}
		dec = zr
	case CompressionXZ:
		xr, err := xz.NewReader(tag)
		if err != nil {
			return nil, fmt.Errorf("xz: %w", untag(err))
		}
		dec = xr
	default:
		return nil, fmt.Errorf("compression %d unknown", c)
	}
	return &decodeGuard{r: NewLineEndReader(dec), c: c}, nil
}

// sourceError marks an error of the compressed file itself (an I/O error), so that decodeGuard
// tells it from a failure of the decoder above it.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// untag returns the file's own error when err is one, else err.
func untag(err error) error {
	var se *sourceError
	if errors.As(err, &se) {
		return se.err
	}
	return err
}

// sourceTagger reads the compressed file and marks its errors other than io.EOF.
type sourceTagger struct{ r io.Reader }

// Read implements io.Reader.
func (t *sourceTagger) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		err = &sourceError{err}
	}
	return n, err
}

// decodeGuard counts the line ends it hands on and turns a decoder failure into a *DecodeError.
type decodeGuard struct {
	r     io.Reader
	c     Compression
	lines int64
	err   error // sticky
}

// Read implements io.Reader.
func (g *decodeGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	g.lines += int64(bytes.Count(p[:n], newlineByte))
	switch {
	case err == nil || err == io.EOF:
	case errors.As(err, new(*sourceError)):
		err = untag(err)
	default:
		err = &DecodeError{Compression: g.c, Lines: g.lines, Err: err}
		g.err = err
	}
	return n, err
}

var newlineByte = []byte{'\n'}

// NewLineEndReader returns r with its line ends made LF by this rule. The first line end of the
// input decides: when it is a CR not followed by LF, the input has CR-only line ends (classic
// Mac OS text), and from there on every CR, LF and CRLF ends one line and is handed on as one
// LF. Otherwise (the first line end is LF or CRLF, or there is none) the bytes pass unchanged:
// LF ends a line, a CR before it belongs to the line end (the readers drop it), and a CR
// anywhere else is data. Inside a CSV quoted field of a CR-only file a line break is therefore
// read as LF, as encoding/csv reads a CRLF inside a quoted field.
func NewLineEndReader(r io.Reader) io.Reader { return &lineEndReader{r: r} }

// lineEndReader implements NewLineEndReader.
type lineEndReader struct {
	r       io.Reader
	mode    byte // 0 undecided, '\n' LF (pass through), '\r' CR-only
	afterCR bool // CR mode: the last byte handed on was a CR made LF (an LF right after it is dropped)
	pending int  // a byte read ahead to decide the mode, handed on next; -1 none
	started bool
}

// Read implements io.Reader.
func (c *lineEndReader) Read(p []byte) (int, error) {
	if !c.started {
		c.started, c.pending = true, -1
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.pending >= 0 {
		p[0] = byte(c.pending)
		c.pending = -1
		return 1, nil
	}
	for {
		n, err := c.r.Read(p)
		switch c.mode {
		case '\n':
			return n, err
		case 0:
			i := bytes.IndexAny(p[:n], "\r\n")
			if i < 0 {
				return n, err
			}
			if p[i] == '\n' {
				c.mode = '\n'
				return n, err
			}
			if i+1 < n {
				if p[i+1] == '\n' {
					c.mode = '\n'
					return n, err
				}
				c.mode = '\r'
				n = c.translate(p[:n], i)
				break
			}
			// The CR is the last byte read: the byte after it decides.
			if err == nil {
				var one [1]byte
				m, rerr := io.ReadFull(c.r, one[:])
				if m == 1 {
					if one[0] == '\n' {
						c.mode, c.pending = '\n', '\n'
						return n, nil
					}
					c.mode = '\r'
					n = c.translate(p[:n], i)
					// one[0] follows a CR made LF; it is not an LF.
					c.afterCR = one[0] == '\r'
					if one[0] == '\r' {
						c.pending = '\n'
					} else {
						c.pending = int(one[0])
					}
					return n, nil
				}
				if rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
					err = rerr
				} else {
					err = io.EOF
				}
			}
			c.mode = '\r' // a CR at the end of the input is its only line end
			n = c.translate(p[:n], i)
		default:
			n = c.translate(p[:n], 0)
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// translate rewrites b[from:] in place by the CR-only rule and returns the new length of b.
func (c *lineEndReader) translate(b []byte, from int) int {
	w := from
	for _, x := range b[from:] {
		switch x {
		case '\r':
			b[w] = '\n'
			w++
			c.afterCR = true
			continue
		case '\n':
			if c.afterCR {
				c.afterCR = false
				continue
			}
		}
		b[w] = x
		w++
		c.afterCR = false
	}
	return w
}
