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

// CacheOffError reports a ledger whose changes the resolver cannot learn of (no notify
// triggers: a Citus ledger): its cache stays off, and every request reads the ledger.
type CacheOffError struct {
	Reason string
}

// Error returns "resolver: cache off: REASON".
func (e *CacheOffError) Error() string { return "resolver: cache off: " + e.Reason }

// IsCacheOff reports whether err is (or wraps) a *CacheOffError.
func IsCacheOff(err error) bool {
	var e *CacheOffError
	return errors.As(err, &e)
}
