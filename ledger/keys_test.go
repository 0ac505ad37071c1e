package ledger_test

import (
	"context"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// keyLedger registers NAAN 99999, manager m1, shoulder /x9, a machine client "svc" and a person
// client "alice". The ledger hashes keys with CheapKeyParams; a test of the parameters
// themselves uses a Ledger on the same pool as callers make it, with DefaultKeyParams.
func keyLedger(t *testing.T) (*ledger.Ledger, context.Context) {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Ledger{Pool: pgtest.New(t)}
	ledger.SetKeyParams(l, ledger.CheapKeyParams())
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "alice", NAAN: "99999", Manager: "m1", Authority: "manager", SubjectType: "person", Scopes: []string{"ark:mint"}}))
	return l, ctx
}

// TestKeyCreateStoresArgon2id: the printed key's form, and a stored PHC string with the stated
// parameters whose hash is Argon2id of the secret, recomputed here independently.
func TestKeyCreateStoresArgon2id(t *testing.T) {
	t.Parallel()
	cheap, ctx := keyLedger(t)
	l := &ledger.Ledger{Pool: cheap.Pool} // as every caller has it: a real key, DefaultKeyParams
	k, err := l.CreateKey(ctx, "svc")
	must(t, err)
	if !regexp.MustCompile(`^arkhe_[a-z2-7]{12}_[a-z2-7]{52}$`).MatchString(k.Key) || !strings.HasPrefix(k.Key, "arkhe_"+k.Prefix+"_") {
		t.Fatalf("key %q (prefix %q): want arkhe_<12>_<52> in lowercase base32", k.Key, k.Prefix)
	}
	var stored string
	must(t, l.Pool.QueryRow(ctx, `select hashed from credential where prefix = $1 and kind = 'api_key'`, k.Prefix).Scan(&stored))
	m := regexp.MustCompile(`^\$argon2id\$v=19\$m=65536,t=2,p=2\$([A-Za-z0-9+/]{22})\$([A-Za-z0-9+/]{43})$`).FindStringSubmatch(stored)
	if m == nil {
		t.Fatalf("stored %q: want $argon2id$v=19$m=65536,t=2,p=2$<16-byte salt>$<32-byte hash>", stored)
	}
	if strings.Contains(stored, k.Key[len("arkhe_"+k.Prefix+"_"):]) {
		t.Fatalf("the secret is stored")
	}
	salt, err := base64.RawStdEncoding.DecodeString(m[1])
	must(t, err)
	want := argon2.IDKey([]byte(k.Key[len("arkhe_"+k.Prefix+"_"):]), salt, 2, 64*1024, 2, 32)
	if got := m[2]; got != base64.RawStdEncoding.EncodeToString(want) {
		t.Fatalf("stored hash %s, Argon2id(secret, salt, t=2, m=64 MiB, p=2, 32 bytes) = %s", got, base64.RawStdEncoding.EncodeToString(want))
	}
	if p := ledger.DefaultKeyParams(); p != (ledger.KeyParams{Time: 2, MemoryKiB: 65536, Threads: 2, KeyLength: 32, SaltBytes: 16}) {
		t.Errorf("DefaultKeyParams = %+v", p)
	}
	must(t, l.Authenticate(ctx, "svc", k.Key+"\n"))
	keys, err := l.ListKeys(ctx, "svc")
	must(t, err)
	if len(keys) != 1 || keys[0].Prefix != k.Prefix || !keys[0].Active || keys[0].LastUsedAt == nil || keys[0].Params != "m=65536,t=2,p=2" {
		t.Fatalf("ListKeys = %+v", keys)
	}
	// a person holds no key: the database refuses it (these refusals are not about the parameters)
	var re *ledger.RegistrationError
	if _, err := cheap.CreateKey(ctx, "alice"); !errors.As(err, &re) || ledger.SQLState(err) != ledger.CodeCredentialFit {
		t.Errorf("key for a person client: %v, want a RegistrationError AK005", err)
	}
	if _, err := cheap.CreateKey(ctx, "nobody"); !errors.As(err, &re) {
		t.Errorf("key for an unknown client: %v", err)
	}
	if n := count(t, l.Pool, `select count(*) from credential`); n != 1 {
		t.Errorf("credential rows %d, want 1", n)
	}
	if n := count(t, l.Pool, `select count(*) from audit_event where action = 'key.create' and target = '`+k.Prefix+`'
		and detail->'after'->>'client' = 'svc' and not detail::text like '%argon2%'`); n != 1 {
		t.Errorf("key.create events: %d, want 1 (without the hash)", n)
	}
}

// TestKeyLockOut: the 10th wrong key in a row locks the key for 15 minutes; while locked even
// the right key is refused and nothing is counted; after the lock the right key works and the
// count starts again. Every failure and the lock are audited.
func TestKeyLockOut(t *testing.T) {
	t.Parallel()
	l, ctx := keyLedger(t)
	k, err := l.CreateKey(ctx, "svc")
	must(t, err)
	wrong := "arkhe_" + k.Prefix + "_" + strings.Repeat("a", ledger.KeySecretLength)
	var ke *ledger.KeyError
	for i := 1; i < ledger.KeyMaxFailures; i++ {
		if err := l.Authenticate(ctx, "svc", wrong); !errors.As(err, &ke) || ke.Reason != "wrong" {
			t.Fatalf("wrong key #%d: %v, want refused as wrong", i, err)
		}
	}
	if n := count(t, l.Pool, `select failed_attempts from credential`); n != ledger.KeyMaxFailures-1 {
		t.Fatalf("failed_attempts %d after %d failures", n, ledger.KeyMaxFailures-1)
	}
	err = l.Authenticate(ctx, "svc", wrong)
	if !errors.As(err, &ke) || ke.Reason != "locked" || ke.LockedUntil == nil {
		t.Fatalf("failure #%d: %v, want the key locked", ledger.KeyMaxFailures, err)
	}
	if d := time.Until(*ke.LockedUntil); d < ledger.KeyLockDuration-time.Minute || d > ledger.KeyLockDuration {
		t.Errorf("locked for %s, want %s", d, ledger.KeyLockDuration)
	}
	if err := l.Authenticate(ctx, "svc", k.Key); !errors.As(err, &ke) || ke.Reason != "locked" {
		t.Fatalf("right key while locked: %v, want refused as locked", err)
	}
	if n := count(t, l.Pool, `select failed_attempts from credential`); n != 0 {
		t.Errorf("failed_attempts %d while locked, want 0 (a lock restarts the count; attempts during it are not counted)", n)
	}
	if n := count(t, l.Pool, `select count(*) from audit_event where action = 'key.fail' and target = '`+k.Prefix+`'`); n != ledger.KeyMaxFailures-1 {
		t.Errorf("key.fail events %d, want %d", n, ledger.KeyMaxFailures-1)
	}
	if n := count(t, l.Pool, `select count(*) from audit_event where action = 'key.lock' and target = '`+k.Prefix+`' and db_role = current_user`); n != 1 {
		t.Errorf("key.lock events %d, want 1 naming the session's role", n)
	}
	// the lock ends
	exec(t, l.Pool, `update credential set locked_until = now() - interval '1 second'`)
	must(t, l.Authenticate(ctx, "svc", k.Key))
	if n := count(t, l.Pool, `select count(*) from credential where failed_attempts = 0 and locked_until is null and last_used_at is not null`); n != 1 {
		t.Errorf("after a success the key is not reset")
	}
	// another client's name with this key: unknown, and nothing counted
	if err := l.Authenticate(ctx, "alice", k.Key); !errors.As(err, &ke) || ke.Reason != "unknown" {
		t.Errorf("key presented for another client: %v", err)
	}
	if err := l.Authenticate(ctx, "svc", "arkhe_short"); !errors.As(err, &ke) || ke.Reason != "malformed" || strings.Contains(err.Error(), "arkhe_short") {
		t.Errorf("malformed key: %v (the message must not repeat the key)", err)
	}
}

// TestKeyRevokeAndRehash: a revoked key stays in the ledger, refused and never reactivated; a
// key hashed with older parameters is rehashed with the current ones on its next use, and the
// hash changes only through arkhe_key_rehash.
func TestKeyRevokeAndRehash(t *testing.T) {
	t.Parallel()
	l, ctx := keyLedger(t)
	k, err := l.CreateKey(ctx, "svc")
	must(t, err)
	changed, err := l.RevokeKey(ctx, k.Prefix)
	must(t, err)
	again, err := l.RevokeKey(ctx, k.Prefix)
	must(t, err)
	if !changed || again {
		t.Errorf("RevokeKey: changed %t then %t, want true then false", changed, again)
	}
	var ke *ledger.KeyError
	if err := l.Authenticate(ctx, "svc", k.Key); !errors.As(err, &ke) || ke.Reason != "revoked" {
		t.Errorf("revoked key: %v", err)
	}
	refused(t, l.Pool, ledger.CodeUpdateRefused, `update credential set active = true`)
	refused(t, l.Pool, ledger.CodeDeleteRefused, `delete from credential`)
	keys, err := l.ListKeys(ctx, "")
	must(t, err)
	if len(keys) != 1 || keys[0].Active || keys[0].RevokedAt == nil {
		t.Errorf("ListKeys after revoke: %+v", keys)
	}
	if n := count(t, l.Pool, `select count(*) from audit_event where action = 'key.revoke' and target = '`+k.Prefix+`'`); n != 1 {
		t.Errorf("key.revoke events %d, want 1", n)
	}
	var re *ledger.RegistrationError
	if _, err := l.RevokeKey(ctx, "zzzzzzzzzzzz"); !errors.As(err, &re) {
		t.Errorf("revoke of an unknown prefix: %v", err)
	}

	// a key from the days of weaker parameters, rehashed to DefaultKeyParams by a Ledger as
	// every caller has it
	l = &ledger.Ledger{Pool: l.Pool}
	secret := strings.Repeat("b", ledger.KeySecretLength)
	old, err := ledger.HashKeySecret(secret, ledger.KeyParams{Time: 1, MemoryKiB: 8 * 1024, Threads: 1, KeyLength: 32, SaltBytes: 16})
	must(t, err)
	exec(t, l.Pool, `insert into credential (client_pk, kind, prefix, hashed) select id, 'api_key', 'oldoldoldold', $1 from client where client_id = 'svc'`, old)
	refused(t, l.Pool, ledger.CodeUpdateRefused, `update credential set hashed = $1 where prefix = 'oldoldoldold'`, strings.Replace(old, "t=1", "t=3", 1))
	must(t, l.Authenticate(ctx, "svc", "arkhe_oldoldoldold_"+secret))
	var stored string
	must(t, l.Pool.QueryRow(ctx, `select hashed from credential where prefix = 'oldoldoldold'`).Scan(&stored))
	if !strings.HasPrefix(stored, "$argon2id$v=19$m=65536,t=2,p=2$") || stored == old {
		t.Errorf("after use the old key's hash is %s, want rehashed with m=65536,t=2,p=2", stored)
	}
	must(t, l.Authenticate(ctx, "svc", "arkhe_oldoldoldold_"+secret))
	if n := count(t, l.Pool, `select count(*) from audit_event where action = 'key.rehash' and target = 'oldoldoldold'
		and detail->'after'->>'hashed' = 'replaced' and not detail::text like '%argon2%'`); n != 1 {
		t.Errorf("key.rehash events %d, want 1 (without the hash)", n)
	}
}

// TestRequireKeys: once a ledger requires keys, a writing command without the client's key is
// refused; a key is checked whether required or not.
func TestRequireKeys(t *testing.T) {
	t.Parallel()
	l, ctx := keyLedger(t)
	must(t, l.Authenticate(ctx, "svc", "")) // not required yet
	changed, err := l.RequireKeys(ctx)
	must(t, err)
	if !changed {
		t.Fatal("RequireKeys changed nothing")
	}
	if changed, err := l.RequireKeys(ctx); err != nil || changed {
		t.Errorf("second RequireKeys: %t %v", changed, err)
	}
	var ke *ledger.KeyError
	if err := l.Authenticate(ctx, "svc", ""); !errors.As(err, &ke) || ke.Reason != "missing" || !strings.Contains(err.Error(), "--api-key-file") {
		t.Errorf("no key on a ledger that requires keys: %v", err)
	}
	k, err := l.CreateKey(ctx, "svc")
	must(t, err)
	must(t, l.Authenticate(ctx, "svc", k.Key))
	refused(t, l.Pool, ledger.CodeUpdateRefused, `update ledger_setting set value = 'off' where name = 'require_keys'`)
}
