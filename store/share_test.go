package store_test

import (
	"errors"
	"testing"

	"github.com/bitempo/bitempo/store"
)

// TestShareCloses checks that a share's Close leaves the store open for its
// owner, whose Close then closes it.
func TestShareCloses(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := db.Share(), db.Share()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "k", Type: store.String}}}); err != nil {
		t.Fatalf("after a share closed: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "u", Key: []store.KeyColumn{{Name: "k", Type: store.String}}}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("after the owner closed: %v", err)
	}
}
