package export

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// apacheSink writes the RewriteMap text file (one `NAAN/name value` line per ARK) and, at
// commit, the RewriteRules that use it.
type apacheSink struct {
	data     *atomicFile
	n        int64
	rulePath string
}

func newApache(path string) (*apacheSink, error) {
	f, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	f.WriteString("# arkhe export apache: ARK (NAAN/name) -> target, @410 (tombstone), @reserved, @description (empty target).\n")
	f.WriteString("# RewriteMap txt: file of " + filepath.Base(sibling(path, "-rewrite.conf")) + "; generated, do not edit.\n")
	return &apacheSink{data: f, rulePath: sibling(path, "-rewrite.conf")}, nil
}

// apacheToken checks that s can stand as one field of a RewriteMap text line: no space, no
// control character, not starting with #.
func apacheToken(s string) error {
	if s == "" || s[0] == '#' {
		return fmt.Errorf("%q is empty or starts with #", s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("holds the space or control character 0x%02x at octet %d", c, i+1)
		}
	}
	return nil
}

func (s *apacheSink) ark(r *ledger.ARKRow) error {
	k, v := key(r), resolution(r)
	if err := apacheToken(k); err != nil {
		return &UnwritableError{Format: Apache, ARK: r.ARK, Field: "ark", Reason: err.Error()}
	}
	if err := apacheToken(v); err != nil {
		return &UnwritableError{Format: Apache, ARK: r.ARK, Field: "target", Reason: err.Error()}
	}
	s.data.WriteString(k)
	s.data.WriteString(" ")
	s.data.WriteString(v)
	s.data.WriteString("\n")
	s.n++
	return nil
}

// apacheQuote checks s for a quoted directive argument: no `"`, no control character.
func apacheQuote(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '"' {
			return fmt.Errorf("holds 0x%02x at octet %d", c, i+1)
		}
	}
	return nil
}

func (s *apacheSink) commit(forwards []Forward, w Watermark) ([]string, error) {
	s.data.WriteString(fmt.Sprintf("# %d ARKs; watermark %s\n", s.n, w))
	abs, err := filepath.Abs(s.data.path)
	if err != nil {
		s.abort()
		return nil, fmt.Errorf("export: %s: %w", s.data.path, err)
	}
	if err := apacheQuote(abs); err != nil {
		s.abort()
		return nil, fmt.Errorf("export apache: the map's path %s: %w", abs, err)
	}
	var b strings.Builder
	b.WriteString("# arkhe export apache: include in a virtual host (RewriteMap is not allowed in .htaccess). Generated, do not edit.\n")
	b.WriteString("# For a large ledger, convert the map to DBM (httxt2dbm -i MAP -o MAP.dbm) and use dbm: instead of txt:.\n")
	fmt.Fprintf(&b, "RewriteEngine On\nRewriteMap arkhe \"txt:%s\"\n\n", abs)
	b.WriteString("# an inflection (?, ??, ?info) or any query asks for a description, which a map does not hold\n")
	b.WriteString("RewriteCond \"%{THE_REQUEST}\" \"^\\S+\\s+/ark:[^\\s?]*\\?\" [NC]\nRewriteRule \"^/ark:\" - [R=404,L,NC]\n\n")
	b.WriteString("# the ARK, then with one trailing component (at a / or .) stripped, and so on: the longest prefix first\n")
	for level := 0; level <= SuffixLevels; level++ {
		pat := fmt.Sprintf(`^/ark:/?(.+?)((?:[/.][^/.]+){%d})[/.]*$`, level)
		fmt.Fprintf(&b, "RewriteCond \"${arkhe:$1|-}\" \"^(https?:.*)$\"\nRewriteRule \"%s\" \"%%1$2\" [R=302,L,NE,NC]\n", pat)
		fmt.Fprintf(&b, "RewriteCond \"${arkhe:$1|-}\" \"^@410$\"\nRewriteRule \"%s\" - [G,L,NC]\n", pat)
		fmt.Fprintf(&b, "RewriteCond \"${arkhe:$1|-}\" \"^@\"\nRewriteRule \"%s\" - [R=404,L,NC]\n", pat)
	}
	b.WriteString("\n# forwarding rules: shoulders (shoulder.redirect), the longest first, then NAANs that are not authoritative\n")
	for _, f := range forwards {
		if err := apacheQuote(f.Redirect); err != nil {
			s.abort()
			return nil, &UnwritableError{Format: Apache, ARK: "ark:" + f.Prefix, Field: "redirect", Reason: err.Error()}
		}
		naan, rest, _ := strings.Cut(f.Prefix, "/")
		pat := fmt.Sprintf(`^/ark:/?((%s)/(%s.*?))[/.]*$`, regexQuote(naan), regexQuote(rest))
		to := expandTemplate(f.Redirect, "ark:/$1", "$1", "$3", `\$`, "ark:$1")
		fmt.Fprintf(&b, "RewriteRule \"%s\" \"%s\" [R=302,L,NE,NC]\n", pat, to)
	}
	b.WriteString("RewriteRule \"^/ark:\" - [R=404,L,NC]\n")
	rf, err := createAtomic(s.rulePath)
	if err != nil {
		s.abort()
		return nil, err
	}
	rf.WriteString(b.String())
	if err := s.data.commit(); err != nil {
		rf.abort()
		return nil, err
	}
	if err := rf.commit(); err != nil {
		return nil, err
	}
	return []string{s.data.path, s.rulePath}, nil
}

func (s *apacheSink) abort() { s.data.abort() }
