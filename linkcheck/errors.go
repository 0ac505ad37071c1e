package linkcheck

import (
	"errors"
	"fmt"
	"net/netip"
)

// ConfigError reports an invalid Config field.
type ConfigError struct {
	// Field is the Config field name.
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error implements error: it names the field and the reason.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("link check config: %s: %s", e.Field, e.Reason)
}

// BlockedError reports a connection refused because its address lies in a
// range a link checker must not reach (see RefusedRange). It is returned
// when dialling, so it covers every DNS answer and every redirect hop.
type BlockedError struct {
	// Host is the host name or address being dialled.
	Host string
	// Addr is the refused address.
	Addr netip.Addr
	// Range names the refused range, e.g. "loopback".
	Range string
}

// Error implements error: it names the address, the host and the range.
func (e *BlockedError) Error() string {
	return fmt.Sprintf("address %s of %q is %s, which a link check may not reach (allow it with AllowPrivate or AllowPrefixes)",
		e.Addr, e.Host, e.Range)
}

// URLError reports a target or redirect URL that cannot be checked.
type URLError struct {
	// URL is the offending URL, verbatim.
	URL string
	// Class is ErrBadURL or ErrBadScheme.
	Class ErrorClass
	// Reason says what is wrong.
	Reason string
}

// Error implements error: it names the URL and the reason.
func (e *URLError) Error() string {
	return fmt.Sprintf("cannot check %q: %s", e.URL, e.Reason)
}

// Blocked reports whether err is, or wraps, a *BlockedError: the SSRF guard refused the
// address, a policy of the run rather than a fault of the target.
func Blocked(err error) bool {
	var be *BlockedError
	return errors.As(err, &be)
}
