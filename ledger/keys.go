package ledger

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/argon2"
)

// API keys, the CREDENTIAL rows of kind api_key, for a ledger's machine clients.
//
// A key is printed once, when it is created, as "arkhe_" + prefix + "_" + secret: a prefix of
// KeyPrefixLength characters and a secret of KeySecretLength, both in lowercase base32
// (a-z, 2-7). The prefix (60 random bits) is public: it names the key in `key list`, in audit
// records and in the ledger. The secret (32 random bytes, 256 bits) is never stored: the ledger
// keeps an Argon2id hash of it in the PHC string format, $argon2id$v=19$m=65536,t=2,p=2$SALT$HASH
// (Argon2id with time 2, memory 64 MiB, two lanes).
//
// A key is checked by the ledger itself (arkhe_key_verify): the caller derives the hash of the
// secret it holds with the key's own parameters and salt (arkhe_key_params; the hash is never
// handed out) and the database compares, counts a failure and, after KeyMaxFailures failures in a
// row, locks the key for KeyLockDuration. So every wrong attempt is counted and recorded
// (key.fail, key.lock), whatever program makes it. The prefix being public, anyone who may call
// the function (a session in one of the ledger's roles) can lock a key: a lock only delays (a
// locked key is neither compared nor counted, so a lock never grows), it names the session's
// role in the audit record, and the operator can issue the holder a new key at once.

// Key format and lock-out rule.
const (
	KeyLabel        = "arkhe"          // the first part of a printed key
	KeyPrefixLength = 12               // characters of the public prefix (60 bits)
	KeySecretLength = 52               // characters of the secret (32 bytes)
	KeyMaxFailures  = 10               // failures in a row that lock a key
	KeyLockDuration = 15 * time.Minute // how long a key stays locked
)

// argonParams are Argon2id parameters (RFC 9106).
type argonParams struct {
	Time      uint32 // passes over memory
	MemoryKiB uint32 // memory in KiB
	Threads   uint8  // parallelism
	KeyLength uint32 // hash length in bytes
	SaltBytes int    // salt length in bytes
}

// defaultArgonParams returns the parameters new keys are hashed with: time 2, memory 64 MiB,
// 2 threads, a 32-byte hash and a 16-byte salt. A key hashed with other parameters is rehashed
// with these on its next successful use (arkhe_key_rehash).
func defaultArgonParams() argonParams {
	return argonParams{Time: 2, MemoryKiB: 64 * 1024, Threads: 2, KeyLength: 32, SaltBytes: 16}
}

// keyParamLimits bound the parameters arkhe accepts from a stored hash (a hash with m=4 GiB
// would make every check exhaust the client's memory).
const (
	maxKeyMemoryKiB = 1 << 20 // 1 GiB
	maxKeyTime      = 16
	maxKeyThreads   = 16
)

// keyAlphabet is lowercase base32 (RFC 4648 letters, lowercased).
const keyAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// hashParams returns the parameters l hashes keys with: defaultArgonParams unless the package's
// tests set others.
func (l *Ledger) hashParams() argonParams {
	if l.keyParams == (argonParams{}) {
		return defaultArgonParams()
	}
	return l.keyParams
}

func keyEncoding() *base32.Encoding {
	return base32.NewEncoding(keyAlphabet).WithPadding(base32.NoPadding)
}

// keyRE is the form of a printed key.
var keyRE = regexp.MustCompile(`^` + KeyLabel + `_([a-z2-7]{` + strconv.Itoa(KeyPrefixLength) + `})_([a-z2-7]{` + strconv.Itoa(KeySecretLength) + `})$`)

// phcHeadRE is the head of an Argon2id PHC string: parameters and salt.
var phcHeadRE = regexp.MustCompile(`^\$argon2id\$v=19\$m=([0-9]+),t=([0-9]+),p=([0-9]+)\$([A-Za-z0-9+/]+)$`)

// ParseKey splits a printed key into its prefix and secret; surrounding white space (a key
// file's newline) is ignored. The error names the expected form, never the key.
func ParseKey(key string) (prefix, secret string, err error) {
	m := keyRE.FindStringSubmatch(strings.TrimSpace(key))
	if m == nil {
		return "", "", fmt.Errorf("an API key has the form %s_<%d characters a-z 2-7>_<%d characters a-z 2-7>", KeyLabel, KeyPrefixLength, KeySecretLength)
	}
	return m[1], m[2], nil
}

// hashKeySecret returns the Argon2id hash of secret with a new random salt, in the PHC string
// format ($argon2id$v=19$m=M,t=T,p=P$SALT$HASH, unpadded standard base64).
func hashKeySecret(secret string, p argonParams) (string, error) {
	salt := make([]byte, p.SaltBytes)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("hash API key: %w", err)
	}
	return phcHead(p, salt) + "$" + base64.RawStdEncoding.EncodeToString(deriveKey(secret, p, salt)), nil
}

func phcHead(p argonParams, salt []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt))
}

func deriveKey(secret string, p argonParams, salt []byte) []byte {
	return argon2.IDKey([]byte(secret), salt, p.Time, p.MemoryKiB, p.Threads, p.KeyLength)
}

// parsePHCHead reads the parameters and salt of a stored hash's head (arkhe_key_params); the
// hash length is always defaultArgonParams().KeyLength.
func parsePHCHead(head string) (argonParams, []byte, error) {
	m := phcHeadRE.FindStringSubmatch(head)
	if m == nil {
		return argonParams{}, nil, fmt.Errorf("the stored key hash is not an Argon2id PHC string")
	}
	mem, _ := strconv.ParseUint(m[1], 10, 32)
	t, _ := strconv.ParseUint(m[2], 10, 32)
	th, _ := strconv.ParseUint(m[3], 10, 8)
	if mem == 0 || mem > maxKeyMemoryKiB || t == 0 || t > maxKeyTime || th == 0 || th > maxKeyThreads {
		return argonParams{}, nil, fmt.Errorf("the stored key hash has parameters m=%s,t=%s,p=%s outside the accepted bounds (m <= %d, t <= %d, p <= %d)",
			m[1], m[2], m[3], maxKeyMemoryKiB, maxKeyTime, maxKeyThreads)
	}
	salt, err := base64.RawStdEncoding.DecodeString(m[4])
	if err != nil {
		return argonParams{}, nil, fmt.Errorf("the stored key hash has a bad salt: %w", err)
	}
	return argonParams{Time: uint32(t), MemoryKiB: uint32(mem), Threads: uint8(th), KeyLength: defaultArgonParams().KeyLength, SaltBytes: len(salt)}, salt, nil
}

// NewKey is an API key just created: Key is the whole printed key, shown once and never stored.
type NewKey struct {
	ClientID string
	Prefix   string
	Key      string
}

// CreateKey issues client clientID a new API key (Argon2id, the default parameters) and returns it;
// only its prefix and hash are stored. The database refuses a key for a person client (AK005:
// people sign in, machines hold keys) and records the creation (key.create). Errors: a
// *RegistrationError for an unknown client or a person, or a wrapped database error.
func (l *Ledger) CreateKey(ctx context.Context, clientID string) (NewKey, error) {
	enc := keyEncoding()
	for try := 0; try < 3; try++ {
		raw := make([]byte, 32+8)
		if _, err := rand.Read(raw); err != nil {
			return NewKey{}, fmt.Errorf("create API key: %w", err)
		}
		secret := enc.EncodeToString(raw[:32])
		prefix := enc.EncodeToString(raw[32:])[:KeyPrefixLength]
		phc, err := hashKeySecret(secret, l.hashParams())
		if err != nil {
			return NewKey{}, err
		}
		tag, err := l.Pool.Exec(ctx, `insert into credential (client_pk, kind, prefix, hashed)
			select id, 'api_key', $2, $3 from client where client_id = $1`, clientID, prefix, phc)
		switch {
		case IsUniqueViolation(err):
			continue // a prefix drawn twice: draw again
		case SQLState(err) == CodeCredentialFit:
			return NewKey{}, &RegistrationError{What: "API key for client " + clientID, Rule: "a person client cannot hold an API key (people sign in; machine clients hold keys)", Err: err}
		case err != nil:
			return NewKey{}, &RegistrationError{What: "API key for client " + clientID, Rule: ruleSeeDatabaseError, Err: err}
		case tag.RowsAffected() == 0:
			return NewKey{}, &RegistrationError{What: "client " + clientID, Rule: "not registered"}
		}
		return NewKey{ClientID: clientID, Prefix: prefix, Key: KeyLabel + "_" + prefix + "_" + secret}, nil
	}
	return NewKey{}, fmt.Errorf("create API key for client %s: three prefixes drawn were taken", clientID)
}

// KeyInfo is one API key as `arkhe client key list` shows it; never the secret or its hash.
type KeyInfo struct {
	Prefix         string
	ClientID       string
	CreatedAt      time.Time
	LastUsedAt     *time.Time
	Active         bool
	RevokedAt      *time.Time
	FailedAttempts int        // failures in a row since the last success or lock
	LockedUntil    *time.Time // set while (and after) a lock; compare with now
	Params         string     // the hash's Argon2id parameters, e.g. "m=65536,t=2,p=2"
}

// ListKeys returns the API keys of client clientID ("" for every client), by client and age.
func (l *Ledger) ListKeys(ctx context.Context, clientID string) ([]KeyInfo, error) {
	rows, err := l.Pool.Query(ctx, `select k.prefix, c.client_id, k.created_at, k.last_used_at, k.active, k.revoked_at,
		k.failed_attempts, k.locked_until, coalesce(split_part(arkhe_key_params(k.prefix), '$', 4), '')
		from credential k join client c on c.id = k.client_pk
		where k.kind = 'api_key' and ($1::text = '' or c.client_id = $1::text)
		order by c.client_id, k.created_at, k.prefix`, clientID)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (KeyInfo, error) {
		var k KeyInfo
		err := r.Scan(&k.Prefix, &k.ClientID, &k.CreatedAt, &k.LastUsedAt, &k.Active, &k.RevokedAt, &k.FailedAttempts, &k.LockedUntil, &k.Params)
		return k, err
	})
}

// RevokeKey revokes the API key with prefix (a printed key is accepted too): it stays in the
// ledger, inactive, with the time of revocation, and is refused from then on; a revoked key is
// never made active again. changed is false when it was revoked already; an unknown prefix is a
// *RegistrationError. The database records it (key.revoke).
func (l *Ledger) RevokeKey(ctx context.Context, prefix string) (changed bool, err error) {
	if p, _, perr := ParseKey(prefix); perr == nil {
		prefix = p
	}
	tag, err := l.Pool.Exec(ctx, `update credential set active = false, revoked_at = now()
		where prefix = $1 and kind = 'api_key' and active`, prefix)
	if err != nil {
		return false, fmt.Errorf("revoke API key %s: %w", prefix, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	var exists bool
	if err := l.Pool.QueryRow(ctx, `select exists (select 1 from credential where prefix = $1 and kind = 'api_key')`, prefix).Scan(&exists); err != nil {
		return false, fmt.Errorf("revoke API key %s: %w", prefix, err)
	}
	if !exists {
		return false, &RegistrationError{What: "API key " + prefix, Rule: "no API key has this prefix"}
	}
	return false, nil
}

// keysRequired reports whether writing commands on this ledger need the client's API key
// (RequireKeys).
func (l *Ledger) keysRequired(ctx context.Context) (bool, error) {
	var on bool
	if err := l.Pool.QueryRow(ctx, `select exists (select 1 from ledger_setting where name = 'require_keys' and value = 'on')`).Scan(&on); err != nil {
		return false, fmt.Errorf("read ledger settings: %w", err)
	}
	return on, nil
}

// keyProof is what a session presents to the ledger to prove an API key (arkhe_key_login): the
// client, the key's prefix and the Argon2id hash of its secret under the stored salt and
// parameters. The secret itself is not kept.
type keyProof struct {
	clientID string
	prefix   string
	hash     []byte
}

// Authenticate checks key (a printed API key; "" for none) for client clientID before a writing
// command acts as it. Without a key it returns nil unless the ledger requires keys; a key given
// is always checked. The ledger compares the key's hash, counts a failure and records the
// session as the client's (arkhe_key_login); a key hashed with parameters other than
// the default ones is rehashed with them on success (arkhe_key_rehash). On a ledger from Open,
// every other connection of the pool then proves the key before its first use, so the database
// accepts the writes of each (on a ledger requiring keys it refuses, AK009, those of a session
// that has not proved the client's key). A refusal is a *KeyError.
func (l *Ledger) Authenticate(ctx context.Context, clientID, key string) error {
	if key == "" {
		required, err := l.keysRequired(ctx)
		if err != nil {
			return err
		}
		if required {
			return &KeyError{ClientID: clientID, Reason: "missing"}
		}
		return nil
	}
	prefix, secret, err := ParseKey(key)
	if err != nil {
		return &KeyError{ClientID: clientID, Reason: "malformed", Err: err}
	}
	conn, err := l.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("check API key: %w", err)
	}
	defer conn.Release()
	var head *string
	if err := conn.QueryRow(ctx, `select arkhe_key_params($1)`, prefix).Scan(&head); err != nil {
		return fmt.Errorf("check API key: %w", err)
	}
	if head == nil {
		return &KeyError{ClientID: clientID, Prefix: prefix, Reason: "unknown"}
	}
	p, salt, err := parsePHCHead(*head)
	if err != nil {
		return fmt.Errorf("check API key %s_%s: %w", KeyLabel, prefix, err)
	}
	hash := deriveKey(secret, p, salt)
	var verdict string
	if want := l.hashParams(); p != want || len(salt) != want.SaltBytes {
		phc, err := hashKeySecret(secret, want)
		if err != nil {
			return err
		}
		err = conn.QueryRow(ctx, `select arkhe_key_rehash($1, $2, $3, $4)`, clientID, prefix, hash, phc).Scan(&verdict)
		if err != nil {
			return fmt.Errorf("check API key: %w", err)
		}
		if verdict == "ok" {
			// from now on the key is proved with its new hash
			if hash, err = base64.RawStdEncoding.DecodeString(phc[strings.LastIndexByte(phc, '$')+1:]); err != nil {
				return fmt.Errorf("check API key: %w", err)
			}
		}
	}
	if verdict == "" || verdict == "ok" {
		if err := conn.QueryRow(ctx, `select arkhe_key_login($1, $2, $3)`, clientID, prefix, hash).Scan(&verdict); err != nil {
			return fmt.Errorf("check API key: %w", err)
		}
	}
	if verdict == "ok" {
		proof := &keyProof{clientID: clientID, prefix: prefix, hash: hash}
		l.proof.Store(proof)
		l.proved.Store(conn.Conn().PgConn(), proof)
		return nil
	}
	ke := &KeyError{ClientID: clientID, Prefix: prefix, Reason: verdict}
	if verdict == "locked" || verdict == "wrong" {
		// through the ledger's function: a writer reads no column of credential
		_ = conn.QueryRow(ctx, `select arkhe_key_locked_until($1)`, prefix).Scan(&ke.LockedUntil)
		if ke.LockedUntil != nil {
			ke.Reason = "locked"
		}
	}
	return ke
}

// proveConn is the pool's PrepareConn: a connection proves the key Authenticate accepted
// (arkhe_key_login) before its first use. A key refused meanwhile (revoked, locked) fails the
// acquisition with a *KeyError and closes the connection.
func (l *Ledger) proveConn(ctx context.Context, c *pgx.Conn) (bool, error) {
	p := l.proof.Load()
	if p == nil {
		return true, nil
	}
	if had, ok := l.proved.Load(c.PgConn()); ok && had == p {
		return true, nil
	}
	var verdict string
	if err := c.QueryRow(ctx, `select arkhe_key_login($1, $2, $3)`, p.clientID, p.prefix, p.hash).Scan(&verdict); err != nil {
		return false, fmt.Errorf("prove API key %s_%s on a new connection: %w", KeyLabel, p.prefix, err)
	}
	if verdict != "ok" {
		return false, &KeyError{ClientID: p.clientID, Prefix: p.prefix, Reason: verdict}
	}
	l.proved.Store(c.PgConn(), p)
	return true, nil
}
