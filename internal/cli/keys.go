package cli

import (
	"strings"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// keySelection is what the KEY... arguments of history and audit name: whole
// keys, in the order given, or the keys starting with a prefix.
type keySelection struct {
	keys   []store.Key
	prefix query.KeyRange // the keys starting with leading values; unused when keys are given
}

// parseKeySelection reads the KEY... arguments: as many values as the table
// has key columns name one key; a multiple of that, several keys, one after the
// other; fewer values, the keys starting with them; --prefix, the keys
// starting with its values, the last one as a string prefix (prefixRange).
func parseKeySelection(t *store.Table, args []string, prefix []string) (keySelection, error) {
	n := len(t.Key)
	switch {
	case len(prefix) > 0 && len(args) > 0:
		return keySelection{}, usagef("give KEY values or --prefix, not both")
	case len(prefix) > 0:
		kr, err := prefixRange(t, prefix)
		return keySelection{prefix: kr}, err
	case len(args) == 0:
		return keySelection{}, usagef("give the KEY values of table %s (%s), or --prefix", t.Name, keyColumnNames(t))
	case len(args) < n:
		pk, err := parsePrefixArgs(t, args)
		return keySelection{prefix: query.KeyRange{Prefix: pk}}, err
	case len(args)%n != 0:
		return keySelection{}, usagef("table %s has a key of %d columns (%s): give %d values per key, got %d values",
			t.Name, n, keyColumnNames(t), n, len(args))
	}
	var sel keySelection
	for i := 0; i < len(args); i += n {
		key, err := parseKeyArgs(t, args[i:i+n])
		if err != nil {
			return keySelection{}, err
		}
		sel.keys = append(sel.keys, key)
	}
	return sel, nil
}

func keyColumnNames(t *store.Table) string {
	names := make([]string, len(t.Key))
	for i, c := range t.Key {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// selectedKeys returns the keys of the selection that the table holds records
// of, in the order given or, for a prefix, in key order.
func selectedKeys(db *store.DB, t *store.Table, sel keySelection) ([]store.Key, error) {
	if sel.keys != nil {
		return sel.keys, nil
	}
	var keys []store.Key
	var last []byte
	for v, err := range query.HistoryRange(db, t.Name, sel.prefix, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
		if err != nil {
			return nil, err
		}
		if last == nil || string(v.Tuple()) != string(last) {
			keys = append(keys, v.Key)
			last = v.Tuple()
		}
	}
	return keys, nil
}

// prefixRange is the key range a --prefix flag names: the keys whose leading
// components equal the values given, the last one matched as a string prefix
// when its column is a string or bytes column (--prefix sku-1 selects sku-1,
// sku-10, sku-1a); an integer column still matches whole. No values: every
// key.
func prefixRange(t *store.Table, values []string) (query.KeyRange, error) {
	if len(values) == 0 {
		return query.KeyRange{}, nil
	}
	pk, err := parsePrefixArgs(t, values)
	if err != nil {
		return query.KeyRange{}, err
	}
	return query.KeyRange{Prefix: pk, StringPrefix: true}, nil
}
