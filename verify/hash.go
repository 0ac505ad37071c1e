package verify

import (
	"encoding/binary"
	"math/bits"
)

// hashTextExtended returns what PostgreSQL's hashtextextended(text, seed) returns (as the bits
// of its bigint) for s under a deterministic collation such as "C", which every identifier
// column of the ledger uses: hash_bytes_extended of src/common/hashfn.c,
// Bob Jenkins' lookup3 with a 64-bit seed, on a little-endian server. The audit computes the
// digest and the receipt comparison with it on the client, so the server only streams keys;
// TestHashTextExtended compares it with the server's.
func hashTextExtended(s []byte, seed uint64) uint64 {
	n := uint32(len(s))
	a := 0x9e3779b9 + n + 3923095
	b, c := a, a
	if seed != 0 {
		a += uint32(seed >> 32)
		b += uint32(seed)
		a, b, c = hashMix(a, b, c)
	}
	k := s
	for len(k) >= 12 {
		a += binary.LittleEndian.Uint32(k)
		b += binary.LittleEndian.Uint32(k[4:])
		c += binary.LittleEndian.Uint32(k[8:])
		a, b, c = hashMix(a, b, c)
		k = k[12:]
	}
	// the last 0-11 octets; the lowest octet of c is left for the length
	switch len(k) {
	case 11:
		c += uint32(k[10]) << 24
		fallthrough
	case 10:
		c += uint32(k[9]) << 16
		fallthrough
	case 9:
		c += uint32(k[8]) << 8
		fallthrough
	case 8:
		b += binary.LittleEndian.Uint32(k[4:])
		a += binary.LittleEndian.Uint32(k)
	case 7:
		b += uint32(k[6]) << 16
		fallthrough
	case 6:
		b += uint32(k[5]) << 8
		fallthrough
	case 5:
		b += uint32(k[4])
		fallthrough
	case 4:
		a += binary.LittleEndian.Uint32(k)
	case 3:
		a += uint32(k[2]) << 16
		fallthrough
	case 2:
		a += uint32(k[1]) << 8
		fallthrough
	case 1:
		a += uint32(k[0])
	}
	_, b, c = hashFinal(a, b, c)
	return uint64(b)<<32 | uint64(c)
}

// hashMix is lookup3's mix().
func hashMix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

// hashFinal is lookup3's final().
func hashFinal(a, b, c uint32) (uint32, uint32, uint32) {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return a, b, c
}
