package txn_test

import (
	"fmt"
	"log"
	"os"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// ExampleTx_ApplyByKey applies one CDC batch key by key, the way a batch
// too large for memory goes: the events come sorted by key (from an external
// sort, say; here a slice), each key's events are handed over together with
// their positions in the batch, and the transaction is flushed between keys,
// its writes spilling to disk and committing by ingestion. The result is the
// one Apply gives for the whole batch.
func ExampleTx_ApplyByKey() {
	dir, err := os.MkdirTemp("", "bitempo-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "accounts", Kind: store.Changes,
		Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		log.Fatal(err)
	}
	up := func(id string, at int64, status string) txn.Event {
		return txn.Event{Key: store.Key{id}, At: at, Op: txn.OpUpsert, Attrs: store.Attrs{"status": status}}
	}
	// The batch, already grouped by key in key order; pos is each event's
	// position in the feed (it orders errors, as Apply's event indexes do).
	keys := []struct {
		events []txn.Event
		pos    []int
	}{
		{[]txn.Event{up("a1", 30, "closed"), up("a1", 10, "open")}, []int{3, 0}},
		{[]txn.Event{up("b7", 20, "open"), {Key: store.Key{"b7"}, At: 40, Op: txn.OpDelete}}, []int{1, 2}},
	}
	var res txn.ApplyResult
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		if err := tx.SpillTo(dir, 64<<20); err != nil {
			return err
		}
		kb, err := tx.ApplyByKey("accounts", "feed-2024-06-01")
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := kb.Key(k.events, k.pos); err != nil {
				return err
			}
			if err := tx.Flush(); err != nil { // the key is done: let it go
				return err
			}
		}
		res, err = kb.Finish() // an invalid or too-late event fails here, and rolls back
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("accepted %d, inserted %d, tombstones %d\n", res.Accepted, res.Inserted, res.Tombstones)
	// Output:
	// accepted 4, inserted 3, tombstones 0
}
