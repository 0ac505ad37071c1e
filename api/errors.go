package api

import (
	"errors"
	"fmt"
)

// ConfigError is a Config that New refuses: Field names the setting, Rule what it must be.
type ConfigError struct {
	Field string
	Rule  string
}

// Error returns "api: FIELD: RULE".
func (e *ConfigError) Error() string { return fmt.Sprintf("api: %s: %s", e.Field, e.Rule) }

// IsConfigError reports whether err is a *ConfigError.
func IsConfigError(err error) bool {
	var c *ConfigError
	return errors.As(err, &c)
}

// LedgerError is a request the ledger could not answer (a lost connection, a database error the
// API does not classify), answered 503 and passed to Config.OnError. Op says what was being done.
type LedgerError struct {
	Op  string
	Err error
}

// Error returns "api: OP: ERR".
func (e *LedgerError) Error() string { return "api: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the ledger's error.
func (e *LedgerError) Unwrap() error { return e.Err }

// IsLedgerError reports whether err is a *LedgerError.
func IsLedgerError(err error) bool {
	var l *LedgerError
	return errors.As(err, &l)
}
