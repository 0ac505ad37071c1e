package legacy

import (
	"fmt"
	"github.com/arkhe-ledger/arkhe/fixtures"

	"strings"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/linkcheck"
)

// Counts taken from the files independently (Python json/csv).

func TestRealEZIDLinkChecker(t *testing.T) {
	path := fixtures.SharedData(t, "ezid", "db.linkchecker.jsonl")
	c := readFile(t, path, "")
	if len(c.links) != 2129 || len(c.errs) != 0 || len(c.records) != 0 || len(c.refused) != 0 {
		t.Fatalf("%d link records, %d errors, %d records, %d refused; want 2129, 0, 0, 0", len(c.links), len(c.errs), len(c.records), len(c.refused))
	}
	n := map[string]int{}
	for _, l := range c.links {
		n[l.Kind]++
		if !l.Checked {
			n["never"]++
			continue
		}
		if l.TargetIsDefault {
			n["default target"]++
		}
		s := l.State
		n[string(s.Last.Outcome)]++
		n["class "+string(s.Last.Error)]++
		if s.Broken {
			n["broken"]++
		}
		if s.Last.HashAlg == "md5" {
			n["md5"]++
		}
		if s.Target != l.Target || s.Last.Target != l.Target || s.GoodHost != "" || s.Last.FinalURL != "" {
			t.Errorf("%s: state %+v", l.ID, s)
		}
	}
	want := map[string]int{"ark": 2098, "doi": 31, "never": 530, "good": 1586, "failed": 13, "broken": 13, "md5": 1586,
		"class ": 1589, "class dns": 3, "class refused": 3, "class tls": 1, "class timeout": 3, "class other": 0, "default target": 19}
	for k, v := range want {
		if n[k] != v {
			t.Errorf("%s: %d, want %d (all: %v)", k, n[k], v, n)
		}
	}
	first := c.links[0]
	s := first.State
	if first.ID != "ark:/13030/c8251g4t" || first.Source.Line != 1 || s.Last.Time.Unix() != 1635775123 || s.Last.Status != 200 ||
		s.Last.Size != 40027 || s.Last.MIME != "text/html; charset=utf-8" || s.Last.BodyHash != "29f541031daeb56d98029bce2900a9be" ||
		!s.LastSuccess.Equal(s.Last.Time) || s.ConsecutiveFailures != 0 || s.GoodSize != -1 {
		t.Errorf("first record: %+v", first)
	}
	for _, l := range c.links {
		if l.ID == "ark:/88435/d217qs60v" { // timed out 521 times
			s := l.State
			if !s.Broken || s.ConsecutiveFailures != 521 || s.Last.Error != linkcheck.ErrTimeout || s.Last.Status != 0 ||
				!s.FirstFailure.Equal(s.Last.Time) || s.Last.Size != -1 || !s.LastSuccess.IsZero() || s.Last.Time.Unix() != 1636376904 {
				t.Errorf("d217qs60v: %+v", s)
			}
		}
	}
}

func TestRealEZIDLinkCheckTSV(t *testing.T) {
	path := fixtures.SharedData(t, "ezid", "linkchecker_test_id_url_v0.tsv")
	c := readFile(t, path, "")
	if len(c.links) != 65 || len(c.errs) != 0 || c.truncated != nil {
		t.Fatalf("%d link records, %d errors (%v), truncated %v; want 65, 0", len(c.links), len(c.errs), c.errs, c.truncated)
	}
	n := map[string]int{}
	for _, l := range c.links {
		n[l.Kind]++
		if !l.Checked {
			n["never"]++
			continue
		}
		n[string(l.State.Last.Outcome)]++
		if l.State.Broken {
			n["broken"]++
		}
	}
	for k, v := range map[string]int{"ark": 55, "doi": 10, "never": 4, "good": 10, "failed": 51, "broken": 0} {
		if n[k] != v {
			t.Errorf("%s: %d, want %d (all %v)", k, n[k], v, n)
		}
	}
	byID := map[string]*LinkCheckRecord{}
	for _, l := range c.links {
		byID[l.ID] = l
	}
	// 4/12/23 15:43 in California (PDT, UTC-7)
	l := byID["ark:/38305/f12j68s8"]
	if l == nil || !l.State.Last.Time.Equal(time.Date(2023, 4, 12, 22, 43, 0, 0, time.UTC)) || l.State.Last.Status != 400 ||
		l.State.ConsecutiveFailures != 111 || l.Failures != 111 || l.Source.Line != 2 {
		t.Errorf("f12j68s8: %+v", l)
	}
	// MySQL's own form, same zone; no count given for a 200: none failed
	if l := byID["ark:/88435/xd07gw55g"]; l == nil || !l.State.Last.Time.Equal(time.Date(2023, 4, 13, 2, 31, 47, 0, time.UTC)) ||
		l.State.Last.Status != 301 || l.State.Last.Outcome != linkcheck.OutcomeFailed {
		t.Errorf("xd07gw55g: %+v", l)
	}
	// -1 without a count: no HTTP answer, the one failure the row shows
	if l := byID["ark:/13030/c74t6f285"]; l == nil || l.State.Last.Status != 0 || l.State.Last.Error != linkcheck.ErrOther ||
		l.State.ConsecutiveFailures != 1 || l.Failures != -1 {
		t.Errorf("c74t6f285: %+v", l)
	}
	// NULL at 12/31/69 16:00: Unix 0, never checked
	if l := byID["ark:/87278/s6j402cm"]; l == nil || l.Checked {
		t.Errorf("s6j402cm: %+v", l)
	}
	// a short row (no numFailures cell) is read
	if l := byID["ark:/88435/qr46r369k"]; l == nil || l.State.Last.Status != 301 || l.Source.Line != 66 {
		t.Errorf("qr46r369k: %+v", l)
	}
}

func TestEZIDLinkErrorClass(t *testing.T) {
	for text, want := range map[string]linkcheck.ErrorClass{
		"": linkcheck.ErrNone,
		"URLError: <urlopen error [Errno -2] Name or service not known>":                                    linkcheck.ErrDNS,
		"URLError: <urlopen error [Errno 111] Connection refused>":                                          linkcheck.ErrRefused,
		"URLError: <urlopen error [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed (_ssl.c:727)>": linkcheck.ErrTLS,
		"URLError: <urlopen error timed out>":                                                               linkcheck.ErrTimeout,
		"SSLError: ('The read operation timed out',)":                                                       linkcheck.ErrTimeout,
		"ConnectionResetError: [Errno 104] Connection reset by peer":                                        linkcheck.ErrReset,
		"URLError: <urlopen error [Errno 113] No route to host>":                                            linkcheck.ErrUnreachable,
		"HTTPError: HTTP Error 418: I'm a teapot":                                                           linkcheck.ErrOther,
	} {
		if got := EZIDLinkErrorClass(text); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
}

func TestEZIDLinkCheckBadRecords(t *testing.T) {
	rec := func(fields string) string {
		return `{"model":"ezidapp.linkchecker","pk":1,"fields":{"identifier":"ark:/99999/fk4x","target":"https://e.example/x",` + fields + "}}\n"
	}
	in := rec(`"lastCheckTime":1635775123,"numFailures":0,"isBad":false,"returnCode":200,"error":"","mimeType":"","size":10,"hash":"abc"`) +
		rec(`"lastCheckTime":1635775123,"numFailures":0,"isBad":true,"returnCode":200,"error":"","mimeType":"","size":10,"hash":""`) +
		rec(`"lastCheckTime":1635775123,"numFailures":3,"isBad":false,"returnCode":42,"error":"","mimeType":"","size":null,"hash":""`) +
		rec(`"lastCheckTime":0,"numFailures":0,"isBad":false,"returnCode":404,"error":"","mimeType":"","size":null,"hash":""`) +
		rec(`"lastCheckTime":1635775123,"numFailures":2,"isBad":false,"returnCode":429,"error":"","mimeType":"","size":null,"hash":""`)
	c := readString(t, in, "")
	if len(c.errs) != 4 || len(c.links) != 1 {
		t.Fatalf("%d errors, %d records; want 4, 1", len(c.errs), len(c.links))
	}
	for i, field := range []string{"hash", "isBad", "returnCode", "lastCheckTime"} {
		e := c.errs[i]
		if e.Field != field || e.Loc.Line != i+1 || e.ID != "ark:/99999/fk4x" || !strings.HasPrefix(e.Error(), fmt.Sprintf("inline:%d (record %d): ", i+1, i+1)) {
			t.Errorf("error %d: %v (field %s), want field %s", i+1, e, e.Field, field)
		}
	}
	if s := c.links[0].State; s.Last.Outcome != linkcheck.OutcomeInconclusive || s.ConsecutiveFailures != 2 || s.Broken {
		t.Errorf("429: %+v", s)
	}
	if f, err := DetectFormat("x.tsv", []byte("identifier\turl\treturnCode\tlastCheckTime\n")); err != nil || f != EZIDLinkCheckTSV {
		t.Errorf("TSV detection: %v %v", f, err)
	}
	tsv := "identifier\turl\treturnCode\tlastCheckTime\n" +
		"ark:/99999/fk4a\thttps://e.example/a\t404\t13/40/23 1:00\n" +
		"ark:/99999/fk4b\thttps://e.example/b\t404\t1/2/23 1:00\textra\n"
	c = readString(t, tsv, "")
	if len(c.errs) != 2 || c.errs[0].Field != "lastCheckTime" || c.errs[1].Field != "row" || c.errs[0].Loc.Line != 2 {
		t.Errorf("bad TSV rows: %v", c.errs)
	}
}
