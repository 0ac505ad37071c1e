// Package export writes the ledger in the forms that resolvers already running elsewhere read,
// so that a web server resolves arkhe's ARKs without arkhe: an nginx map with the configuration
// that turns it into redirects, an Apache RewriteMap text file with its RewriteRules, an N2T
// egg binder dump (`db_dump -p` print format, what `arkhe import n2t-dump` reads back), and JSON
// Lines (the columns of `arkhe report arks`).
//
// Every file is written under a temporary name beside its final path and renamed into place by
// a successful run (report.CreateTemp), and the ARKs are streamed from one query: the ledger is
// never held in memory. Each export ends with a [Watermark]; an export given a watermark
// ([Config.Since]) writes only the ARKs minted, imported or changed after it.
//
// # What each status becomes
//
// A public ARK with a target redirects to it (302, as N2T and arklet answer). A tombstone
// (status unavailable) answers 410 Gone. A reserved ARK is not resolvable: 404, as for a name
// the ledger does not hold (it was never published). A public ARK with an empty target should
// return its ERC description, which a map cannot hold: nginx sends it to the named location
// @arkhe_description, which answers 404 unless the operator points it at `arkhe serve`
// (proxy_pass); Apache answers 404. An inflection (`?`, `??`, `?info`, any query) goes to the
// same place in nginx: a map has no description to give. The binder dump carries every ARK:
// `_t` (empty for an empty target), `_is` for a status other than public (`reserved`,
// `unavailable | reason`), the ERC kernel who/what/when and the creation time `_,ec`. JSON Lines
// carries every ARK with all its columns.
//
// # Suffix passthrough
//
// A request for a name the ledger does not hold resolves through the longest registered ARK
// that is a prefix of it ending at a `/` or `.` boundary, the rest appended to that ARK's target
// (`ark:12345/x9abc/page/3.jpg` with `12345/x9abc` registered goes to its target + `/page/3.jpg`).
// The nginx and Apache configurations strip the last component up to [SuffixLevels] times,
// one map lookup each: a registered ARK more than SuffixLevels components above the request is
// not found.
//
// # Forwarding
//
// A NAAN that is not authoritative and has a redirect, and a shoulder with a redirect, are
// written as their own rules (nginx maps, Apache RewriteRules), consulted when no registered ARK
// matches: shoulders first (the longest first), then NAANs. The redirect is a template: `${pid}`
// stands for `ark:/NAAN/name`, `${content}` for `NAAN/name`, `${value}` for the name; a redirect
// without any of them gets `ark:NAAN/name` appended (the requested name with its suffix). The
// binder dump and JSON Lines hold ARKs only. Forwarding rules are always written in full, also
// with a watermark.
//
// # What nginx and Apache do not normalize
//
// The rules match the request as sent, after the label (`ark:/` or `ark:`, any case) and
// trailing `/` and `.`: the ledger's other normalizations (hyphens removed, the NAAN lowercased,
// `%hh` uppercased, `//` collapsed) are not done, so such a spelling is not found (404, or a
// forward). Apache matches the decoded path, so an ARK holding `%hh` is not found there.
package export
