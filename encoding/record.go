package encoding

// Record flags.
const (
	// FlagInferred marks a placeholder version created for a key that was unknown
	// when a fact referenced it (a late-arriving dimension member).
	FlagInferred uint8 = 1 << 0
)

// RecordValue is the value half of a stored record; the key half (table, natural
// key, valid_from and, for retired records, tx_from) lives in the Pebble key.
//
// A current record (TxTo open) is stored with the number of the commit that
// asserted it, not that commit's time: TxCommit. Encoders of a current record
// write TxCommit and ignore TxFrom; decoders of one return TxCommit and leave
// TxFrom 0 for the store to map the number to its time. A retired record
// holds times only, and TxCommit is 0.
type RecordValue struct {
	ValidTo  int64  // exclusive end of the valid period; math.MaxInt64 when open
	TxFrom   int64  // transaction that asserted the record
	TxTo     int64  // transaction that retired it; math.MaxInt64 while current
	TxCommit uint64 // of a current record: the number of the commit that asserted it
	SK       uint64 // surrogate key of the version
	Flags    uint8  // FlagInferred, ...
	Attrs    Attrs
}
