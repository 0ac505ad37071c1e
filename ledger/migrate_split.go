package ledger

import "strings"

// statement is one SQL statement of a migration, as splitStatements cuts it.
type statement struct {
	SQL  string // the statement, with the comments before it, without the closing semicolon
	Line int    // the line of the migration file the statement starts on (1-based)
}

// splitStatements cuts a migration into its statements at the semicolons that are outside
// string constants ('...', E'...' with backslash escapes), quoted identifiers ("..."),
// dollar-quoted bodies ($$...$$, $tag$...$tag$) and comments (-- to the end of the line,
// /* ... */ nested), the lexical rules of PostgreSQL's SQL. A piece holding only comments
// and white space is dropped.
//
// Migrate sends the statements one by one: PostgreSQL hands every statement of a
// multi-statement query the whole query text, and Citus forwards that text to the workers
// for some DDL (ALTER TABLE ... ADD FOREIGN KEY, CREATE TRIGGER on a distributed table),
// where the extended protocol refuses it ("cannot insert multiple commands into a prepared
// statement").
func splitStatements(sql string) []statement {
	var out []statement
	start, line, startLine := 0, 1, 1
	code := false // the current piece holds something other than comments and white space
	emit := func(end int) {
		if code {
			out = append(out, statement{SQL: strings.TrimSpace(sql[start:end]), Line: startLine})
		}
		code = false
	}
	// skip returns the offset just past the end of the construct that starts at i, counting
	// the newlines it crosses.
	skipTo := func(i, end int) int {
		line += strings.Count(sql[i:end], "\n")
		return end
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = len(sql) - i
			}
			i += end
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			depth, j := 1, i+2
			for j < len(sql) && depth > 0 {
				switch {
				case strings.HasPrefix(sql[j:], "/*"):
					depth, j = depth+1, j+2
				case strings.HasPrefix(sql[j:], "*/"):
					depth, j = depth-1, j+2
				default:
					j++
				}
			}
			i = skipTo(i, j)
		case c == ';':
			emit(i)
			i++
			start = i
		default:
			if !code {
				code, startLine = true, line
			}
			i = skipTo(i, i+tokenLen(sql, i))
		}
	}
	emit(len(sql))
	return out
}

// tokenLen returns the length of the token at sql[i]: a whole string constant, quoted
// identifier or dollar-quoted body (to the end of sql when unterminated), else one byte.
func tokenLen(sql string, i int) int {
	c := sql[i]
	switch {
	case c == '\'':
		escapes := i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i < 2 || !identChar(sql[i-2]))
		j := i + 1
		for j < len(sql) {
			switch {
			case escapes && sql[j] == '\\':
				j += 2
			case sql[j] == '\'' && j+1 < len(sql) && sql[j+1] == '\'':
				j += 2
			case sql[j] == '\'':
				return j + 1 - i
			default:
				j++
			}
		}
		return len(sql) - i
	case c == '"':
		j := i + 1
		for j < len(sql) {
			if sql[j] == '"' {
				if j+1 < len(sql) && sql[j+1] == '"' {
					j += 2
					continue
				}
				return j + 1 - i
			}
			j++
		}
		return len(sql) - i
	case c == '$' && (i == 0 || !identChar(sql[i-1])):
		// $tag$ where tag is empty or an identifier not starting with a digit ($1 is a parameter)
		j := i + 1
		for j < len(sql) && identChar(sql[j]) && !(j == i+1 && sql[j] >= '0' && sql[j] <= '9') {
			j++
		}
		if j >= len(sql) || sql[j] != '$' {
			return 1
		}
		tag := sql[i : j+1]
		end := strings.Index(sql[j+1:], tag)
		if end < 0 {
			return len(sql) - i
		}
		return j + 1 + end + len(tag) - i
	case identChar(c):
		// a whole word, so that a '$' or quote inside it is not taken for the start of one
		j := i + 1
		for j < len(sql) && (identChar(sql[j]) || sql[j] == '$') {
			j++
		}
		// E'...': the quote after E starts a string constant with escapes, handled by the
		// caller's next token (which looks back at the E)
		return j - i
	}
	return 1
}

// identChar reports whether c may continue an unquoted identifier (ASCII letters, digits,
// underscore, and every byte of a multibyte UTF-8 character).
func identChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
