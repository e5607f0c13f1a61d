package store

import (
	"github.com/bitempo/bitempo/encoding"
)

// Keyspace prefixes; the package doc describes each.
const (
	ksMeta    byte = 0x01
	ksCatalog byte = 0x02
	ksSK      byte = 0x03
	ksAttrs   byte = 0x04
	ksCurrent byte = 0x10
	ksHistory byte = 0x11
	ksSKIndex byte = 0x12
	ksTxLog   byte = 0x13
	ksEvents  byte = 0x20
	ksBatches byte = 0x21
	ksGroups  byte = 0x30
)

// formatVersion is the layout version written to meta "format". Open refuses a
// store with a larger one.
const formatVersion = 1

var (
	metaFormat    = []byte{ksMeta, 'f', 'o', 'r', 'm', 'a', 't'}
	metaLastTx    = []byte{ksMeta, 'l', 'a', 's', 't', '_', 't', 'x'}
	metaNextTable = []byte{ksMeta, 'n', 'e', 'x', 't', '_', 't', 'a', 'b', 'l', 'e'}
)

// tablePrefix returns ks | tid.
func tablePrefix(dst []byte, ks byte, tid uint32) []byte {
	return encoding.AppendUint32(append(dst, ks), tid)
}

// currentKey returns 0x10 | tid | tuple | desc(validFrom).
func currentKey(dst []byte, tid uint32, tuple []byte, validFrom int64) []byte {
	dst = tablePrefix(dst, ksCurrent, tid)
	dst = append(dst, tuple...)
	return encoding.AppendTimeDesc(dst, validFrom)
}

// historyKey returns 0x11 | tid | tuple | desc(validFrom) | desc(txFrom).
func historyKey(dst []byte, tid uint32, tuple []byte, validFrom, txFrom int64) []byte {
	dst = tablePrefix(dst, ksHistory, tid)
	dst = append(dst, tuple...)
	dst = encoding.AppendTimeDesc(dst, validFrom)
	return encoding.AppendTimeDesc(dst, txFrom)
}

// skIndexKey returns 0x12 | tid | sk | desc(txFrom).
func skIndexKey(dst []byte, tid uint32, sk uint64, txFrom int64) []byte {
	dst = tablePrefix(dst, ksSKIndex, tid)
	dst = encoding.AppendUint64(dst, sk)
	return encoding.AppendTimeDesc(dst, txFrom)
}

// txLogKey returns 0x13 | tid | asc(tx) | ordinal.
func txLogKey(dst []byte, tid uint32, tx int64, ordinal uint32) []byte {
	dst = tablePrefix(dst, ksTxLog, tid)
	dst = encoding.AppendTimeAsc(dst, tx)
	return encoding.AppendUint32(dst, ordinal)
}

func skCounterKey(tid uint32) []byte { return tablePrefix(nil, ksSK, tid) }

func catalogKey(name string) []byte { return append([]byte{ksCatalog}, name...) }

// attrNameKey returns 0x04 | tid | ordinal: the attribute names of a table in the
// order its writes first used them (tools print columns in that order).
func attrNameKey(tid uint32, ordinal uint32) []byte {
	return encoding.AppendUint32(tablePrefix(nil, ksAttrs, tid), ordinal)
}

// KeyspaceName names a keyspace prefix byte for dumps and reports.
func KeyspaceName(ks byte) string {
	switch ks {
	case ksMeta:
		return "meta"
	case ksCatalog:
		return "catalog"
	case ksSK:
		return "sk-counter"
	case ksAttrs:
		return "attr-names"
	case ksCurrent:
		return "current"
	case ksHistory:
		return "history"
	case ksSKIndex:
		return "sk-index"
	case ksTxLog:
		return "txlog"
	case ksEvents:
		return "events"
	case ksBatches:
		return "batches"
	case ksCheckpoints:
		return "checkpoints"
	case ksGroups:
		return "groups"
	}
	return "unknown"
}
