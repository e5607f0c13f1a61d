package enginetest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// This file is the driver of the transaction scenarios (txn/testdata/periods
// and txn/testdata/erase): each command runs on the store and returns its
// output. It lives here, not in package txn's tests, so that the same
// scenarios run on every engine (Run).

// Periods runs one command of the periods scenarios (txn/testdata/periods;
// see TestPeriods there for the commands).
func Periods(db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "create":
		return "", createTable(db, d)
	case "put", "delete", "upsert", "deleteat":
		return runTxn(db, []*datadriven.TestData{d}, false)
	case "txn":
		ops, err := parseOps(d.Input)
		if err != nil {
			return "", err
		}
		return runTxn(db, ops, d.HasArg("fail"))
	case "get":
		return runGet(db, d, FmtVersion)
	case "versions":
		return runVersions(db, d)
	case "audit":
		return runAudit(db, d)
	case "erase":
		key, err := parseKey(db, arg(d, "table"), arg(d, "key"))
		if err != nil {
			return "", err
		}
		return runErase(db, arg(d, "table"), key, arg(d, "reason"))
	case "changes":
		return runChanges(db, d)
	case "bysk":
		return runBySK(db, d)
	case "erasures":
		return runErasures(db, d)
	case "raw":
		return runRaw(db, d)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// createTable runs a create command (parseTableDef's arguments).
func createTable(db *store.DB, d *datadriven.TestData) error {
	def, err := parseTableDef(d, store.TableDef{})
	if err != nil {
		return err
	}
	_, err = db.CreateTable(def)
	return err
}

// runTxn runs ops in one transaction and prints what each reports and what
// the commit wrote.
func runTxn(db *store.DB, ops []*datadriven.TestData, fail bool) (string, error) {
	c, reports, err := commitOps(db, ops, fail)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for i, r := range reports {
		if r != "" {
			fmt.Fprintf(&out, "%s: %s\n", ops[i].Cmd, r)
		}
	}
	if c.Tx == 0 {
		out.WriteString("nothing to commit\n")
	} else {
		fmt.Fprintf(&out, "committed tx %d: %d asserted, %d retired\n", c.Tx, c.Asserted, c.Retired)
	}
	return out.String(), nil
}

// commitOps runs the write commands ops (writeOp) in one transaction, which
// fail makes fail on purpose after them, and verifies the store. It returns
// the commit and what each operation reports.
func commitOps(db *store.DB, ops []*datadriven.TestData, fail bool) (txn.Commit, []string, error) {
	reports := make([]string, len(ops))
	c, err := txn.Update(db, func(tx *txn.Tx) error {
		for i, op := range ops {
			var err error
			if reports[i], err = writeOp(db, tx, op); err != nil {
				return err
			}
		}
		if fail {
			return errors.New("transaction failed on purpose")
		}
		return nil
	})
	if err != nil {
		return txn.Commit{}, nil, err
	}
	return c, reports, VerifyStore(db)
}

// writeOp runs one write command on tx: put, delete (from, to), upsert,
// deleteat (at) or erase (reason), with its attributes in op.Input. It
// returns what the operation reports: the upsert outcome, whether deleteat
// closed a version, "erased".
func writeOp(db *store.DB, tx *txn.Tx, op *datadriven.TestData) (string, error) {
	table := arg(op, "table")
	key, err := parseKey(db, table, arg(op, "key"))
	if err != nil {
		return "", err
	}
	switch op.Cmd {
	case "put", "upsert":
		attrs, err := parseAttrs(op.Input)
		if err != nil {
			return "", err
		}
		if op.Cmd == "upsert" {
			at, err := requiredTime(op, "at")
			if err != nil {
				return "", err
			}
			o, err := tx.Upsert(table, key, attrs, at)
			return o.String(), err
		}
		from, to, err := periodArgs(op)
		if err != nil {
			return "", err
		}
		return "", tx.Put(table, key, attrs, from, to)
	case "delete":
		from, to, err := periodArgs(op)
		if err != nil {
			return "", err
		}
		return "", tx.Delete(table, key, from, to)
	case "deleteat":
		at, err := requiredTime(op, "at")
		if err != nil {
			return "", err
		}
		closed, err := tx.DeleteAt(table, key, at)
		if !closed && err == nil {
			return "no version in effect", nil
		}
		return "closed", err
	case "erase":
		return "erased", tx.EraseFor(table, key, arg(op, "reason"))
	}
	return "", notationErrorf("unknown operation %q", op.Cmd)
}

// viewKey runs fn on a snapshot with the table and key (and its encoded
// tuple) that the command's table and key arguments name.
func viewKey(db *store.DB, d *datadriven.TestData, fn func(s *store.Snapshot, t *store.Table, key store.Key, tuple []byte) error) error {
	return txn.View(db, func(s *store.Snapshot) error {
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
		return fn(s, t, key, tuple)
	})
}

// runGet prints the version in effect at the command's valid and tx (render
// is the family's notation of it), or the miss reason.
func runGet(db *store.DB, d *datadriven.TestData, render func(store.Version) string) (string, error) {
	table := arg(d, "table")
	key, err := parseKey(db, table, arg(d, "key"))
	if err != nil {
		return "", err
	}
	at, err := asOfArg(d)
	if err != nil {
		return "", err
	}
	v, err := query.Get(db, table, key, at, query.GetOptions{Project: projectArg(d)})
	var miss *query.Miss
	if errors.As(err, &miss) {
		return "miss: " + miss.Reason.String() + "\n", nil
	}
	if err != nil {
		return "", err
	}
	return render(v) + "\n", nil
}

func runVersions(db *store.DB, d *datadriven.TestData) (string, error) {
	tx, err := timeArg(d, "tx", query.Latest)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	err = viewKey(db, d, func(s *store.Snapshot, t *store.Table, _ store.Key, tuple []byte) error {
		if tx == query.Latest {
			tx = s.LastTx()
		}
		vs, err := s.KeyVersions(t, tuple, tx)
		for _, v := range vs {
			out.WriteString(FmtVersion(v) + "\n")
		}
		if len(vs) == 0 {
			out.WriteString("no versions\n")
		}
		return err
	})
	return out.String(), err
}

func runAudit(db *store.DB, d *datadriven.TestData) (string, error) {
	var out strings.Builder
	err := viewKey(db, d, func(s *store.Snapshot, t *store.Table, _ store.Key, tuple []byte) error {
		recs, err := s.KeyRecords(t, tuple)
		for _, v := range recs {
			fmt.Fprintf(&out, "tx [%s, %s) %s\n", fmtTime(v.TxFrom), fmtTime(v.TxTo), FmtVersion(v))
		}
		return err
	})
	return out.String(), err
}

// FmtVersion renders a version as the scenarios print it.
func FmtVersion(v store.Version) string {
	s := fmt.Sprintf("[%s, %s) sk=%d {%s}", fmtTime(v.ValidFrom), fmtTime(v.ValidTo), v.SK, joinAttrs(v.Attrs, plainValue))
	if v.Inferred {
		s += " inferred"
	}
	return s
}

// Erase runs one command of the erasure scenarios (txn/testdata/erase; see
// TestEraseScenarios there for the commands).
func Erase(db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "apply":
		return runApply(db, d)
	case "events":
		return runEvents(db, d)
	}
	return Periods(db, d)
}

// runApply applies the event lines of an erase scenario (parseEvent, keys
// written with keySep) as one batch.
func runApply(db *store.DB, d *datadriven.TestData) (string, error) {
	t, err := db.Table(arg(d, "table"))
	if err != nil {
		return "", err
	}
	events, err := parseEvents(t, d.Input, keySep)
	if err != nil {
		return "", err
	}
	r, err := txn.Apply(db, t.Name, arg(d, "batch"), events)
	if err != nil {
		return "", err
	}
	if err := VerifyStore(db); err != nil {
		return "", err
	}
	if r.Replayed {
		return fmt.Sprintf("replayed: applied by tx %d\n", r.Tx), nil
	}
	return fmt.Sprintf("tx %d: accepted %d\n", r.Tx, r.Accepted), nil
}

func runEvents(db *store.DB, d *datadriven.TestData) (string, error) {
	var out strings.Builder
	err := viewKey(db, d, func(s *store.Snapshot, t *store.Table, _ store.Key, tuple []byte) error {
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
	if err := VerifyStore(db); err != nil {
		return "", err
	}
	return fmt.Sprintf("committed tx %d: erased\n", c.Tx), nil
}

// ErrCheck marks a driver's own check failing (store.Verify finding
// problems after a write, two read paths disagreeing): a failed test, never a
// scenario's expected output. WalkScenarios fails the test on it, so that
// -rewrite cannot record it as the expected output.
var ErrCheck = errors.New("enginetest: check failed")

// VerifyStore runs store.Verify and returns an error matching ErrCheck for a
// report with problems.
func VerifyStore(db *store.DB) error {
	rep, err := store.Verify(db)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("%w: verify: %s", ErrCheck, rep)
	}
	return nil
}

func runChanges(db *store.DB, d *datadriven.TestData) (string, error) {
	since, until, err := changesArgs(d)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for c, err := range query.Changes(db, arg(d, "table"), since, until, "", query.ChangesOptions{}) {
		if err != nil {
			return "", err
		}
		if c.Op == query.Erased {
			fmt.Fprintf(&out, "tx %d erased: %d records, reason %q, key hash %x...\n", c.Tx, c.Erasure.Records, c.Erasure.Reason, c.Erasure.KeyHash[:0])
			continue
		}
		fmt.Fprintf(&out, "tx %d %s %v %s\n", c.Tx, c.Op, c.Version.Key, FmtVersion(c.Version))
	}
	if out.Len() == 0 {
		out.WriteString("no changes\n")
	}
	return out.String(), nil
}

func runBySK(db *store.DB, d *datadriven.TestData) (string, error) {
	v, err := getBySK(db, d)
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
	return fmt.Sprintf("%v %s\n", v.Key, FmtVersion(v)), nil
}

// getBySK reads the version of the command's sk at its tx (latest when
// absent).
func getBySK(db *store.DB, d *datadriven.TestData) (store.Version, error) {
	sk, err := strconv.ParseUint(arg(d, "sk"), 10, 64)
	if err != nil {
		return store.Version{}, err
	}
	tx, err := timeArg(d, "tx", query.Latest)
	if err != nil {
		return store.Version{}, err
	}
	return query.GetBySK(db, arg(d, "table"), sk, tx, query.GetOptions{Project: projectArg(d)})
}

func runErasures(db *store.DB, d *datadriven.TestData) (string, error) {
	var out string
	err := viewKey(db, d, func(s *store.Snapshot, t *store.Table, key store.Key, _ []byte) error {
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
		for _, ks := range layout.PerTableKeyspaces() {
			n := 0
			pfx := layout.TablePrefix(ks, t.ID)
			for _, err := range s.RawScan(pfx, encoding.PrefixEnd(pfx)) {
				if err != nil {
					return err
				}
				n++
			}
			if n > 0 {
				fmt.Fprintf(&out, "%s: %d\n", layout.KeyspaceName(ks), n)
			}
		}
		return nil
	})
	return out.String(), err
}
