package pipeline

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Mint statuses of a mint map row (issue 3 "Output": minted-now or replayed).
const (
	StatusMinted   = "minted"
	StatusReplayed = "replayed"
)

// MintMapRow is one line of the mint map: the manifest's request ID, the ARK
// it got in printed form (`ark:NAAN/name`, README decision 1) and the status,
// StatusMinted or StatusReplayed. No internal key ever appears here (README
// decision 6). The struct tags name the columns of every format.
type MintMapRow struct {
	RequestID string `parquet:"request_id" json:"request_id"`
	ARK       string `parquet:"ark" json:"ark"`
	Status    string `parquet:"status,dict" json:"status"`
}

// MintMapWriter writes a mint map. Rows appear in the order written. The
// output goes to PATH.tmp and reaches PATH only through a successful Close,
// so a failed or killed run never leaves a complete-looking mint map; the
// re-run replays and writes it whole. Not safe for concurrent use.
type MintMapWriter interface {
	// Write appends one row. It fails for an empty request ID or ARK or an
	// unknown status, and on I/O errors (which are sticky).
	Write(MintMapRow) error
	// Close flushes, syncs and renames PATH.tmp to PATH. After an earlier
	// error it removes PATH.tmp instead and returns that error.
	Close() error
	// Abort removes PATH.tmp and leaves PATH untouched (for a failed run).
	Abort() error
}

// mintMapRowGroup bounds the rows a Parquet mint map buffers in memory.
const mintMapRowGroup = 128 << 10

// CreateMintMap creates the mint map for path, in the format its extension
// names (case insensitively): .csv (header request_id,ark,status), .jsonl or
// .ndjson (one {"request_id","ark","status"} object per line), or .parquet
// (columns request_id, ark, status as UTF-8 strings, zstd-compressed, row
// groups of 131,072 rows). It creates PATH.tmp at once, truncating a leftover
// one. Errors: an unknown extension, or the *fs.PathError of the create.
func CreateMintMap(path string) (MintMapWriter, error) {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".csv", ".jsonl", ".ndjson", ".parquet":
	default:
		return nil, fmt.Errorf("mint map %s: %w: want .csv, .jsonl, .ndjson or .parquet", path, ErrUnknownFormat)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create mint map: %w", err)
	}
	base := mintMapFile{path: path, f: f, bw: bufio.NewWriterSize(f, 256<<10)}
	switch ext {
	case ".csv":
		w := &csvMintMap{mintMapFile: base}
		w.cw = csv.NewWriter(w.bw)
		if err := w.cw.Write([]string{"request_id", "ark", "status"}); err != nil {
			_ = w.Abort()
			return nil, fmt.Errorf("write mint map %s: %w", path, err)
		}
		return w, nil
	case ".parquet":
		w := &parquetMintMap{mintMapFile: base}
		w.pw = parquet.NewGenericWriter[MintMapRow](w.bw,
			parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault}),
			parquet.MaxRowsPerRowGroup(mintMapRowGroup),
			parquet.CreatedBy("arkhe", "", ""))
		return w, nil
	}
	return &jsonMintMap{mintMapFile: base}, nil
}

// checkMintMapRow validates a row before it is written.
func checkMintMapRow(r MintMapRow) error {
	switch {
	case r.RequestID == "":
		return errors.New("mint map row has no request ID")
	case r.ARK == "":
		return fmt.Errorf("mint map row for request ID %q has no ARK", r.RequestID)
	case r.Status != StatusMinted && r.Status != StatusReplayed:
		return fmt.Errorf("mint map row for request ID %q has status %q, want %q or %q", r.RequestID, r.Status, StatusMinted, StatusReplayed)
	}
	return nil
}

// mintMapFile is the temporary file and its commit/abort logic.
type mintMapFile struct {
	path   string
	f      *os.File
	bw     *bufio.Writer
	err    error // sticky I/O error
	closed bool
}

func (m *mintMapFile) fail(err error) error {
	if m.err == nil {
		m.err = fmt.Errorf("write mint map %s: %w", m.path, err)
	}
	return m.err
}

// commit flushes, syncs, closes and renames; on any error it aborts.
func (m *mintMapFile) commit(flush func() error) error {
	if m.closed {
		return m.err
	}
	if m.err != nil {
		_ = m.Abort()
		return m.err
	}
	err := flush()
	if err == nil {
		err = m.bw.Flush()
	}
	if err == nil {
		err = m.f.Sync()
	}
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	m.closed = true
	if err == nil {
		err = os.Rename(m.path+".tmp", m.path)
	}
	if err != nil {
		_ = os.Remove(m.path + ".tmp")
		m.err = fmt.Errorf("close mint map %s: %w", m.path, err)
		return m.err
	}
	syncDir(filepath.Dir(m.path))
	return nil
}

// Abort implements MintMapWriter.
func (m *mintMapFile) Abort() error {
	if m.closed {
		return nil
	}
	m.closed = true
	_ = m.f.Close()
	if err := os.Remove(m.path + ".tmp"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("abort mint map %s: %w", m.path, err)
	}
	return nil
}

// syncDir makes a rename durable; failure is harmless (some file systems
// cannot sync a directory), so it is ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

type csvMintMap struct {
	mintMapFile
	cw  *csv.Writer
	rec [3]string
}

// Write implements MintMapWriter.
func (w *csvMintMap) Write(r MintMapRow) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("mint map %s: write after close", w.path)
	}
	if err := checkMintMapRow(r); err != nil {
		return err
	}
	w.rec = [3]string{r.RequestID, r.ARK, r.Status}
	if err := w.cw.Write(w.rec[:]); err != nil {
		return w.fail(err)
	}
	return nil
}

// Close implements MintMapWriter.
func (w *csvMintMap) Close() error {
	return w.commit(func() error { w.cw.Flush(); return w.cw.Error() })
}

type jsonMintMap struct {
	mintMapFile
	line []byte
}

// Write implements MintMapWriter.
func (w *jsonMintMap) Write(r MintMapRow) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("mint map %s: write after close", w.path)
	}
	if err := checkMintMapRow(r); err != nil {
		return err
	}
	b := append(w.line[:0], `{"request_id":`...)
	b = appendJSONString(b, r.RequestID)
	b = append(b, `,"ark":`...)
	b = appendJSONString(b, r.ARK)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, r.Status)
	b = append(b, "}\n"...)
	w.line = b
	if _, err := w.bw.Write(b); err != nil {
		return w.fail(err)
	}
	return nil
}

// Close implements MintMapWriter.
func (w *jsonMintMap) Close() error { return w.commit(func() error { return nil }) }

// appendJSONString appends s as a JSON string (RFC 8259 §7); invalid UTF-8
// bytes become U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c >= 0x20:
				b = append(b, c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

type parquetMintMap struct {
	mintMapFile
	pw  *parquet.GenericWriter[MintMapRow]
	one [1]MintMapRow
}

// Write implements MintMapWriter.
func (w *parquetMintMap) Write(r MintMapRow) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("mint map %s: write after close", w.path)
	}
	if err := checkMintMapRow(r); err != nil {
		return err
	}
	w.one[0] = r
	if _, err := w.pw.Write(w.one[:]); err != nil {
		return w.fail(err)
	}
	return nil
}

// Close implements MintMapWriter.
func (w *parquetMintMap) Close() error { return w.commit(w.pw.Close) }

// Compile-time checks.
var (
	_ MintMapWriter = (*csvMintMap)(nil)
	_ MintMapWriter = (*jsonMintMap)(nil)
	_ MintMapWriter = (*parquetMintMap)(nil)
	_ io.Closer     = (*RejectWriter)(nil)
)
