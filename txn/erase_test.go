package txn_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The erasure commands of the scenario files (periods and apply):
//
//	erase table=T key=K [reason=R]       one transaction that erases the key
//	changes table=T since=N [until=N]    the change feed of the window
//	bysk table=T sk=N [tx=N]             GetBySK
//	erasures table=T key=K               the transactions that erased the key
//	raw table=T                          how many keys each keyspace holds for the table
//
// (in a txn block, "erase table=T key=K" is an operation like the others).

// TestEraseScenarios runs the scenario files in testdata/erase with the
// commands of TestPeriods, the erasure commands above and
//
//	create ... kind=changes [group=a,b] [lateness=N]   create with a kind, a group index, a lateness horizon
//	apply table=T batch=B                 one Apply; lines "K @AT upsert name=value..." or "K @AT delete"
//	events table=T key=K                  the key's event log
//
// Transaction times come from a clock stuck at 0: commits get tx 1, 2, 3, ...
func TestEraseScenarios(t *testing.T) { walkScenarios(t, "testdata/erase", runEraseCmd) }

func runEraseCmd(db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "create":
		if arg(d, "kind") == "" && arg(d, "group") == "" && arg(d, "lateness") == "" {
			return "", createTable(db, d)
		}
		return "", createKindTable(db, d)
	case "apply":
		return runApply(db, d)
	case "events":
		return runEvents(db, d)
	}
	return runPeriodsCmd(db, d)
}

func createKindTable(db *store.DB, d *datadriven.TestData) error {
	def := store.TableDef{Name: arg(d, "table")}
	for _, col := range strings.Split(arg(d, "key"), ",") {
		name, typ, _ := strings.Cut(col, ":")
		kt, err := store.ParseKeyType(typ)
		if err != nil {
			return err
		}
		def.Key = append(def.Key, store.KeyColumn{Name: name, Type: kt})
	}
	if arg(d, "kind") == "changes" {
		def.Kind = store.Changes
	}
	if g := arg(d, "group"); g != "" {
		def.GroupBy = strings.Split(g, ",")
	}
	if l := arg(d, "lateness"); l != "" {
		def.Lateness = parseTime(l)
	}
	_, err := db.CreateTable(def)
	return err
}

func runApply(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	var events []txn.Event
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			return "", fmt.Errorf("bad event line %q", line)
		}
		key, err := parseKey(db, table, f[0])
		if err != nil {
			return "", err
		}
		e := txn.Event{Key: key, At: parseTime(strings.TrimPrefix(f[1], "@"))}
		if f[2] == "delete" {
			e.Op = txn.OpDelete
		} else {
			e.Op = txn.OpUpsert
			e.Attrs = parseAttrs(strings.Join(f[3:], "\n"))
		}
		events = append(events, e)
	}
	r, err := txn.Apply(db, table, arg(d, "batch"), events)
	if err != nil {
		return "", err
	}
	if err := verifyStore(db); err != nil {
		return "", err
	}
	if r.Replayed {
		return fmt.Sprintf("replayed: applied by tx %d\n", r.Tx), nil
	}
	return fmt.Sprintf("tx %d: accepted %d\n", r.Tx, r.Accepted), nil
}

func runEvents(db *store.DB, d *datadriven.TestData) (string, error) {
	var out strings.Builder
	err := txn.View(db, func(s *store.Snapshot) error {
		t, err := s.Table(arg(d, "table"))
		if err != nil {
			return err
		}
		key, err := parseKey(db, t.Name, arg(d, "key"))
		if err != nil {
			return err
		}
		tuple, err := t.AppendKey(nil, key)
		if err != nil {
			return err
		}
		if _, ok, err := s.Checkpoint(t, tuple); err != nil {
			return err
		} else if ok {
			out.WriteString("checkpoint\n")
		}
		for e, err := range s.KeyEvents(t, tuple, store.NegInfinity, store.NegInfinity) {
			if err != nil {
				return err
			}
			fmt.Fprintf(&out, "@%d %s\n", e.At, e.Op)
		}
		return nil
	})
	if out.Len() == 0 {
		out.WriteString("no events\n")
	}
	return out.String(), err
}

// runErase runs the erase command and verifies the store.
func runErase(db *store.DB, table string, key store.Key, reason string) (string, error) {
	c, err := txn.Update(db, func(tx *txn.Tx) error { return tx.EraseFor(table, key, reason) })
	if err != nil {
		return "", err
	}
	if err := verifyStore(db); err != nil {
		return "", err
	}
	return fmt.Sprintf("committed tx %d: erased\n", c.Tx), nil
}

func verifyStore(db *store.DB) error {
	rep, err := store.Verify(db)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("verify: %s", rep)
	}
	return nil
}

func runChanges(db *store.DB, d *datadriven.TestData) (string, error) {
	until := query.Latest
	if v := arg(d, "until"); v != "" {
		until = parseTime(v)
	}
	var out strings.Builder
	for c, err := range query.Changes(db, arg(d, "table"), parseTime(arg(d, "since")), until, "") {
		if err != nil {
			return "", err
		}
		if c.Op == query.Erased {
			fmt.Fprintf(&out, "tx %d erased: %d records, reason %q, key hash %x...\n", c.Tx, c.Erasure.Records, c.Erasure.Reason, c.Erasure.KeyHash[:0])
			continue
		}
		fmt.Fprintf(&out, "tx %d %s %v %s\n", c.Tx, c.Op, c.Version.Key, fmtVersion(c.Version))
	}
	if out.Len() == 0 {
		out.WriteString("no changes\n")
	}
	return out.String(), nil
}

func runBySK(db *store.DB, d *datadriven.TestData) (string, error) {
	sk, err := strconv.ParseUint(arg(d, "sk"), 10, 64)
	if err != nil {
		return "", err
	}
	v, err := query.GetBySK(db, arg(d, "table"), sk, txArg(d))
	var miss *query.SKMiss
	switch {
	case errors.As(err, &miss):
		kind := "unknown"
		switch {
		case errors.Is(err, query.ErrErasedSK):
			kind = "erased"
		case errors.Is(err, query.ErrRetiredSK):
			kind = "retired"
		}
		return fmt.Sprintf("miss (%s): %v\n", kind, err), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("%v %s\n", v.Key, fmtVersion(v)), nil
}

func runErasures(db *store.DB, d *datadriven.TestData) (string, error) {
	key, err := parseKey(db, arg(d, "table"), arg(d, "key"))
	if err != nil {
		return "", err
	}
	var out string
	err = txn.View(db, func(s *store.Snapshot) error {
		t, err := s.Table(arg(d, "table"))
		if err != nil {
			return err
		}
		txs, err := s.Erasures(t, key)
		out = fmt.Sprintf("erased at %v\n", txs)
		if len(txs) == 0 {
			out = "never erased\n"
		}
		return err
	})
	return out, err
}

// runRaw counts the table's keys per keyspace, so a scenario shows that an
// erasure left nothing but its own entries.
func runRaw(db *store.DB, d *datadriven.TestData) (string, error) {
	var out strings.Builder
	err := txn.View(db, func(s *store.Snapshot) error {
		t, err := s.Table(arg(d, "table"))
		if err != nil {
			return err
		}
		for _, ks := range store.Keyspaces()[2:] { // the per-table keyspaces
			n := 0
			pfx := encoding.AppendUint32([]byte{ks}, t.ID)
			for _, err := range s.RawScan(pfx, encoding.PrefixEnd(pfx)) {
				if err != nil {
					return err
				}
				n++
			}
			if n > 0 {
				fmt.Fprintf(&out, "%s: %d\n", store.KeyspaceName(ks), n)
			}
		}
		return nil
	})
	return out.String(), err
}

// TestEraseErrors: an erasure of a key the table never held is a typed error
// and writes nothing; a transaction may not erase a key and write it.
func TestEraseErrors(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "c", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	before := db.LastTx()
	_, err = txn.Update(db, func(tx *txn.Tx) error { return tx.Erase("c", store.Key{"nobody"}) })
	var ee *store.EraseError
	if !errors.Is(err, store.ErrUnknownKey) || !errors.As(err, &ee) || ee.Table != "c" {
		t.Fatalf("erase of an unknown key: %v", err)
	}
	if db.LastTx() != before || db.PurgePending() {
		t.Fatal("an erase of an unknown key wrote something")
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error { return tx.Put("c", store.Key{"a"}, store.Attrs{"x": 1}, 0, 10) }); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(tx *txn.Tx) error{
		"write then erase": func(tx *txn.Tx) error {
			if err := tx.Put("c", store.Key{"a"}, store.Attrs{"x": 2}, 0, 5); err != nil {
				return err
			}
			return tx.Erase("c", store.Key{"a"})
		},
		"erase then write": func(tx *txn.Tx) error {
			if err := tx.Erase("c", store.Key{"a"}); err != nil {
				return err
			}
			return tx.Put("c", store.Key{"a"}, store.Attrs{"x": 2}, 0, 5)
		},
		"erase twice": func(tx *txn.Tx) error {
			if err := tx.Erase("c", store.Key{"a"}); err != nil {
				return err
			}
			return tx.Erase("c", store.Key{"a"})
		},
	} {
		if _, err := txn.Update(db, fn); !errors.Is(err, txn.ErrErased) {
			t.Errorf("%s: %v, want txn.ErrErased", name, err)
		}
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error { return tx.Erase("c", store.Key{1}) }); !errors.Is(err, store.ErrKeyShape) {
		t.Errorf("erase of a malformed key: %v", err)
	}
	// A read before the erasure is fine.
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		if _, _, err := tx.Get("c", store.Key{"a"}, 3); err != nil {
			return err
		}
		return tx.Erase("c", store.Key{"a"})
	}); err != nil {
		t.Fatal(err)
	}
	if err := verifyStore(db); err != nil {
		t.Fatal(err)
	}
}
