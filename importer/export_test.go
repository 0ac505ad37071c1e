package importer

// ProbeSQL exposes probeSQL to the external tests (TestImportProbeIsIndexLookups).
const ProbeSQL = probeSQL
