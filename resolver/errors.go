package resolver

import (
	"errors"
	"fmt"
)

// BadRequestError reports a request the resolver refuses before any lookup (answered 400): Rule
// names the rule broken, e.g. "control character" or "dot-segment".
type BadRequestError struct {
	Rule   string
	Detail string
}

// Error returns "bad request: RULE: DETAIL".
func (e *BadRequestError) Error() string {
	if e.Detail == "" {
		return "bad request: " + e.Rule
	}
	return fmt.Sprintf("bad request: %s: %s", e.Rule, e.Detail)
}

// IsBadRequest reports whether err is (or wraps) a *BadRequestError.
func IsBadRequest(err error) bool {
	var e *BadRequestError
	return errors.As(err, &e)
}

// ConfigError reports a Config the resolver cannot run with (Field names the field).
type ConfigError struct {
	Field, Reason string
}

// Error returns "resolver: FIELD: REASON".
func (e *ConfigError) Error() string { return fmt.Sprintf("resolver: %s: %s", e.Field, e.Reason) }
