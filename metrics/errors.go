package metrics

import (
	"errors"
	"fmt"
)

// NameError reports a metric or label name the format does not allow (metric names
// [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*, "__" prefix reserved, family
// names unique, a sample's suffix only _bucket, _sum or _count and only in a histogram).
type NameError struct {
	Name, Rule string
}

// Error names the name and the rule.
func (e *NameError) Error() string { return fmt.Sprintf("metric name %q: %s", e.Name, e.Rule) }

// IsNameError reports whether err is (or wraps) a *NameError.
func IsNameError(err error) bool {
	var e *NameError
	return errors.As(err, &e)
}

// BucketError reports histogram bounds NewHistogram refuses (Rule names the rule broken).
type BucketError struct {
	Rule string
}

// Error returns "histogram buckets: RULE".
func (e *BucketError) Error() string { return "histogram buckets: " + e.Rule }

// IsBucketError reports whether err is (or wraps) a *BucketError.
func IsBucketError(err error) bool {
	var e *BucketError
	return errors.As(err, &e)
}
