package ledger

// ImportProbeSQL exposes importProbeSQL to the external tests (TestImportProbeIsIndexLookups).
const ImportProbeSQL = importProbeSQL
