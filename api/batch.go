package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
)

// Group commit of POST /mint. The single mints of one principal (client and API key) wait in
// that principal's queue while a batch of theirs is under way; when a batch is done, the next
// takes every mint waiting (at most ledger.MaxMintMany) and mints them in one statement, so one
// transaction and one commit (ledger.MintMany). There is no timer: a mint arriving when none of
// its principal's is under way starts at once, alone, and another batch starts beside those
// under way (at most mintRunners) only once mintRunnerBacklog mints are waiting. Each mint keeps
// its own answer: its ARK, its receipt replayed, or its refusal, which the others do not share.

// mintRunners is how many batches of one principal may be under way at once: a batch runs on
// one connection, so on one server process of the ledger, and waits for its commit's WAL flush;
// more than one lets the ledger's cores work for one principal while a batch waits on its flush
// and the next gathers.
const mintRunners = 4

// mintRunnerBacklog is how many mints must be waiting for a principal's batches under way to
// start another: a mint arriving when none is under way starts at once, and a few arriving
// while one is wait for the next batch rather than each starting a batch of one.
const mintRunnerBacklog = 8

// mintBatches is a server's queues of single mints, one per principal.
type mintBatches struct {
	mu     sync.Mutex
	queues map[string]*mintQueue // principal's client ID, NUL, key prefix → its queue
}

// mintQueue is the mints of one principal waiting for the next batch; runners counts the
// goroutines minting its batches (each exits once none is waiting; the last drops the queue).
type mintQueue struct {
	waiting []*mintJob
	runners int
}

// mintJob is one POST /mint: what to mint and, once done is closed, its answer.
type mintJob struct {
	ctx       context.Context // the request's: a mint whose client went away before its batch is not minted
	p         principal
	m         mintRecord
	requestID string
	attempts  int // batches that tried it (a name a concurrent mint took on Citus, a deadlock: drawn again)

	req      ledger.MintOneRequest
	done     chan struct{}
	printed  string
	replayed bool
	a        *answer
}

// finish answers j.
func (j *mintJob) finish(printed string, replayed bool, a *answer) {
	j.printed, j.replayed, j.a = printed, replayed, a
	close(j.done)
}

// mintGrouped mints m for p with request ID requestID ("" for one of the server's own, as mint
// draws it) in the next batch of p's mints, and returns what mint returns: the ARK in printed
// form and whether a receipt answered, or the refusal.
func (s *Server) mintGrouped(ctx context.Context, p principal, m mintRecord, requestID string) (string, bool, *answer) {
	if requestID == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", false, s.unavailable("draw a request ID", err)
		}
		requestID = "api:" + hex.EncodeToString(b[:])
	}
	j := &mintJob{ctx: ctx, p: p, m: m, requestID: requestID, done: make(chan struct{})}
	k := p.clientID + "\x00" + p.prefix()
	b := &s.batches
	b.mu.Lock()
	if b.queues == nil {
		b.queues = map[string]*mintQueue{}
	}
	q := b.queues[k]
	if q == nil {
		q = &mintQueue{}
		b.queues[k] = q
	}
	q.waiting = append(q.waiting, j)
	if q.runners == 0 || q.runners < mintRunners && len(q.waiting) >= mintRunnerBacklog {
		q.runners++
		go s.runMints(context.WithoutCancel(ctx), k, q)
	}
	b.mu.Unlock()
	<-j.done
	return j.printed, j.replayed, j.a
}

// runMints mints queue q's batches, each of every mint waiting (at most ledger.MaxMintMany),
// until none is waiting; the last runner to stop drops q.
func (s *Server) runMints(ctx context.Context, k string, q *mintQueue) {
	b := &s.batches
	for {
		b.mu.Lock()
		n := min(len(q.waiting), ledger.MaxMintMany)
		if n == 0 {
			if q.runners--; q.runners == 0 {
				delete(b.queues, k)
			}
			b.mu.Unlock()
			return
		}
		jobs := make([]*mintJob, n)
		copy(jobs, q.waiting)
		q.waiting = append(q.waiting[:0], q.waiting[n:]...)
		b.mu.Unlock()
		s.mintBatch(ctx, jobs)
	}
}

// mintBatch mints jobs, all of one principal, on one connection: the key is checked once (conn),
// each job's shoulder is read and its candidate names drawn as mint does, then all are minted in
// one statement (one alone through ledger.MintOne). A job whose names a concurrent mint took
// (Citus) or whose mint was a deadlock's victim is drawn again and sent again with the others
// so retried, up to three times (as mint draws again); every job is answered.
func (s *Server) mintBatch(ctx context.Context, jobs []*mintJob) {
	live := jobs[:0:0]
	for _, j := range jobs {
		if err := j.ctx.Err(); err != nil {
			j.finish("", false, s.unavailable("mint", err))
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		return
	}
	p := live[0].p
	c, a := s.conn(ctx, p)
	if a != nil {
		for _, j := range live {
			j.finish("", false, a)
		}
		return
	}
	defer s.release(c)
	for len(live) > 0 {
		ready := live[:0:0]
		for _, j := range live {
			if a := s.prepareMint(ctx, c, j); a != nil {
				j.finish("", false, a)
				continue
			}
			ready = append(ready, j)
		}
		if len(ready) == 0 {
			return
		}
		results := s.mintMany(ctx, c, ready)
		live = live[:0:0]
		for i, j := range ready {
			r := results[i]
			j.attempts++
			switch {
			case r.Err == nil:
				if r.Replayed {
					s.replayed.Add(1)
				} else {
					s.minted.Add(1)
				}
				j.finish("ark:/"+r.Key, r.Replayed, nil)
			case (ledger.IsUniqueViolation(r.Err) || ledger.IsDeadlock(r.Err)) && j.attempts < 4:
				live = append(live, j) // drawn again
			default:
				j.finish("", false, s.mintRefusal(ctx, c, p, r.Err))
			}
		}
	}
}

// prepareMint reads j's shoulder and draws its candidate names into j.req; a shoulder that is
// not registered or cannot mint is answered as mint answers it.
func (s *Server) prepareMint(ctx context.Context, c *pgxpool.Conn, j *mintJob) *answer {
	m := j.m
	sh, found, err := s.shoulder(ctx, c, m.naan, m.shoulder)
	if err != nil {
		return s.unavailable("read shoulder", err)
	}
	if !found {
		return forbidden(fmt.Sprintf("shoulder %s of NAAN %s is not registered: no client reaches it", m.shoulder, m.naan))
	}
	d, err := loader.NewNameDrawer(sh, s.cfg.Blades())
	if err != nil {
		return forbidden(fmt.Sprintf("shoulder %s of NAAN %s cannot mint: %v", m.shoulder, m.naan, err))
	}
	names := make([]string, 0, s.cfg.MaxDraws)
	for i := 0; i < s.cfg.MaxDraws; i++ {
		n, err := d.Next()
		if err != nil {
			return s.unavailable("draw a name", err)
		}
		names = append(names, n)
	}
	j.req = ledger.MintOneRequest{ClientID: j.p.clientID, KeyPrefix: j.p.prefix(), RequestID: j.requestID, Digest: m.digest(),
		ShoulderID: sh.ID, Names: names, URL: m.url, Commitment: m.commitment, Who: m.who, What: m.what, When: m.when, Metadata: m.metadata}
	return nil
}

// mintMany mints jobs' requests on c: one alone through ledger.MintOne, more through
// ledger.MintMany. A failure of the whole call is every job's.
func (s *Server) mintMany(ctx context.Context, c *pgxpool.Conn, jobs []*mintJob) []ledger.MintManyResult {
	out := make([]ledger.MintManyResult, len(jobs))
	if len(jobs) == 1 {
		out[0].MintOneResult, out[0].Err = ledger.MintOne(ctx, c, jobs[0].req)
		return out
	}
	reqs := make([]ledger.MintOneRequest, len(jobs))
	for i, j := range jobs {
		reqs[i] = j.req
	}
	res, err := ledger.MintMany(ctx, c, reqs)
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	return res
}
