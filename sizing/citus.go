package sizing

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// NodeUse is what one node of a Citus cluster holds of the ledger, in octets: every shard
// placement on it (heap, TOAST and indexes, pg_total_relation_size of each shard), split into
// the distributed tables' shards (Distributed: ark, ark_change, receipts, ...) and the
// reference tables' copies (Reference: NAANs, managers, shoulders, clients, the audit log, ...),
// with the ARKs its ark shards hold.
type NodeUse struct {
	Node        string `json:"node"` // host:port as the cluster's metadata names it
	ARKs        int64  `json:"arks"`
	Distributed int64  `json:"distributed_bytes"`
	Reference   int64  `json:"reference_bytes"`
	Shards      int    `json:"shard_placements"`
}

// Bytes returns Distributed + Reference.
func (n NodeUse) Bytes() int64 { return n.Distributed + n.Reference }

// citusReceiptTable is the Citus layout's receipt table (distributed by request ID), seen
// through the mint_receipt view.
const citusReceiptTable = "receipt"

// placementSize is what the command run on each shard placement returns (JSON).
type placementSize struct {
	Heap       int64 `json:"heap"`
	Maps       int64 `json:"maps"`
	TOAST      int64 `json:"toast"`
	TOASTIndex int64 `json:"toast_index"`
	Total      int64 `json:"total"`
	Rows       int64 `json:"rows"`
	Indexes    []struct {
		Name       string `json:"name"`
		Method     string `json:"method"`
		Primary    bool   `json:"primary"`
		Unique     bool   `json:"unique"`
		Definition string `json:"definition"`
		Bytes      int64  `json:"bytes"`
		Maps       int64  `json:"maps"`
	} `json:"indexes"`
}

// placementCommand measures one shard placement; run_command_on_placements puts the shard's
// name where %1$s stands (format()'s positional form, so it may stand more than once). ROWS is
// replaced by placementCommandFor: the shard's rows are counted only where the node's ARKs are
// wanted (the tables' exact counts come from the coordinator already).
const placementCommand = `select json_build_object(
	'heap', pg_relation_size('%1$s'::regclass, 'main'),
	'maps', pg_relation_size('%1$s'::regclass, 'fsm') + pg_relation_size('%1$s'::regclass, 'vm')
		+ pg_relation_size('%1$s'::regclass, 'init'),
	'toast', coalesce((select pg_table_size(reltoastrelid) from pg_class where oid = '%1$s'::regclass and reltoastrelid <> 0), 0),
	'toast_index', coalesce((select pg_indexes_size(reltoastrelid) from pg_class where oid = '%1$s'::regclass and reltoastrelid <> 0), 0),
	'total', pg_total_relation_size('%1$s'::regclass),
	'rows', ROWS,
	'indexes', coalesce((select json_agg(json_build_object('name', ic.relname, 'method', am.amname,
			'primary', i.indisprimary, 'unique', i.indisunique, 'definition', pg_get_indexdef(i.indexrelid),
			'bytes', pg_relation_size(i.indexrelid),
			'maps', pg_total_relation_size(i.indexrelid) - pg_relation_size(i.indexrelid)))
		from pg_index i join pg_class ic on ic.oid = i.indexrelid join pg_am am on am.oid = ic.relam
		where i.indrelid = '%1$s'::regclass), '[]'::json))`

// placementCommandFor returns placementCommand for table: counting the shard's rows for ark,
// reading 0 for every other table.
func placementCommandFor(table string) string {
	rows := "0"
	if table == TableARK {
		rows = "(select count(*) from %1$s)"
	}
	return strings.Replace(placementCommand, "ROWS", rows, 1)
}

// shardSuffix is the "_<shard id>" Citus appends to a table's or an index's name on a shard.
var shardSuffix = regexp.MustCompile(`_[0-9]+$`)

// citusTables returns the Citus tables of the current schema (name → "distributed" or
// "reference"); none when the database has no Citus.
func citusTables(ctx context.Context, q Querier) (map[string]string, error) {
	var has bool
	if err := q.QueryRow(ctx, `select to_regclass('pg_catalog.pg_dist_partition') is not null`).Scan(&has); err != nil {
		return nil, fmt.Errorf("measure: look for Citus: %w", err)
	}
	if !has {
		return nil, nil
	}
	rows, err := q.Query(ctx, `select c.relname::text, case when p.partmethod = 'n' then 'reference' else 'distributed' end
		from pg_dist_partition p join pg_class c on c.oid = p.logicalrelid join pg_namespace n on n.oid = c.relnamespace
		where n.nspname = current_schema()`)
	if err != nil {
		return nil, fmt.Errorf("measure: list Citus tables: %w", err)
	}
	out := map[string]string{}
	for rows.Next() {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			return nil, fmt.Errorf("measure: list Citus tables: %w", err)
		}
		out[name] = kind
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("measure: list Citus tables: %w", err)
	}
	return out, nil
}

// measurePlacements replaces the size of each Citus table in tables (which on the coordinator
// is its empty shell's) by the sum over every shard placement on every node: heap, maps, TOAST,
// each index (summed by its name without the shard suffix) and the total. It returns what each
// node holds, ordered by node. A reference table counts once per node holding a copy: that is
// what the disks hold.
func measurePlacements(ctx context.Context, q Querier, tables []TableSize, kinds map[string]string) ([]NodeUse, error) {
	nodes := map[string]*NodeUse{}
	for i := range tables {
		t := &tables[i]
		kind, ok := kinds[t.Name]
		if !ok {
			continue
		}
		rows, err := q.Query(ctx, `select nodename || ':' || nodeport, success, result
			from run_command_on_placements($1::regclass, $2)`, pgx.Identifier{t.Name}.Sanitize(), placementCommandFor(t.Name))
		if err != nil {
			return nil, fmt.Errorf("measure: shard placements of %s: %w", t.Name, err)
		}
		sum := TableSize{Name: t.Name, Rows: t.Rows}
		index := map[string]int{}
		err = func() error {
			defer rows.Close()
			for rows.Next() {
				var node, result string
				var success bool
				if err := rows.Scan(&node, &success, &result); err != nil {
					return err
				}
				if !success {
					return fmt.Errorf("on %s: %s", node, result)
				}
				var p placementSize
				if err := json.Unmarshal([]byte(result), &p); err != nil {
					return fmt.Errorf("on %s: %w", node, err)
				}
				sum.Heap += p.Heap
				sum.Maps += p.Maps
				sum.TOAST += p.TOAST
				sum.TOASTIndex += p.TOASTIndex
				sum.Total += p.Total
				for _, ix := range p.Indexes {
					name := shardSuffix.ReplaceAllString(ix.Name, "")
					k, seen := index[name]
					if !seen {
						k = len(sum.Indexes)
						index[name] = k
						sum.Indexes = append(sum.Indexes, IndexSize{Name: name, Method: ix.Method, Primary: ix.Primary,
							Unique: ix.Unique, Definition: ix.Definition})
					}
					sum.Indexes[k].Bytes += ix.Bytes
					sum.Indexes[k].Maps += ix.Maps
				}
				n := nodes[node]
				if n == nil {
					n = &NodeUse{Node: node}
					nodes[node] = n
				}
				n.Shards++
				if kind == "reference" {
					n.Reference += p.Total
				} else {
					n.Distributed += p.Total
				}
				if t.Name == TableARK {
					n.ARKs += p.Rows
				}
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("measure: shard placements of %s: %w", t.Name, err)
		}
		slices.SortFunc(sum.Indexes, func(a, b IndexSize) int { return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Name, b.Name)) })
		*t = sum
	}
	out := make([]NodeUse, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b NodeUse) int { return cmp.Compare(a.Node, b.Node) })
	return out, nil
}
