package bench

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/sizing"
)

// Row is one ARK of a bench row set with its receipt: an assigned name, the target, the ERC
// fields (empty means absent, stored as NULL) and the request ID and payload digest the receipt
// keeps.
type Row struct {
	Name      string // assigned name: shoulder + blade + check character
	URL       string
	What      string
	Who       string
	When      string
	RequestID string
	Digest    [16]byte
	CreatedAt time.Time
}

// RowSet is the rows a bench builds every layout from, minted under one NAAN and shoulder.
type RowSet struct {
	NAAN     string // e.g. "99999"
	Shoulder string // stored form, e.g. "/x9"
	Source   string // "generated (seed N)" or the input file
	Rows     []Row
}

// Key returns the ledger key NAAN/name of row i.
func (s *RowSet) Key(i int) string { return s.NAAN + "/" + s.Rows[i].Name }

// Fields returns the set's average field lengths and shares (the model's input).
func (s *RowSet) Fields() sizing.Fields {
	f := sizing.Fields{NAAN: float64(len(s.NAAN))}
	if len(s.Rows) == 0 {
		return f
	}
	var name, req float64
	var sum, cnt [4]float64
	for _, r := range s.Rows {
		name += float64(len(r.Name))
		req += float64(len(r.RequestID))
		for i, v := range [4]string{r.URL, r.What, r.Who, r.When} {
			if v != "" {
				sum[i] += float64(len(v))
				cnt[i]++
			}
		}
	}
	n := float64(len(s.Rows))
	f.Name, f.RequestID = name/n, req/n
	avg := func(i int) (float64, float64) {
		if cnt[i] == 0 {
			return 0, 0
		}
		return sum[i] / cnt[i], cnt[i] / n
	}
	f.URL, f.URLShare = avg(0)
	f.What, f.WhatShare = avg(1)
	f.Who, f.WhoShare = avg(2)
	f.When, f.WhenShare = avg(3)
	return f
}

// benchEpoch returns the creation time of a bench set's first ARK; each next one is 1 ms later.
func benchEpoch() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// names draws n distinct assigned names under naan and shoulder from the seeded blade stream
// (ark.NewSeededBlades), redrawing a name drawn before as mint does.
func names(naan, shoulder string, n int, seed uint64) ([]string, error) {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	m, err := ark.NewMinter(naan, shoulder, ark.DefaultBladeLength, ark.NewSeededBlades(s))
	if err != nil {
		return nil, fmt.Errorf("bench rows: %w", err)
	}
	seen := make(map[string]struct{}, n)
	out := make([]string, 0, n)
	for len(out) < n {
		name, err := m.Next()
		if err != nil {
			return nil, fmt.Errorf("bench rows: %w", err)
		}
		if _, dup := seen[name]; dup {
			continue
		}
		seen[name] = struct{}{}
		out = append(out, name)
	}
	return out, nil
}

func digest(r *Row) [16]byte {
	h := sha256.New()
	for _, v := range []string{r.URL, r.What, r.Who, r.When} {
		io.WriteString(h, v)
		h.Write([]byte{0})
	}
	var d [16]byte
	copy(d[:], h.Sum(nil))
	return d
}

// syllables build the generated words, two octets each; plain ASCII, so every octet count is a
// character count.
const syllables = "karomiseltaveloduphanegriosbeltawestorimachlufetoanyeku"

func word(r *rand.Rand, min, max int) string {
	var b strings.Builder
	n := min + r.IntN(max-min+1)
	for b.Len() < n {
		i := 2 * r.IntN(len(syllables)/2)
		b.WriteString(syllables[i : i+2])
	}
	return b.String()
}

// capital returns w with its first (ASCII) letter in upper case.
func capital(w string) string { return strings.ToUpper(w[:1]) + w[1:] }

// phrase returns words joined by spaces, about target octets long (± half).
func phrase(r *rand.Rand, target int) string {
	n := target/2 + r.IntN(target+1)
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		w := word(r, 2, 9)
		if b.Len() == 0 {
			w = capital(w)
		}
		b.WriteString(w)
	}
	return b.String()
}

// GenerateRows returns n Tate-like rows, the same for the same seed: url about 60 octets
// ("https://www.example.org/art/works/" + a slug + the accession number), title about 40,
// who about 20 (a name), when about 4 (a year, sometimes "c.1830–41" or "date not known"),
// request IDs shaped like Tate accession numbers in ascending order ("T000001"), names drawn
// under naan and shoulder (stored or bare form, e.g. "99999" and "/x9").
func GenerateRows(naan, shoulder string, n int, seed uint64) (*RowSet, error) {
	if n < 0 {
		return nil, fmt.Errorf("bench rows: %d rows", n)
	}
	nm, err := names(naan, shoulder, n, seed)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x6172_6b68_6500))
	set := &RowSet{NAAN: naan, Shoulder: ark.StoredShoulder(ark.BareShoulder(shoulder)),
		Source: fmt.Sprintf("generated (seed %d)", seed), Rows: make([]Row, n)}
	for i := range set.Rows {
		row := &set.Rows[i]
		row.Name = nm[i]
		row.RequestID = fmt.Sprintf("T%06d", i+1)
		row.What = phrase(r, 40)
		row.Who = capital(word(r, 5, 9)) + " " + capital(word(r, 8, 12))
		switch x := r.IntN(100); {
		case x < 90:
			row.When = fmt.Sprintf("%d", 1700+r.IntN(320))
		case x < 96:
			row.When = fmt.Sprintf("c.%d–%d", 1700+r.IntN(300), 10+r.IntN(89))
		default:
			row.When = "date not known"
		}
		slug := strings.ToLower(strings.ReplaceAll(phrase(r, 12), " ", "-"))
		row.URL = "https://www.example.org/art/works/" + slug + "-" + strings.ToLower(row.RequestID)
		row.CreatedAt = benchEpoch().Add(time.Duration(i) * time.Millisecond)
		row.Digest = digest(row)
	}
	return set, nil
}

// tateRecord is the part of a Tate artwork record (shared/data/tategallery-collection,
// artworks.jsonl.gz) the bench maps: request ID = acno, what = title, who = all_artists,
// when = dateText, URL = url (the Makefile's TATE_MAPPING).
type tateRecord struct {
	Acno       string  `json:"acno"`
	Title      *string `json:"title"`
	AllArtists *string `json:"all_artists"`
	DateText   *string `json:"dateText"`
	URL        *string `json:"url"`
}

// ReadTate reads up to limit rows (0: all) of a Tate artworks JSON Lines file, gzip-compressed
// when its name ends in ".gz", mapped as `make run` maps it, with names drawn under naan and
// shoulder from seed. Errors name the file and line.
func ReadTate(ctx context.Context, path string, limit int, naan, shoulder string, seed uint64) (*RowSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench rows: %w", err)
	}
	defer f.Close()
	var rd io.Reader = bufio.NewReaderSize(f, 1<<20)
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(rd)
		if err != nil {
			return nil, fmt.Errorf("bench rows: %s: %w", path, err)
		}
		defer gz.Close()
		rd = gz
	}
	set := &RowSet{NAAN: naan, Shoulder: ark.StoredShoulder(ark.BareShoulder(shoulder)), Source: path}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	line := 0
	for sc.Scan() {
		line++
		if limit > 0 && len(set.Rows) >= limit {
			break
		}
		if line%10000 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var rec tateRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("bench rows: %s line %d: %w", path, line, err)
		}
		if rec.Acno == "" {
			return nil, fmt.Errorf("bench rows: %s line %d: field acno (the request ID) is empty", path, line)
		}
		set.Rows = append(set.Rows, Row{RequestID: rec.Acno, What: str(rec.Title), Who: str(rec.AllArtists),
			When: str(rec.DateText), URL: str(rec.URL)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench rows: %s line %d: %w", path, line+1, err)
	}
	if len(set.Rows) == 0 {
		return nil, errors.New("bench rows: " + path + ": no records")
	}
	nm, err := names(naan, shoulder, len(set.Rows), seed)
	if err != nil {
		return nil, err
	}
	for i := range set.Rows {
		set.Rows[i].Name = nm[i]
		set.Rows[i].CreatedAt = benchEpoch().Add(time.Duration(i) * time.Millisecond)
		set.Rows[i].Digest = digest(&set.Rows[i])
	}
	return set, nil
}
