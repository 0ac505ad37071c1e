package loader

import (
	"fmt"
	"strings"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
)

// changeReader reads change rows from one manifest (pipeline.ChangeReader) and checks them.
type changeReader struct {
	r *pipeline.ChangeReader
}

// openChangeManifest opens path; m maps change columns to the manifest's names. Errors are
// *pipeline.ManifestError.
func openChangeManifest(path string, m map[string]string) (*changeReader, error) {
	r, err := pipeline.OpenChangeManifest(path, m, ColARK, ColMintRequestID)
	if err != nil {
		return nil, err
	}
	return &changeReader{r: r}, nil
}

// Close closes the manifest.
func (r *changeReader) Close() error { return r.r.Close() }

// next returns the next row and, for a row that cannot be applied, its reject; io.EOF at the
// end; any other error is fatal (*pipeline.ManifestError).
func (r *changeReader) next() (ChangeRow, *textin.RowError, error) {
	cr, rerr, err := r.r.Next()
	row := ChangeRow{Loc: cr.Loc}
	if err != nil || rerr != nil {
		return row, rerr, err
	}
	return row.fill(cr.Cols)
}

// fill checks the row's columns (get: change column -> value, present columns only) and sets
// the row's ARK or mint request ID, change ID, mask and values; a bad value is the reject.
func (row ChangeRow) fill(get map[string]string) (ChangeRow, *textin.RowError, error) {
	if a, ok := get[ColARK]; ok && a != "" {
		p, err := ark.Parse(a)
		if err != nil {
			return row, &textin.RowError{Loc: row.Loc, Field: ColARK, Reason: "not an ARK", Err: err}, nil
		}
		row.ARK = p.Key()
	} else if id := get[ColMintRequestID]; id != "" {
		row.MintRequestID = id
	} else {
		return row, &textin.RowError{Loc: row.Loc, Field: ColARK, Reason: "the row names no ARK (ark or request_id)"}, nil
	}
	row.ChangeID = strings.TrimSpace(get[ColChangeID])
	if len(row.ChangeID) > 255 {
		return row, &textin.RowError{Loc: row.Loc, Field: ColChangeID, Reason: "a change request ID is at most 255 octets"}, nil
	}
	for i, c := range changeColumns {
		v, ok := get[c]
		if !ok || (v == "" && (c == ColStatus || c == ColReason)) {
			continue // a status is never empty, and a reason only goes with a change
		}
		row.Mask |= 1 << i
		row.Values[i] = v
	}
	if row.Mask&maskURL != 0 && row.Values[0] != "" {
		if err := ledger.ValidateTarget(row.Values[0]); err != nil {
			return row, &textin.RowError{Loc: row.Loc, Field: ColURL, Reason: err.Error()}, nil
		}
	}
	if row.Mask&maskStatus != 0 {
		switch row.Values[5] {
		case "public", "unavailable":
		default:
			return row, &textin.RowError{Loc: row.Loc, Field: ColStatus,
				Reason: fmt.Sprintf("status %q: want public (restores a tombstoned ARK) or unavailable (a tombstone, with a reason)", row.Values[5])}, nil
		}
	}
	if row.Mask&^maskReason == 0 {
		return row, &textin.RowError{Loc: row.Loc, Reason: "the row changes nothing: give url, who, what, when, commitment or status"}, nil
	}
	return row, nil, nil
}
