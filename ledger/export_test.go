package ledger

// SetKeyParams makes l hash new API keys with p and rehash keys stored with other parameters
// to p, in place of DefaultKeyParams. p.KeyLength must be DefaultKeyParams().KeyLength (a
// stored hash's length is not in its PHC string).
func SetKeyParams(l *Ledger, p KeyParams) { l.keyParams = p }

// CheapKeyParams are Argon2id parameters at the floor RFC 9106 allows (one pass over
// 8 KiB per lane, one lane), for the tests of the key lifecycle rather than of the
// parameters: a hash costs microseconds instead of DefaultKeyParams' 64 MiB and 0.2 s.
func CheapKeyParams() KeyParams {
	return KeyParams{Time: 1, MemoryKiB: 8, Threads: 1, KeyLength: DefaultKeyParams().KeyLength, SaltBytes: DefaultKeyParams().SaltBytes}
}

// KeyParams, DefaultKeyParams and HashKeySecret expose the Argon2id parameters and the hash
// of a key's secret to the tests of the key lifecycle.
type KeyParams = argonParams

var (
	DefaultKeyParams = defaultArgonParams
	HashKeySecret    = hashKeySecret
)
