// Package ark implements ARK (Archival Resource Key) syntax for arkhe: parsing of
// both label forms and of resolver URLs, normalization for equality, the NAAN /
// shoulder / blade / qualifier anatomy, the NOID check character (NCDA) and
// blade drawing for minting.
//
// The package is pure: it does no I/O (apart from reading crypto/rand when
// drawing blades and shoulders) and keeps no mutable package-level state.
// The rules are those of the ARK specification (draft-kunze-ark) and the
// NOID manual's check-character algorithm (NCDA), with arkhe's choices where
// they leave one: widths and printed form, first-digit shoulders, check zones
// (docs/design.md).
//
// # Forms of the same ARK
//
//   - printed form, String: "ark:NAAN/Name" (modern label)
//   - ledger key, Key: "NAAN/Name" without label, at most 272 octets
//   - assigned name, ARK.Name: shoulder + blade (+ check character) + qualifier,
//     at most 255 octets
//
// # Shoulders and the leading slash
//
// A shoulder appears in two spellings and this package keeps them apart:
//
//   - bare form "x9": how a shoulder appears inside a Name. ARK.Shoulder,
//     MintName, AppendName and NewMinter use it (MintName, AppendName and
//     NewMinter also accept the stored form and strip its one leading slash,
//     because a normalized Name never starts with "/").
//   - stored form "/x9": how the ledger's shoulder table records it. IsMintableShoulder and RandomShoulder use it.
//
// StoredShoulder and BareShoulder convert between the two.
package ark
