package legacy

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
)

// result collects everything a reader yields.
type collected struct {
	records   []*Record
	naans     []*NAANRecord
	shoulders []*ShoulderRecord
	refused   []*Refused
	links     []*LinkCheckRecord
	errs      []*textin.RowError
	truncated *TruncatedError
	order     []string // "R", "N", "S", "X" (refused), "L" (link check), "E", "T" in yield order
}

func drain(t testing.TB, r Reader) collected {
	t.Helper()
	var c collected
	ctx := context.Background()
	for n := 0; ; n++ {
		if n > 10_000_000 {
			t.Fatal("reader does not end")
		}
		it, err := r.Next(ctx)
		if err == io.EOF {
			// EOF is sticky
			if _, err2 := r.Next(ctx); err2 != io.EOF {
				t.Fatalf("after EOF: %v", err2)
			}
			return c
		}
		var re *textin.RowError
		var te *TruncatedError
		switch {
		case errors.As(err, &re):
			c.errs = append(c.errs, re)
			c.order = append(c.order, "E")
			continue
		case errors.As(err, &te):
			if c.truncated != nil {
				t.Fatalf("second TruncatedError: %v", te)
			}
			c.truncated = te
			c.order = append(c.order, "T")
			continue
		case err != nil:
			t.Fatalf("fatal error: %v", err)
		}
		switch {
		case it.Record != nil:
			c.records = append(c.records, it.Record)
			c.order = append(c.order, "R")
		case it.NAAN != nil:
			c.naans = append(c.naans, it.NAAN)
			c.order = append(c.order, "N")
		case it.Shoulder != nil:
			c.shoulders = append(c.shoulders, it.Shoulder)
			c.order = append(c.order, "S")
		case it.Refused != nil:
			c.refused = append(c.refused, it.Refused)
			c.order = append(c.order, "X")
		case it.LinkCheck != nil:
			c.links = append(c.links, it.LinkCheck)
			c.order = append(c.order, "L")
		default:
			t.Fatal("empty item without error")
		}
	}
}

// readFile opens a real file (format "" = detect) and drains it.
func readFile(t testing.TB, path string, f Format) collected {
	t.Helper()
	r, err := Open(context.Background(), path, f)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	defer r.Close()
	return drain(t, r)
}

// readString reads an inline fixture.
func readString(t testing.TB, s string, f Format) collected {
	t.Helper()
	r, err := NewReader(strings.NewReader(s), "inline", f)
	if err != nil {
		t.Fatalf("NewReader(%s): %v", f, err)
	}
	return drain(t, r)
}

func recByID(c collected, id string) *Record {
	for _, r := range c.records {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
