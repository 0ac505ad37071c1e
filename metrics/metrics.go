// Package metrics writes figures in the Prometheus text exposition format (version 0.0.4), for
// node_exporter's textfile collector: a file of `# HELP`, `# TYPE` and `name{label="value"} value`
// lines that node_exporter reads from its --collector.textfile.directory. Write replaces the file
// atomically (a temporary file in the same directory, synced, then renamed), so the collector
// never reads half a file. The package knows no caller's figures.
package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Type is a metric family's type.
type Type string

// The types arkhe writes.
const (
	// Gauge: a value that may go up and down (a run's figures are gauges: each run replaces them).
	Gauge Type = "gauge"
	// Counter: a value that only goes up.
	Counter Type = "counter"
	// HistogramType: a Prometheus histogram, whose samples are the cumulative buckets
	// (Suffix "_bucket", label le), the sum of the observed values (Suffix "_sum") and their
	// count (Suffix "_count"); Histogram.Family writes one.
	HistogramType Type = "histogram"
)

// Label is one label of a sample: Name="Value".
type Label struct {
	Name, Value string
}

// Sample is one line of a family: its labels (in the order given) and value. Suffix is appended
// to the family's name on the line: "" for a gauge or counter; "_bucket", "_sum" or "_count" in
// a histogram (any other is a *NameError from Encode).
type Sample struct {
	Suffix string
	Labels []Label
	Value  float64
}

// Family is one metric: its name (e.g. "arkhe_linkcheck_checks"), help text, type and samples.
// A family without samples is left out of the file.
type Family struct {
	Name    string
	Help    string
	Type    Type
	Samples []Sample
}

// G returns a gauge family with one unlabelled sample.
func G(name, help string, v float64) Family {
	return Family{Name: name, Help: help, Type: Gauge, Samples: []Sample{{Value: v}}}
}

var (
	nameRE  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Encode writes fams to w in the text exposition format.
func Encode(w io.Writer, fams []Family) error {
	bw := bufio.NewWriter(w)
	seen := map[string]bool{}
	for _, f := range fams {
		if !nameRE.MatchString(f.Name) {
			return &NameError{Name: f.Name, Rule: "must match [a-zA-Z_:][a-zA-Z0-9_:]*"}
		}
		if seen[f.Name] {
			return &NameError{Name: f.Name, Rule: "appears twice"}
		}
		seen[f.Name] = true
		if len(f.Samples) == 0 {
			continue
		}
		typ := f.Type
		if typ == "" {
			typ = Gauge
		}
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.Name, escapeHelp(f.Help), f.Name, typ)
		for _, s := range f.Samples {
			if !suffixAllowed(typ, s.Suffix) {
				return &NameError{Name: f.Name + s.Suffix, Rule: fmt.Sprintf("a %s's sample takes no suffix %q", typ, s.Suffix)}
			}
			bw.WriteString(f.Name)
			bw.WriteString(s.Suffix)
			if len(s.Labels) > 0 {
				bw.WriteByte('{')
				for i, l := range s.Labels {
					if !labelRE.MatchString(l.Name) || strings.HasPrefix(l.Name, "__") {
						return &NameError{Name: l.Name, Rule: "label names match [a-zA-Z_][a-zA-Z0-9_]* and do not start with __"}
					}
					if i > 0 {
						bw.WriteByte(',')
					}
					fmt.Fprintf(bw, `%s="%s"`, l.Name, escapeLabel(l.Value))
				}
				bw.WriteByte('}')
			}
			bw.WriteByte(' ')
			bw.WriteString(formatValue(s.Value))
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

// suffixAllowed reports whether a sample of a family of type typ may carry suffix.
func suffixAllowed(typ Type, suffix string) bool {
	if typ == HistogramType {
		return suffix == "_bucket" || suffix == "_sum" || suffix == "_count"
	}
	return suffix == ""
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Write replaces the file at path with fams, atomically: the families go to a temporary file
// in path's directory (named .PATH.tmp-*, which the textfile collector ignores: it reads only
// *.prom), which is synced, made world-readable (0644) and renamed over path. On error the
// temporary file is removed and path is left as it was.
func Write(path string, fams []Family) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := Encode(f, fams); err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	return nil
}
