package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// readerRoles are the ledger roles that read every table (all but the key hashes): the commands
// that only read accept any of them.
func readerRoles() []string {
	return []string{ledger.RoleOperator, ledger.RoleWriter, ledger.RoleAuditor, ledger.RoleOwner}
}

// neededRoles is what each command declares it needs of a ledger with roles: the role kinds any
// of which lets it run, checked (ledger.CheckRole) as soon as the ledger is reached and before
// any work, so that a login without the role is told which role and how to grant it instead of
// a permission error part-way. known is false for a command this table does not list (a test
// walks every command). nil kinds: the command does not reach the ledger, or reaches its own
// clusters (bench), or works on any database (init before the ledger has roles; the ledger's own
// check applies then).
//
//   - owner: init (the migrations run as the owner role).
//   - operator: registration (naan, manager, shoulder, client add, set, retire, adopt, ...),
//     API keys (create, revoke), link-check exclusions.
//   - writer: mint, update, import, reconcile --apply, ark repoint and tombstone, linkcheck's run.
//   - auditor: verify (it appends audit summaries, which only the auditor may).
//   - resolver (or any role that reads): serve.
//   - any of them: what only reads (lists, ark show, reports, exports, sizing, reconcile without
//     --apply, import --dry-run).
func neededRoles(c *cli.Context) (kinds []string, known bool) {
	return rolesFor(commandPath(c), c.Bool)
}

// rolesFor is neededRoles of the command called path ("client key create"), whose switches
// flag reads.
func rolesFor(path string, flag func(name string) bool) (kinds []string, known bool) {
	switch path {
	case "init":
		return []string{ledger.RoleOwner}, true
	case "naan add", "manager add", "manager set", "manager succeed", "manager depart",
		"shoulder add", "shoulder adopt", "shoulder retire",
		"client add", "client set", "client disable", "client enable", "client key create", "client key revoke",
		"linkcheck exclude", "linkcheck include":
		return []string{ledger.RoleOperator}, true
	case "mint", "update", "ark repoint", "ark tombstone", "linkcheck":
		return []string{ledger.RoleWriter}, true
	case "import":
		if flag("dry-run") {
			return readerRoles(), true
		}
		return []string{ledger.RoleWriter}, true
	case "reconcile":
		if flag("apply") {
			return []string{ledger.RoleWriter}, true
		}
		return readerRoles(), true
	case "verify":
		return []string{ledger.RoleAuditor}, true
	case "serve":
		if flag("api") {
			return []string{ledger.RoleWriter}, true // the API mints and repoints
		}
		return append(readerRoles(), ledger.RoleResolver), true
	case "naan list", "manager list", "shoulder list", "client list", "client unknown", "client key list", "ark show",
		"linkcheck exclusions", "report changes", "report links", "report arks", "sizing",
		"export nginx", "export apache", "export n2t-dump", "export jsonl":
		return readerRoles(), true
	case "ark check", "db stop", "db url", "version", "completion",
		"bench mint", "bench import", "bench verify", "bench sizing", "bench linkcheck", "bench update", "bench resolve", "bench api":
		return nil, true
	}
	return nil, false
}

// commandPath is the command being run, without "arkhe" ("client key create").
func commandPath(c *cli.Context) string {
	var names []string
	for _, x := range c.Lineage() {
		if x.Command != nil && x.Command.Name != "" && x.Command.Name != c.App.Name {
			names = append(names, x.Command.Name)
		}
	}
	slices.Reverse(names)
	return strings.Join(names, " ")
}

// checkRole refuses, before any work, a session without a role the command needs (neededRoles).
func checkRole(c *cli.Context, l *ledger.Ledger) error {
	kinds, known := neededRoles(c)
	if !known {
		return fmt.Errorf("%s: no role is declared for this command (a defect of arkhe)", commandPath(c))
	}
	if err := l.CheckRole(c.Context, kinds...); err != nil {
		return fmt.Errorf("%s: %w", commandPath(c), err)
	}
	return nil
}
