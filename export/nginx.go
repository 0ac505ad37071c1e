package export

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// nginxSink writes the nginx map (one `"NAAN/name" "value";` line per ARK, included into a map
// block) and, at commit, the http-context and server-context configuration.
type nginxSink struct {
	data       *atomicFile
	n          int64
	maxKey     int
	httpPath   string
	serverPath string
}

func newNginx(path string) (*nginxSink, error) {
	f, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	f.WriteString("# arkhe export nginx: ARK (NAAN/name) -> target, @410 (tombstone), @reserved, @description (empty target).\n")
	f.WriteString("# Included into a map block by " + filepath.Base(sibling(path, "-http.conf")) + "; generated, do not edit.\n")
	return &nginxSink{data: f, httpPath: sibling(path, "-http.conf"), serverPath: sibling(path, "-server.conf")}, nil
}

func (s *nginxSink) ark(r *ledger.ARKRow) error {
	k := key(r)
	kq, err := nginxQuote(k, false)
	if err != nil {
		return &UnwritableError{Format: Nginx, ARK: r.ARK, Field: "ark", Reason: err.Error()}
	}
	v, err := nginxQuote(resolution(r), true)
	if err != nil {
		return &UnwritableError{Format: Nginx, ARK: r.ARK, Field: "target", Reason: err.Error()}
	}
	s.data.WriteString(kq)
	s.data.WriteString(" ")
	s.data.WriteString(v)
	s.data.WriteString(";\n")
	s.n++
	s.maxKey = max(s.maxKey, len(k))
	return nil
}

// nginxQuote quotes s as an nginx string: `"` and `\` escaped, and, in a value (where nginx
// reads `$name` as a variable), every `$` written as ${arkhe_dollar}. A control character cannot
// be written.
func nginxQuote(s string, value bool) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return "", fmt.Errorf("holds the control character 0x%02x at octet %d", c, i+1)
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '$' && value:
			b.WriteString("${arkhe_dollar}")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// regexQuote escapes s for a PCRE pattern: every character that is not a letter or a digit is
// preceded by a backslash.
func regexQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80) {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

func (s *nginxSink) commit(forwards []Forward, w Watermark) ([]string, error) {
	s.data.WriteString(fmt.Sprintf("# %d ARKs; watermark %s\n", s.n, w))
	abs, err := filepath.Abs(s.data.path)
	if err != nil {
		s.abort()
		return nil, fmt.Errorf("export: %s: %w", s.data.path, err)
	}
	httpConf, err := nginxHTTPConf(abs, s.n, s.maxKey, forwards)
	if err != nil {
		s.abort()
		return nil, err
	}
	hf, err := createAtomic(s.httpPath)
	if err != nil {
		s.abort()
		return nil, err
	}
	hf.WriteString(httpConf)
	sf, err := createAtomic(s.serverPath)
	if err != nil {
		hf.abort()
		s.abort()
		return nil, err
	}
	sf.WriteString(nginxServerConf())
	for i, f := range []*atomicFile{s.data, hf, sf} {
		if err := f.commit(); err != nil {
			for _, g := range []*atomicFile{s.data, hf, sf}[i+1:] {
				g.abort()
			}
			return nil, err
		}
	}
	return []string{s.data.path, s.httpPath, s.serverPath}, nil
}

func (s *nginxSink) abort() { s.data.abort() }

// nginxHTTPConf is the http-context half: the hash sizes the map needs, the maps that take the
// ARK apart, the map of ARKs (the data file, looked up once per suffix level: volatile), and the
// forwarding rules.
func nginxHTTPConf(dataPath string, n int64, maxKey int, forwards []Forward) (string, error) {
	var b strings.Builder
	b.WriteString("# arkhe export nginx: include in the http block (before any other map). Generated, do not edit.\n")
	// A bucket holds at least one key of the longest length, and never fewer than 256 octets:
	// an export of short ARKs may be followed by an --since export or a hand-edited map with
	// keys up to the ledger's widest (ark.MaxKey), which nginx refuses to load in a smaller
	// bucket. The search for a hash size stops at map_hash_max_size, so it is given room for
	// every key.
	bucket := 256
	for bucket < maxKey+32 {
		bucket *= 2
	}
	fmt.Fprintf(&b, "map_hash_bucket_size %d;\nmap_hash_max_size %d;\n\n", bucket, max(4096, 2*n))
	b.WriteString(`# "$" as text, for the targets that hold one (a map value reads $name as a variable)
geo $arkhe_dollar { default "$"; }

# the ARK as requested, after the label (ark:/ or ark:, any case), without a query and trailing / or .
map $request_uri $arkhe_path {
    "~*^/ark:/?(?<arkhe_p>[^?]*?)[/.]*(\?.*)?$" $arkhe_p;
    default "";
}
# the name after the NAAN, for a forward's ${value}
map $arkhe_path $arkhe_name {
    "~^[^/]*/(?<arkhe_n>.*)$" $arkhe_n;
    default "";
}
# an inflection (?, ??, ?info) or any query asks for a description
map $request_uri $arkhe_inflection {
    "~\?" 1;
    default "";
}

# ARK -> target, looked up again for every $arkhe_key the server block tries (volatile)
map $arkhe_key $arkhe_target {
    volatile;
    default "";
`)
	q, err := nginxQuote(dataPath, false)
	if err != nil {
		return "", fmt.Errorf("export nginx: the map's path %s: %w", dataPath, err)
	}
	fmt.Fprintf(&b, "    include %s;\n}\n\n", q)
	for _, kind := range []bool{true, false} {
		if kind {
			b.WriteString("# shoulders forwarded elsewhere (shoulder.redirect), the longest first\nmap $arkhe_path $arkhe_shoulder_target {\n")
		} else {
			b.WriteString("# NAANs that are not authoritative (naan.redirect)\nmap $arkhe_path $arkhe_naan_target {\n")
		}
		for _, f := range forwards {
			if f.Shoulder != kind {
				continue
			}
			k, err := nginxQuote("~^"+regexQuote(f.Prefix), false)
			if err != nil {
				return "", &UnwritableError{Format: Nginx, ARK: "ark:" + f.Prefix, Field: "prefix", Reason: err.Error()}
			}
			v, err := nginxQuote(f.Redirect, false)
			if err != nil {
				return "", &UnwritableError{Format: Nginx, ARK: "ark:" + f.Prefix, Field: "redirect", Reason: err.Error()}
			}
			v = expandTemplate(v, "ark:/${arkhe_path}", "${arkhe_path}", "${arkhe_name}", "${arkhe_dollar}", "")
			if !hasPlaceholder(f.Redirect) {
				v = strings.TrimSuffix(v, `"`) + `ark:${arkhe_path}"`
			}
			fmt.Fprintf(&b, "    %s %s;\n", k, v)
		}
		b.WriteString("    default \"\";\n}\n")
	}
	return b.String(), nil
}

// hasPlaceholder reports whether a redirect holds ${pid}, ${content} or ${value}.
func hasPlaceholder(s string) bool {
	return strings.Contains(s, "${pid}") || strings.Contains(s, "${content}") || strings.Contains(s, "${value}")
}

// nginxServerConf is the server-context half: the location that looks the ARK up, stripping one
// trailing component per level, and answers.
func nginxServerConf() string {
	var b strings.Builder
	b.WriteString(`# arkhe export nginx: include in a server block. Generated, do not edit.
# An ARK with an empty target, and an inflection, go to @arkhe_description: point it at
# arkhe serve (proxy_pass http://127.0.0.1:8080;) to answer with the ERC description.
error_page 418 = @arkhe_description;
location @arkhe_description {
    default_type text/plain;
    return 404 "no description here: ask the ARK's resolver\n";
}
location ~* "^/ark:" {
    if ($arkhe_inflection) { return 418; }
    set $arkhe_key $arkhe_path;
    set $arkhe_suffix "";
    set $arkhe_t $arkhe_target;
`)
	b.WriteString("    # not found: strip the last component (at a / or .) and look again, the longest prefix first\n")
	for range SuffixLevels {
		b.WriteString(`    set $arkhe_c "$arkhe_t|$arkhe_key";
    if ($arkhe_c ~ "^\|(.+)([/.][^/.]*)$") { set $arkhe_key $1; set $arkhe_suffix $2$arkhe_suffix; set $arkhe_t $arkhe_target; }
`)
	}
	b.WriteString(`    if ($arkhe_t = "@410") { return 410; }
    if ($arkhe_t = "@description") { return 418; }
    if ($arkhe_t ~ "^https?:") { return 302 $arkhe_t$arkhe_suffix; }
    # reserved, or a target that is not http(s): not resolvable
    if ($arkhe_t != "") { return 404; }
    if ($arkhe_shoulder_target) { return 302 $arkhe_shoulder_target; }
    if ($arkhe_naan_target) { return 302 $arkhe_naan_target; }
    return 404;
}
`)
	return b.String()
}
