// Package localpg runs a local PostgreSQL cluster from the installed server binaries: the
// persistent embedded default that arkhe uses when no database URL is given, and the
// throw-away clusters of tests and benchmarks, a single node (StartCluster) or a Citus cluster
// of a coordinator and workers on one machine (StartCitus). A cluster listens on a Unix socket
// only, in a directory of its own, and drops to the postgres account when arkhe runs as root
// (initdb refuses root).
//
// The package knows nothing of the ledger's schema: it starts, reuses and stops servers and
// hands out connection strings.
package localpg
