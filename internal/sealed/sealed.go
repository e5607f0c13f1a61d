// Package sealed holds Key, a value only the packages of this module can name.
// The store's low-level doors (store.DB.BeginWrite, the writer every write
// path of package txn builds on, and store.DB.RawWrite, which bypasses the
// layout for tests that plant damage) take a Key, so they are callable from
// txn, the tool and the tests, and not from a program that embeds bitempo:
// such a program writes through txn, whose transactions keep the invariants.
package sealed

// Key is the argument that opens a sealed door. Its zero value is the key.
type Key struct{}
