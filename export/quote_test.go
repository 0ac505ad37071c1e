package export

import "testing"

// TestNginxQuote: quotes and backslashes escaped, "$" in a value through ${arkhe_dollar}, a
// control character refused.
func TestNginxQuote(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in    string
		value bool
		want  string
	}{
		{"12345/x9abc", false, `"12345/x9abc"`},
		{`https://e.org/?q="a"\b`, true, `"https://e.org/?q=\"a\"\\b"`},
		{"https://e.org/?a=$id", true, `"https://e.org/?a=${arkhe_dollar}id"`},
		{"12345/x9$", false, `"12345/x9$"`},
	} {
		if got, err := nginxQuote(c.in, c.value); err != nil || got != c.want {
			t.Errorf("nginxQuote(%q, %v) = %s %v, want %s", c.in, c.value, got, err, c.want)
		}
	}
	if _, err := nginxQuote("https://e.org/\nx", true); err == nil {
		t.Error("a line break was quoted")
	}
}

// TestExpandTemplate: the placeholders of a forward's redirect, and the ARK appended when it has
// none.
func TestExpandTemplate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ tpl, want string }{
		{"https://r.org/", "https://r.org/ark:P"},
		{"https://doi.org/10.5060/${value}", "https://doi.org/10.5060/V"},
		{"https://r.org/ark:/${content}", "https://r.org/ark:/C"},
		{"https://r.org/?id=${pid}&x=$y", "https://r.org/?id=PID&x=Dy"},
	} {
		if got := expandTemplate(c.tpl, "PID", "C", "V", "D", "ark:P"); got != c.want {
			t.Errorf("expandTemplate(%q) = %q, want %q", c.tpl, got, c.want)
		}
	}
}

// TestAppendDBPrint: db_dump's print escaping: printable ASCII as is, a backslash doubled, other
// octets as \hh.
func TestAppendDBPrint(t *testing.T) {
	t.Parallel()
	got := string(appendDBPrint(nil, "a\\b\nMusée ~"))
	if want := `a\\b\0aMus\c3\a9e ~`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestRegexQuote: every character that is not a letter or digit is escaped.
func TestRegexQuote(t *testing.T) {
	t.Parallel()
	if got := regexQuote("81986/s6.caida+"); got != `81986\/s6\.caida\+` {
		t.Errorf("got %s", got)
	}
}
