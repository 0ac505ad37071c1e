package importer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/linkcheck"
	"github.com/arkhe-ledger/arkhe/targethealth"
	"github.com/arkhe-ledger/arkhe/textin"
)

// linkBatch is how many link-check records are stored at a time.
const linkBatch = 500

// isLinkFormat reports the formats that hold a legacy link checker's state, not identifiers.
func isLinkFormat(f legacy.Format) bool {
	return f == legacy.EZIDLinkCheck || f == legacy.EZIDLinkCheckTSV
}

// LinkNotInLedgerReason is the reject-file reason of a link-check record whose ARK is not in the
// ledger: its state is about an identifier arkhe does not hold, and nothing is invented.
const LinkNotInLedgerReason = "the ARK is not in the ledger, so its link-check state is not kept; import the identifier export first"

// linkPass imports one file of link-check records in tx (the file's transaction): each ARK
// whose target in the ledger is the one checked, and which has no link state yet, gets the
// record's state (targethealth.ImportStates, with the default policy's due times), a state that
// is broken with a "broken" event at its last check. Records of other schemes are skipped and
// counted; a record whose ARK is not in the ledger is rejected, one whose ledger target differs
// is a difference; an ARK that has a state keeps it.
type linkPass struct {
	cfg    *Config
	client *clientInfo
	rej    *rejectFile
	path   string
	format legacy.Format
	tx     pgx.Tx
	runID  int64

	counts    Counts
	truncated *legacy.TruncatedError
	refusals  refusals
	digest    string
	read      int64
	pending   []pendingLink
	file      *countingFile // the file being read, for progress
}

type pendingLink struct {
	rec *legacy.LinkCheckRecord
	imp targethealth.ImportedState
}

func (p *linkPass) run(ctx context.Context) error {
	ex, err := openExport(p.path, p.format)
	if err != nil {
		return err
	}
	defer ex.Close()
	p.file = ex.counted
	r := ex.r
	for {
		it, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		var re *textin.RowError
		var te *legacy.TruncatedError
		switch {
		case errors.As(err, &re):
			p.read++
			p.counts.Read++
			p.counts.Rejected++
			if err := p.rej.write(KindRejected, re.Loc, re.ID, "", re.Field, recordErrorReason(re), nil, nil, re.Raw); err != nil {
				return err
			}
			continue
		case errors.As(err, &te):
			p.truncated = te
			if err := p.rej.write(KindTruncated, te.Loc, "", "", "file", te.Reason+"; "+TruncatedNote, nil, nil, ""); err != nil {
				return err
			}
			continue
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("import %s: reading stopped: %w", p.path, err)
		}
		p.read++
		p.counts.Read++
		switch {
		case it.Refused != nil:
			p.counts.Refused++
			rf := it.Refused
			p.refusals.add(rf)
			if err := p.rej.write(KindRefused, rf.Source, rf.Model, "", "model", rf.Reason, nil, nil, ""); err != nil {
				return err
			}
		case it.LinkCheck != nil:
			if err := p.link(ctx, it.LinkCheck); err != nil {
				return err
			}
		default:
			return fmt.Errorf("import %s: %s yielded a record that is not a link check at %s", p.path, p.format, it.Loc())
		}
	}
	if err := p.flush(ctx); err != nil {
		return err
	}
	if p.cfg.Progress != nil {
		p.cfg.Progress(p.file.progress(p.path, 1, p.read))
	}
	if p.digest, err = ex.digest(); err != nil { // the digest covers the whole file
		return fmt.Errorf("import %s: %w", p.path, err)
	}
	return nil
}

// link handles one record.
func (p *linkPass) link(ctx context.Context, rec *legacy.LinkCheckRecord) error {
	p.counts.LinkRecords++
	if rec.Kind != "ark" {
		if p.counts.SkippedNonARK == nil {
			p.counts.SkippedNonARK = map[string]int64{}
		}
		p.counts.SkippedNonARK[rec.Kind]++
		return nil
	}
	a, err := legacy.ParseLegacyID(rec.ID)
	if err != nil {
		p.counts.Rejected++
		return p.rej.write(KindRejected, rec.Source, rec.ID, "", "identifier", err.Error(), nil, nil, "")
	}
	if p.client != nil && p.client.authority != "system" && p.client.naan != a.NAAN {
		p.counts.Rejected++
		return p.rej.write(KindRejected, rec.Source, rec.ID, a.String(), "naan",
			fmt.Sprintf("NAAN %s is outside the reach of client %s (authority %s of NAAN %s)", a.NAAN, p.client.id, p.client.authority, p.client.naan), nil, nil, "")
	}
	if !rec.Checked {
		p.counts.LinkNeverChecked++
		return nil
	}
	if rec.TargetIsDefault {
		// EZID's placeholder for "no target": the ledger holds no target to keep a state for
		p.counts.LinkDefaultTarget++
		return nil
	}
	imp := targethealth.ImportedState{Key: a.Key(), State: rec.State}
	if rec.State.Broken {
		imp.Events = []linkcheck.Transition{{Kind: linkcheck.Broken, Time: rec.State.Last.Time,
			Reason: fmt.Sprintf("imported from %s: the legacy link checker marked the target bad after %d consecutive failed checks (the time is its last check)",
				p.format, rec.State.ConsecutiveFailures)}}
	}
	p.pending = append(p.pending, pendingLink{rec: rec, imp: imp})
	if len(p.pending) >= linkBatch {
		return p.flush(ctx)
	}
	return nil
}

// flush stores the pending records and accounts for each.
func (p *linkPass) flush(ctx context.Context) error {
	if len(p.pending) == 0 {
		return nil
	}
	imps := make([]targethealth.ImportedState, len(p.pending))
	for i, pl := range p.pending {
		imps[i] = pl.imp
	}
	res, err := targethealth.ImportStates(ctx, p.tx, p.runID, linkcheck.Policy{}, imps)
	if err != nil {
		return fmt.Errorf("import %s: %w", p.path, err)
	}
	for i, r := range res {
		pl := p.pending[i]
		canonical := "ark:" + pl.imp.Key
		switch r.Outcome {
		case targethealth.ImportStored:
			p.counts.LinkLoaded++
			if pl.imp.State.Broken {
				p.counts.LinkBroken++
			}
		case targethealth.ImportKept:
			p.counts.LinkKept++
		case targethealth.ImportNotInLedger:
			p.counts.LinkNotInLedger++
			if err := p.rej.write(KindRejected, pl.rec.Source, pl.rec.ID, canonical, "identifier", LinkNotInLedgerReason, nil, nil, ""); err != nil {
				return err
			}
		case targethealth.ImportTargetDiffers:
			p.counts.Differences++
			led := r.LedgerTarget
			if err := p.rej.write(KindDifference, pl.rec.Source, pl.rec.ID, canonical, "target",
				"the link-check state is about another target than the ARK's in the ledger; not kept", &pl.rec.Target, &led, ""); err != nil {
				return err
			}
		}
	}
	p.pending = p.pending[:0]
	if p.cfg.Progress != nil {
		p.cfg.Progress(p.file.progress(p.path, 1, p.read))
	}
	return nil
}
