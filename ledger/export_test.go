package ledger

import "context"

// MintSessionSetting returns setting name as worker's session of s has it once its session
// settings are made (OpenWorker, then connect, as before its first batch).
func MintSessionSetting(ctx context.Context, s *MintSink, worker int, name string) (string, error) {
	sw, err := s.OpenWorker(ctx, worker)
	if err != nil {
		return "", err
	}
	w := sw.(*mintWorker)
	defer w.Close()
	if err := w.connect(ctx); err != nil {
		return "", err
	}
	var v string
	err = w.conn.QueryRow(ctx, `select current_setting($1)`, name).Scan(&v)
	return v, err
}

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
