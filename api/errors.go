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

// TokenError is a bearer token refused: it does not verify, or what it names is not a client
// that may present a token. A TokenAuthenticator returns it for a refusal with a reason; it is
// answered 401 with the reason.
type TokenError struct {
	Reason string
	Err    error // what the verification said, if anything
}

// Error returns "api: token refused: REASON" and, when Err is set, ": ERR".
func (e *TokenError) Error() string {
	if e.Err != nil {
		return "api: token refused: " + e.Reason + ": " + e.Err.Error()
	}
	return "api: token refused: " + e.Reason
}

// Unwrap returns the verification's error.
func (e *TokenError) Unwrap() error { return e.Err }

// IsTokenError reports whether err is a *TokenError.
func IsTokenError(err error) bool {
	var t *TokenError
	return errors.As(err, &t)
}

// IssuerError is a bearer token that could not be checked: the keys of the issuer that signed
// it could not be fetched (the issuer unreachable, its key set not served or not decoded). The
// token may be good; it is answered 503, not 401.
type IssuerError struct {
	Issuer string
	Err    error
}

// Error returns "api: OIDC issuer ISSUER: its keys could not be fetched: ERR".
func (e *IssuerError) Error() string {
	return "api: OIDC issuer " + e.Issuer + ": its keys could not be fetched: " + e.Err.Error()
}

// Unwrap returns the fetch's error.
func (e *IssuerError) Unwrap() error { return e.Err }

// IsIssuerError reports whether err is an *IssuerError.
func IsIssuerError(err error) bool {
	var i *IssuerError
	return errors.As(err, &i)
}
