package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/localpg"
)

// The test registration that `arkhe init --test-registration` (and `make run`) sets up: the shared
// test NAAN 99999, one manager, shoulder /x9 and a client that mints there.
const (
	testNAAN     = "99999"
	testManager  = "arkhe test manager"
	testShoulder = "/x9"
	testClient   = "test-minter"
)

func initCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "create or upgrade the ledger schema (idempotent; the only command that changes the schema); optionally its roles and the test NAAN 99999",
		Description: "Applies the migrations this arkhe knows (as the ledger's owner role once the ledger has roles). " +
			"--roles creates the least-privilege roles PREFIX+owner (DDL, migrations: only init), PREFIX+operator " +
			"(registration, keys), PREFIX+writer (mint, import, reconcile --apply, repoint, tombstone, through the " +
			"ledger's functions), PREFIX+auditor (reads everything, appends its own audit records) and PREFIX+resolver " +
			"(arkhe serve: reads only what resolution reads), hands the " +
			"ledger to the owner and grants the others; make logins members of them (grant arkhe_writer to alice). " +
			"It needs a superuser. --require-keys makes every writing command present the client's API key; it " +
			"cannot be undone.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "test-registration", Usage: "also register NAAN 99999, manager \"" + testManager + "\", shoulder " + testShoulder + " and client " + testClient + " if absent"},
			&cli.BoolFlag{Name: "roles", Usage: "create the ledger's least-privilege roles (owner, operator, writer, auditor, resolver) and grant them"},
			&cli.StringFlag{Name: "role-prefix", Value: ledger.DefaultRolePrefix, Usage: "prefix of the role names (roles are cluster-wide: one prefix per ledger that must not share them)"},
			&cli.BoolFlag{Name: "require-keys", Usage: "from now on, writing commands need the client's API key (--api-key-file or ARKHE_API_KEY); one-way"},
			&cli.BoolFlag{Name: "distributed", Usage: "insist on the Citus layout (tables distributed over the cluster; refused without the citus extension); by default it is chosen when the database has the citus extension"},
		},
		Action: func(c *cli.Context) error {
			l, err := openLedger(c, e, 2)
			if err != nil {
				return err
			}
			defer l.Close()
			layout := ledger.LayoutAuto
			if c.Bool("distributed") {
				layout = ledger.LayoutCitus
			}
			res, err := l.Init(c.Context, layout)
			if err != nil {
				return err
			}
			if len(res.Applied) == 0 {
				fmt.Fprintf(e.stdout, "ledger schema is current (version %d, layout %s); nothing changed\n", res.Current, res.Layout)
			}
			for _, m := range res.Applied {
				fmt.Fprintf(e.stdout, "applied migration %s (layout %s)\n", m.Name, res.Layout)
			}
			if c.Bool("test-registration") {
				if err := registerTest(c, e, l); err != nil {
					return err
				}
			}
			if c.Bool("roles") {
				r, err := l.InitRoles(c.Context, c.String("role-prefix"))
				if err != nil {
					return err
				}
				printRoles(e.stdout, r)
			}
			if c.Bool("require-keys") {
				changed, err := l.RequireKeys(c.Context)
				if err != nil {
					return err
				}
				if changed {
					fmt.Fprintln(e.stdout, "writing commands now need the client's API key (arkhe client key create CLIENT)")
				} else {
					fmt.Fprintln(e.stdout, "writing commands need the client's API key already; nothing changed")
				}
			}
			return nil
		},
	}
}

// printRoles says which roles the ledger has, which were created now, and what each may do.
func printRoles(w io.Writer, r ledger.InitRolesResult) {
	what := map[string]string{
		ledger.RoleOwner:    "owns the schema: arkhe init (migrations) only",
		ledger.RoleOperator: "registration: naan, manager, shoulder, client, client key",
		ledger.RoleWriter:   "mint, import, reconcile --apply, ark repoint, ark tombstone",
		ledger.RoleAuditor:  "verify, report, sizing: reads everything, appends its own audit records",
		ledger.RoleResolver: "serve: reads only what resolution reads",
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tSTATE\tFOR")
	for _, kind := range ledger.RoleKinds() {
		name, state := r.Roles.Name(kind), "granted"
		if slices.Contains(r.Created, name) {
			state = "created, granted"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, state, what[kind])
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "make logins members of them, e.g.: create role alice login in role %s\n", r.Roles.Writer)
}

// registerTest idempotently registers the test NAAN, manager, shoulder and client.
func registerTest(c *cli.Context, e *env, l *ledger.Ledger) error {
	ctx := c.Context
	if _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: testNAAN, Name: "ARK Alliance shared test NAAN", IsAuthoritative: true}); err != nil {
		return err
	}
	if _, err := l.AddManager(ctx, ledger.Manager{NAAN: testNAAN, Name: testManager, CommitmentLevel: "Not Guaranteed"}); err != nil {
		return err
	}
	hasShoulder, hasClient, err := l.Registered(ctx, testNAAN, testShoulder, testClient)
	if err != nil {
		return err
	}
	if !hasShoulder {
		if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: testNAAN, Shoulder: testShoulder, Manager: testManager}, 0); err != nil {
			return err
		}
		if err := l.SetDefaultShoulder(ctx, testNAAN, testManager, testShoulder); err != nil {
			return err
		}
	}
	if hasClient {
		fmt.Fprintf(e.stdout, "test registration present: NAAN %s, shoulder %s, client %s\n", testNAAN, testShoulder, testClient)
		return nil
	}
	if err := l.AddClient(ctx, ledger.Client{ClientID: testClient, NAAN: testNAAN, Manager: testManager, SubjectType: "machine",
		Authority: "manager", Scopes: []string{"ark:mint", "ark:update", "ark:tombstone", "ark:import", "ark:read"}}); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "registered test NAAN %s, manager %q, shoulder %s, client %s\n", testNAAN, testManager, testShoulder, testClient)
	return nil
}

func naanCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "naan",
		Usage: "register and list NAANs",
		Subcommands: []*cli.Command{
			newCommand(e, ledgerCmd[none]{
				Name: "add", Usage: "register a NAAN (one registered as asked already is left as it is)", Args: "NAAN",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "name", Usage: "organisation name"},
					&cli.BoolFlag{Name: "not-authoritative", Usage: "the NAAN is resolved elsewhere (set --redirect)"},
					&cli.StringFlag{Name: "redirect", Usage: "where to forward when not authoritative"},
					&cli.StringFlag{Name: "policy", Usage: "persistence statement URL or text"},
				},
				Run: func(c *cli.Context, e *env, l *ledger.Ledger, _ none) error {
					created, err := l.AddNAAN(c.Context, ledger.NAAN{NAAN: c.Args().First(), Name: c.String("name"),
						IsAuthoritative: !c.Bool("not-authoritative"), Redirect: c.String("redirect"), Policy: c.String("policy")})
					if err != nil {
						return err
					}
					fmt.Fprintf(e.stdout, "NAAN %s %s\n", c.Args().First(), createdWord(created))
					return nil
				},
			}),
			listCmd(e, "list", "list NAANs", "", nil, "NAAN\tNAME\tAUTHORITATIVE\tREDIRECT",
				func(c *cli.Context, l *ledger.Ledger) ([]ledger.NAAN, error) { return l.ListNAANs(c.Context) },
				func(n ledger.NAAN) string {
					return fmt.Sprintf("%s\t%s\t%t\t%s", n.NAAN, n.Name, n.IsAuthoritative, n.Redirect)
				}),
		},
	}
}

func managerCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "manager",
		Usage: "register, change, succeed and list managers (organisations holding shoulders)",
		Subcommands: []*cli.Command{
			newCommand(e, ledgerCmd[none]{
				Name: "add", Usage: "register a manager (one that exists is left as it is: manager set changes it)", Args: "NAME",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "naan", Required: true, Usage: "the NAAN (e.g. 12345)"},
					&cli.StringFlag{Name: "commitment", Usage: "NLM permanence rating: " + strings.Join(ledger.CommitmentLevels[:], " | ")},
					&cli.IntFlag{Name: "quota", Usage: "new mints per UTC day (0: no limit)"},
					&cli.StringFlag{Name: "default-shoulder", Usage: "a shoulder this manager holds, used when a mint names none (a new manager holds none yet: see shoulder add --default)"},
				},
				Run: func(c *cli.Context, e *env, l *ledger.Ledger, _ none) error {
					name := c.Args().First()
					created, err := l.AddManager(c.Context, ledger.Manager{NAAN: c.String("naan"), Name: name,
						CommitmentLevel: c.String("commitment"), QuotaPerDay: c.Int("quota"), DefaultShoulder: c.String("default-shoulder")})
					if err != nil {
						return err
					}
					fmt.Fprintf(e.stdout, "manager %q of NAAN %s %s\n", name, c.String("naan"), createdWord(created))
					return nil
				},
			}),
			managerSetCommand(e),
			managerSucceedCommand(e),
			managerDepartCommand(e),
			listCmd(e, "list", "list managers", "", naanFilter(),
				"NAAN\tMANAGER\tCOMMITMENT\tQUOTA/DAY\tDEFAULT SHOULDER\tSHOULDERS\tACTIVE\tSUCCESSION",
				func(c *cli.Context, l *ledger.Ledger) ([]ledger.Manager, error) {
					return l.ListManagers(c.Context, c.String("naan"))
				},
				func(m ledger.Manager) string {
					q := "-"
					if m.QuotaPerDay > 0 {
						q = fmt.Sprint(m.QuotaPerDay)
					}
					return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%t\t%s", m.NAAN, m.Name, m.CommitmentLevel, q, m.DefaultShoulder, m.Shoulders, m.Active, successionText(m))
				}),
		},
	}
}

func shoulderCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "shoulder",
		Usage: "register, retire and list shoulders",
		Subcommands: []*cli.Command{
			newCommand(e, ledgerCmd[none]{
				Name: "add", Usage: "register a shoulder (given, or drawn at random with --length; a given one registered as asked already is left as it is)", Args: "[/SHOULDER]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "naan", Required: true, Usage: "the NAAN (e.g. 12345)"},
					&cli.StringFlag{Name: "manager", Usage: "manager name holding it"},
					&cli.IntFlag{Name: "length", Value: 3, Usage: "characters after the slash when drawing at random (3 gives 3,610 shoulders per NAAN)"},
					&cli.StringFlag{Name: "status", Value: "active", Usage: "active | reserved | delegated"},
					&cli.StringFlag{Name: "check-zone", Value: "naan_name", Usage: "naan_name (the check character covers NAAN and name) | name_only (name only) | none"},
					&cli.IntFlag{Name: "blade-length", Value: 8, Usage: "betanumerics drawn per minted name, before the check character"},
					&cli.BoolFlag{Name: "default", Usage: "make it the manager's default mint target"},
				},
				Run: shoulderAdd,
			}),
			shoulderAdoptCommand(e),
			newCommand(e, ledgerCmd[none]{
				Name: "retire", Usage: "retire a shoulder for ever (it never mints again)", Args: "/SHOULDER",
				Flags: []cli.Flag{&cli.StringFlag{Name: "naan", Required: true, Usage: "the NAAN (e.g. 12345)"}},
				Run:   shoulderRetire,
			}),
			listCmd(e, "list", "list shoulders with minted counts and collisions", "", naanFilter(),
				"NAAN\tSHOULDER\tMANAGER\tSTATUS\tCHECK ZONE\tBLADE\tARKS\tDRAWS\tCOLLISIONS",
				func(c *cli.Context, l *ledger.Ledger) ([]ledger.Shoulder, error) {
					return l.ListShoulders(c.Context, c.String("naan"))
				},
				func(s ledger.Shoulder) string {
					blade := fmt.Sprint(s.BladeLength)
					if s.BladeTemplate != "" {
						blade += " " + s.BladeTemplate
					}
					return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d", s.NAAN, s.Shoulder, s.Manager, s.Status, s.CheckZone, blade, s.Minted, s.Draws, s.Collisions)
				}),
		},
	}
}

// shoulderAdd is `shoulder add`.
func shoulderAdd(c *cli.Context, e *env, l *ledger.Ledger, _ none) error {
	got, created, err := l.RegisterShoulder(c.Context, ledger.Shoulder{NAAN: c.String("naan"), Shoulder: c.Args().First(),
		Manager: c.String("manager"), Status: c.String("status"), CheckZone: c.String("check-zone"),
		BladeLength: c.Int("blade-length")}, c.Int("length"))
	if err != nil {
		return err
	}
	if !created {
		if c.Bool("default") {
			if err := isDefaultShoulder(c, l, got); err != nil {
				return err
			}
		}
		fmt.Fprintf(e.stdout, "shoulder %s of NAAN %s %s\n", got, c.String("naan"), createdWord(false))
		return nil
	}
	if c.Bool("default") {
		if err := l.SetDefaultShoulder(c.Context, c.String("naan"), c.String("manager"), got); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "shoulder %s of NAAN %s registered (ark:%s%s...)\n", got, c.String("naan"), c.String("naan"), got)
	return nil
}

// shoulderRetire is `shoulder retire`: it warns of the managers and clients that relied on the
// shoulder.
func shoulderRetire(c *cli.Context, e *env, l *ledger.Ledger, _ none) error {
	naan, shoulder := c.String("naan"), c.Args().First()
	changed, err := l.RetireShoulder(c.Context, naan, shoulder)
	if err != nil {
		return err
	}
	if !changed {
		fmt.Fprintf(e.stdout, "shoulder %s of NAAN %s was retired already\n", shoulder, naan)
		return nil
	}
	fmt.Fprintf(e.stdout, "shoulder %s of NAAN %s retired\n", shoulder, naan)
	managers, clients, err := l.ShoulderDependents(c.Context, naan, shoulder)
	if err != nil {
		return err
	}
	if len(managers) > 0 {
		fmt.Fprintf(e.stdout, "warning: %s is the default shoulder of %s %s; a mint that names no shoulder will be refused until another default is set (manager set --default-shoulder, or shoulder add --default)\n",
			shoulder, pluralWord(len(managers), "manager", "managers"), quoteJoin(managers))
	}
	if len(clients) > 0 {
		fmt.Fprintf(e.stdout, "warning: active %s %s %s pinned to %s and can no longer mint; register new clients for another shoulder\n",
			pluralWord(len(clients), "client", "clients"), strings.Join(clients, ", "), pluralWord(len(clients), "is", "are"), shoulder)
	}
	return nil
}

func clientCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "client",
		Usage: "register, change, list, disable and re-enable clients (who may mint where), and their API keys",
		Subcommands: []*cli.Command{
			newCommand(e, ledgerCmd[*time.Time]{
				Name: "add", Usage: "register a client (one registered as asked already is left as it is); --from-unknown takes CLIENT_ID from a subject of client unknown", Args: "[CLIENT_ID]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "naan", Required: true, Usage: "the NAAN (e.g. 12345)"},
					&cli.StringFlag{Name: "authority", Value: "manager", Usage: "system | naan | manager"},
					&cli.StringFlag{Name: "manager", Usage: "manager name (required for authority manager)"},
					&cli.StringFlag{Name: "shoulder", Usage: "pin the client to this shoulder"},
					&cli.StringSliceFlag{Name: "scope", Value: cli.NewStringSlice("ark:mint"), Usage: "ark:mint ark:update ark:tombstone ark:import ark:read (repeat)"},
					&cli.StringFlag{Name: "subject", Value: "machine", Usage: "machine | person"},
					&cli.StringFlag{Name: "expires", Usage: "expiry (RFC 3339 or date); required for authority naan"},
					&cli.Int64Flag{Name: "from-unknown", Usage: "register the subject of this ID of 'arkhe client unknown' (CLIENT_ID is then its subject, --subject person unless given)"},
					&cli.StringFlag{Name: "db-role", Usage: "bind the client to this database login role: only sessions of that role (or its members) may mint, import, repoint or tombstone as the client"},
				},
				Input: func(c *cli.Context) (*time.Time, error) {
					if c.Args().First() == "" && !c.IsSet("from-unknown") {
						return nil, usagef("client add: missing CLIENT_ID (arkhe client add --naan NAAN CLIENT_ID, or --from-unknown ID)")
					}
					return parseTime(c.String("expires"))
				},
				Run: func(c *cli.Context, e *env, l *ledger.Ledger, exp *time.Time) error {
					id, subject := c.Args().First(), c.String("subject")
					if c.IsSet("from-unknown") {
						u, found, err := l.UnknownSubjectByID(c.Context, c.Int64("from-unknown"))
						switch {
						case err != nil:
							return err
						case !found:
							return fmt.Errorf("client add: --from-unknown %d: no such unknown subject (arkhe client unknown lists them)", c.Int64("from-unknown"))
						case id != "" && id != u.Subject:
							return fmt.Errorf("client add: CLIENT_ID %q is not the subject %q of unknown subject %d", id, u.Subject, u.ID)
						}
						id = u.Subject
						if !c.IsSet("subject") {
							subject = "person"
						}
					}
					created, err := l.RegisterClient(c.Context, ledger.Client{ClientID: id, NAAN: c.String("naan"),
						Manager: c.String("manager"), SubjectType: subject, Authority: c.String("authority"),
						Shoulder: c.String("shoulder"), Scopes: c.StringSlice("scope"), ExpiresAt: exp, DBRole: c.String("db-role")})
					if err != nil {
						return err
					}
					fmt.Fprintf(e.stdout, "client %s %s\n", id, createdWord(created))
					return nil
				},
			}),
			clientSetCommand(e),
			clientActiveCommand(e, false),
			clientActiveCommand(e, true),
			clientKeyCommand(e),
			listCmd(e, "list", "list clients and their reach", "", naanFilter(),
				"CLIENT\tNAAN\tSUBJECT\tAUTHORITY\tMANAGER\tPINNED\tSCOPES\tACTIVE\tEXPIRES\tDB ROLE",
				func(c *cli.Context, l *ledger.Ledger) ([]ledger.Client, error) {
					return l.ListClients(c.Context, c.String("naan"))
				},
				func(cl ledger.Client) string {
					exp := "-"
					if cl.ExpiresAt != nil {
						exp = cl.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z")
					}
					return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s", cl.ClientID, cl.NAAN, cl.SubjectType, cl.Authority, cl.Manager,
						cl.Shoulder, strings.Join(cl.Scopes, " "), cl.Active, exp, orDash(cl.DBRole))
				}),
			listCmd(e, "unknown", "list the subjects whose OIDC token verified but that no client is registered as (NAAN-wide: a token does not say its NAAN); register one with client add --from-unknown ID", "", nil,
				"ID\tSUBJECT\tISSUER\tFIRST SEEN\tLAST SEEN\tSEEN\tADDRESS",
				func(c *cli.Context, l *ledger.Ledger) ([]ledger.UnknownSubject, error) {
					return l.ListUnknownSubjects(c.Context)
				},
				func(u ledger.UnknownSubject) string {
					addr := "-"
					if u.Addr.IsValid() {
						addr = u.Addr.String()
					}
					return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%d\t%s", u.ID, u.Subject, orDash(u.Issuer),
						u.FirstSeen.UTC().Format("2006-01-02T15:04:05Z"), u.LastSeen.UTC().Format("2006-01-02T15:04:05Z"), u.Seen, addr)
				}),
		},
	}
}

// orDash returns s, or "-" for "".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dbCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "db",
		Usage: "the embedded local cluster",
		Subcommands: []*cli.Command{
			{
				Name: "stop", Usage: "stop the embedded cluster (it starts again on demand)",
				Action: func(c *cli.Context) error {
					dataDir := c.String("data-dir")
					if dataDir == "" {
						d, err := localpg.DefaultDataDir()
						if err != nil {
							return err
						}
						dataDir = d
					}
					was, err := localpg.StopEmbedded(c.Context, dataDir)
					if err != nil {
						return err
					}
					if !was {
						fmt.Fprintf(e.stdout, "embedded cluster in %s was not running\n", dataDir)
						return nil
					}
					fmt.Fprintf(e.stdout, "embedded cluster in %s stopped\n", dataDir)
					return nil
				},
			},
			{
				Name: "url", Usage: "print the ledger's database URL (for psql)",
				Action: func(c *cli.Context) error {
					dataDir := c.String("data-dir")
					if dataDir == "" {
						d, err := localpg.DefaultDataDir()
						if err != nil {
							return err
						}
						dataDir = d
					}
					url, err := localpg.ResolveDatabase(c.Context, c.String("database-url"), dataDir, e.stderr)
					if err != nil {
						return err
					}
					fmt.Fprintln(e.stdout, url)
					return nil
				},
			},
		},
	}
}

// withLedger opens the ledger (openChecked), runs f and closes it.
func withLedger(c *cli.Context, e *env, f func(*ledger.Ledger) error) error {
	l, err := openChecked(c, e, 4)
	if err != nil {
		return err
	}
	defer l.Close()
	return f(l)
}

// withClient is withLedger for a writing command acting as clientID (openAsClient).
func withClient(c *cli.Context, e *env, clientID string, f func(*ledger.Ledger) error) error {
	l, err := openAsClient(c, e, 4, clientID)
	if err != nil {
		return err
	}
	defer l.Close()
	return f(l)
}

// isDefaultShoulder returns nil when shoulder is the default of the --manager of the --naan
// (shoulder add --default of a shoulder registered already), else a refusal: add never changes
// a registration.
func isDefaultShoulder(c *cli.Context, l *ledger.Ledger, shoulder string) error {
	ms, err := l.ListManagers(c.Context, c.String("naan"))
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Name == c.String("manager") {
			if m.DefaultShoulder == shoulder {
				return nil
			}
			return &ledger.RegistrationError{What: fmt.Sprintf("shoulder %s of NAAN %s", shoulder, c.String("naan")),
				Rule: fmt.Sprintf("is registered already, and manager %q's default shoulder is %s; nothing changed (`manager set --default-shoulder` changes it)",
					m.Name, orNoneWord(m.DefaultShoulder))}
		}
	}
	return &ledger.RegistrationError{What: fmt.Sprintf("shoulder %s of NAAN %s", shoulder, c.String("naan")),
		Rule: fmt.Sprintf("--default needs --manager, a manager of NAAN %s", c.String("naan"))}
}

// orNoneWord returns s, or "none" for "".
func orNoneWord(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func createdWord(created bool) string {
	if created {
		return "registered"
	}
	return "was registered already (unchanged)"
}

// pluralWord returns one when n is 1, else many (the noun alone, no count).
func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// quoteJoin quotes each name and joins them with ", ".
func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// clientActiveCommand is `client disable` (active false) or `client enable` (active true).
func clientActiveCommand(e *env, active bool) *cli.Command {
	name, usage, done := "disable", "stop a client from minting at once (its ARKs and receipts stay; client enable undoes it)", "disabled"
	if active {
		name, usage, done = "enable", "let a disabled client mint again, within its registered reach", "enabled"
	}
	return newCommand(e, ledgerCmd[none]{
		Name: name, Usage: usage, Args: "CLIENT_ID",
		Run: func(c *cli.Context, e *env, l *ledger.Ledger, _ none) error {
			id := c.Args().First()
			changed, err := l.SetClientActive(c.Context, id, active)
			if err != nil {
				return err
			}
			if changed {
				fmt.Fprintf(e.stdout, "client %s %s\n", id, done)
			} else {
				fmt.Fprintf(e.stdout, "client %s was %s already\n", id, done)
			}
			return nil
		},
	})
}

// clientKeyCommand is `client key create|list|revoke`: the API keys of machine clients.
func clientKeyCommand(e *env) *cli.Command {
	stamp := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	return &cli.Command{
		Name:  "key",
		Usage: "issue, list and revoke a machine client's API keys (a key is printed once; the ledger keeps its prefix and an Argon2id hash)",
		Subcommands: []*cli.Command{
			newCommand(e, ledgerCmd[none]{
				Name: "create", Usage: "issue CLIENT a new API key and print it, once", Args: "CLIENT_ID",
				Run: func(c *cli.Context, e *env, l *ledger.Ledger, _ none) error {
					k, err := l.CreateKey(c.Context, c.Args().First())
					if err != nil {
						return err
					}
					fmt.Fprintf(e.stderr, "API key for client %s (prefix %s); it is shown this once, store it now (e.g. in a file for --api-key-file, readable by its user only):\n", k.ClientID, k.Prefix)
					fmt.Fprintln(e.stdout, k.Key)
					return nil
				},
			}),
			listCmd(e, "list", "list API keys: prefix, client, created, last used, active", "[CLIENT_ID]", nil,
				"PREFIX\tCLIENT\tCREATED\tLAST USED\tACTIVE\tREVOKED\tLOCKED UNTIL\tARGON2ID",
				func(c *cli.Context, l *ledger.Ledger) ([]ledger.KeyInfo, error) {
					return l.ListKeys(c.Context, c.Args().First())
				},
				func(k ledger.KeyInfo) string {
					locked := (*time.Time)(nil)
					if k.LockedUntil != nil && k.LockedUntil.After(time.Now()) {
						locked = k.LockedUntil
					}
					return fmt.Sprintf("%s\t%s\t%s\t%s\t%t\t%s\t%s\t%s", k.Prefix, k.ClientID, stamp(&k.CreatedAt), stamp(k.LastUsedAt),
						k.Active, stamp(k.RevokedAt), stamp(locked), k.Params)
				}),
			newCommand(e, ledgerCmd[string]{
				Name: "revoke", Usage: "revoke an API key at once (its row is kept)", Args: "PREFIX",
				Input: func(c *cli.Context) (string, error) {
					prefix := c.Args().First()
					if p, _, err := ledger.ParseKey(prefix); err == nil {
						prefix = p // a whole key was given: name it by its prefix only
					}
					return prefix, nil
				},
				Run: func(c *cli.Context, e *env, l *ledger.Ledger, prefix string) error {
					changed, err := l.RevokeKey(c.Context, prefix)
					if err != nil {
						return err
					}
					if changed {
						fmt.Fprintf(e.stdout, "API key %s revoked\n", prefix)
					} else {
						fmt.Fprintf(e.stdout, "API key %s was revoked already\n", prefix)
					}
					return nil
				},
			}),
		},
	}
}
