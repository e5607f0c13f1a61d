package pebble

import (
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// This file reads Pebble's log files (the MANIFEST and the write-ahead logs)
// chunk by chunk, the way Pebble's record package does, to tell damage from a
// torn tail. Pebble cannot tell them apart in the logs bitempo writes: the
// format version bitempo pins (pebbleFormat) writes no sync offsets into WAL
// chunks, so Pebble takes any unreadable chunk for the end of the log and
// silently drops everything after it; and it reads a MANIFEST only up to its
// first unreadable record, then deletes every table file the shortened
// MANIFEST does not name. This scan runs before Pebble touches the directory.
//
// The format (github.com/cockroachdb/pebble/v2/record): the file is a sequence
// of 32 KiB blocks; a block holds chunks and ends with fewer than a header's
// bytes of zero padding; a chunk is a header (CRC-32C of the rest of the header
// and the payload, masked as Pebble's internal/crc does; payload length; chunk
// type; for the WAL's "recyclable" types, the log's number) and a payload; a
// record is one full chunk or a first, middles and a last chunk.

const (
	logBlockSize = 32 << 10
	legacyHeader = 7
	recyclHeader = legacyHeader + 4
	syncHeader   = recyclHeader + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is Pebble's record checksum.
func maskedCRC(b []byte) uint32 {
	c := crc32.Update(0, castagnoli, b)
	return (c>>15 | c<<17) + 0xa282ead8
}

// chunkAt is one parsed chunk header.
type chunkAt struct {
	pos      int    // offset of the header
	end      int    // offset just past the payload
	payload  []byte // the payload
	position byte   // 1 full, 2 first, 3 middle, 4 last
	logNum   uint32 // for recyclable and sync chunks
	hasNum   bool
}

// parseChunk reads the chunk whose header is at pos, in the block ending at
// blockEnd, of log want (0 for the MANIFEST). ok is false if the header or
// payload is invalid (wrong type, out of the block, checksum mismatch) or the
// chunk belongs to another log (c.hasNum and c.logNum != want).
func parseChunk(b []byte, pos, blockEnd int, want uint32) (c chunkAt, ok bool) {
	if pos+legacyHeader > blockEnd {
		return c, false
	}
	sum := binary.LittleEndian.Uint32(b[pos:])
	length := int(binary.LittleEndian.Uint16(b[pos+4:]))
	enc := b[pos+6]
	var header int
	switch {
	case enc >= 1 && enc <= 4:
		header, c.position = legacyHeader, enc
	case enc >= 5 && enc <= 8:
		header, c.position, c.hasNum = recyclHeader, enc-4, true
	case enc >= 9 && enc <= 12:
		header, c.position, c.hasNum = syncHeader, enc-8, true
	default:
		return c, false
	}
	if pos+header+length > blockEnd {
		return c, false
	}
	if c.hasNum {
		c.logNum = binary.LittleEndian.Uint32(b[pos+7:])
		if c.logNum != want {
			// An end-of-log trailer (the next log's number, no checksum) or
			// the remains of a recycled log: Pebble reads either as the end.
			return c, false
		}
	}
	if maskedCRC(b[pos+6:pos+header+length]) != sum {
		return c, false
	}
	c.pos, c.end, c.payload = pos, pos+header+length, b[pos+header:pos+header+length]
	return c, true
}

// logScan is what a scan of one log file found.
type logScan struct {
	size int
	// records is the number of complete records before the end or the damage;
	// goodEnd the offset just past the last of them.
	records int
	goodEnd int
	// damageAt is the offset of the first unreadable chunk (-1 if the file reads
	// to its end or to a clean end-of-log marker).
	damageAt int
	// validAfter: a readable chunk of this log lies after damageAt. Such a log
	// was damaged in place; a crash only ever tears its tail.
	validAfter bool
	// completeTail: the unreadable chunk's payload lies wholly within the file
	// and is not all zeros, which a torn write does not leave behind.
	completeTail bool
	// lost holds the records readable after the damage (from the first
	// record start found after it).
	lost [][]byte
}

// damaged reports whether the scan found damage rather than a torn tail.
// strictTail also counts a complete but unreadable last chunk as damage; that is
// right for the MANIFEST, which is synced record by record, and not for a WAL,
// whose unsynced tail a power loss may leave with any bytes.
func (s *logScan) damaged(strictTail bool) bool {
	return s.damageAt >= 0 && (s.validAfter || (strictTail && s.completeTail))
}

// scanLog scans the log file at path. logNum is the number of a WAL (0 for the
// MANIFEST, whose chunks carry none): chunks of another log (left in a recycled
// file) end the log. onRecord, if set, is called with every complete record
// before the damage.
func scanLog(fsys vfs.FS, path string, logNum uint32, onRecord func([]byte)) (*logScan, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return nil, err
	}
	s := &logScan{size: len(b), damageAt: -1}
	var rec []byte
	inRecord := false
	pos := 0
	for pos < len(b) {
		blockEnd := min((pos/logBlockSize+1)*logBlockSize, len(b))
		if blockEnd-pos < legacyHeader {
			pos = blockEnd // padding at the end of a block
			continue
		}
		if isZero(b[pos:min(pos+legacyHeader, blockEnd)]) {
			if isZero(b[pos:]) {
				return s, nil // preallocated or zeroed space: the end of the log
			}
			if blockEnd-pos < recyclHeader && isZero(b[pos:blockEnd]) {
				pos = blockEnd
				continue
			}
		}
		c, ok := parseChunk(b, pos, blockEnd, logNum)
		if !ok && c.hasNum && c.logNum != logNum {
			return s, nil // an end-of-log trailer or a recycled log's remains
		}
		if !ok {
			s.damageAt = pos
			s.completeTail = chunkComplete(b, pos, blockEnd)
			s.scanAfter(b, pos, blockEnd, logNum)
			return s, nil
		}
		switch c.position {
		case 1:
			rec, inRecord = c.payload, false
			s.records++
			s.goodEnd = c.end
			if onRecord != nil {
				onRecord(rec)
			}
		case 2:
			rec, inRecord = append([]byte(nil), c.payload...), true
		case 3, 4:
			if !inRecord { // a continuation without a start: damage
				s.damageAt = pos
				s.scanAfter(b, c.end, blockEnd, logNum)
				s.validAfter = true
				return s, nil
			}
			rec = append(rec, c.payload...)
			if c.position == 4 {
				inRecord = false
				s.records++
				s.goodEnd = c.end
				if onRecord != nil {
					onRecord(rec)
				}
			}
		}
		pos = c.end
	}
	return s, nil
}

// chunkComplete reports whether the header at pos claims a payload that lies
// within its block and the file, and the chunk is not all zeros.
func chunkComplete(b []byte, pos, blockEnd int) bool {
	if pos+legacyHeader > blockEnd {
		return false
	}
	length := int(binary.LittleEndian.Uint16(b[pos+4:]))
	end := pos + legacyHeader + length
	return end <= blockEnd && end <= len(b) && !isZero(b[pos:end])
}

// scanAfter looks for readable chunks of the log after an unreadable one at
// from: byte by byte in the rest of its block (where chunk boundaries are lost),
// then chunk by chunk from each later block's start. It sets validAfter and
// collects the records that can be reassembled.
func (s *logScan) scanAfter(b []byte, from, blockEnd int, logNum uint32) {
	var rec []byte
	inRecord := false
	take := func(c chunkAt) {
		s.validAfter = true
		switch c.position {
		case 1:
			s.lost = append(s.lost, c.payload)
			inRecord = false
		case 2:
			rec, inRecord = append([]byte(nil), c.payload...), true
		case 3, 4:
			if inRecord {
				rec = append(rec, c.payload...)
				if c.position == 4 {
					s.lost = append(s.lost, rec)
					inRecord = false
				}
			}
		}
	}
	pos := from + 1
	for ; pos+legacyHeader <= blockEnd; pos++ {
		if c, ok := parseChunk(b, pos, blockEnd, logNum); ok && !isZero(b[pos:c.end]) {
			take(c)
			pos = c.end
			break
		}
	}
	for pos < len(b) {
		end := min((pos/logBlockSize+1)*logBlockSize, len(b))
		if end-pos < legacyHeader {
			pos = end
			continue
		}
		c, ok := parseChunk(b, pos, end, logNum)
		if !ok || isZero(b[pos:c.end]) {
			pos = end // lost the thread in this block; resume at the next one
			inRecord = false
			continue
		}
		take(c)
		pos = c.end
	}
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
