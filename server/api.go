package server

import (
	"bufio"
	"encoding/json"
	"net/http"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// tableJSON describes a table in answers.
type tableJSON struct {
	Name    string          `json:"name"`
	Kind    string          `json:"kind"`
	Axis    string          `json:"axis"`
	Key     []keyColumnJSON `json:"key"`
	Attrs   []string        `json:"attrs"`
	GroupBy []string        `json:"group_by,omitempty"`
}

type keyColumnJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func (h *handler) tableJSON(t *store.Table) tableJSON {
	tj := tableJSON{Name: t.Name, Kind: t.Kind.String(), Axis: t.Axis.String(), Attrs: h.db.AttrNames(t), GroupBy: t.GroupBy}
	if tj.Attrs == nil {
		tj.Attrs = []string{}
	}
	for _, c := range t.Key {
		tj.Key = append(tj.Key, keyColumnJSON{Name: c.Name, Type: c.Type.String()})
	}
	return tj
}

// versionJSON is a version or record in answers: times as the tool prints
// them, null for an open end.
type versionJSON struct {
	Key       []any       `json:"key"`
	ValidFrom *string     `json:"valid_from"`
	ValidTo   *string     `json:"valid_to"`
	TxFrom    *string     `json:"tx_from"`
	TxTo      *string     `json:"tx_to"`
	SK        uint64      `json:"sk"`
	Attrs     store.Attrs `json:"attrs"`
}

func versionOf(t *store.Table, v store.Version) versionJSON {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	attrs := v.Attrs
	if attrs == nil {
		attrs = store.Attrs{}
	}
	return versionJSON{
		Key:       []any(v.Key),
		ValidFrom: opt(cli.FormatValid(t, v.ValidFrom)), ValidTo: opt(cli.FormatValid(t, v.ValidTo)),
		TxFrom: opt(cli.FormatTx(v.TxFrom)), TxTo: opt(cli.FormatTx(v.TxTo)),
		SK: v.SK, Attrs: attrs,
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// GET /v1/tables: every table.
func (h *handler) tables(w http.ResponseWriter, r *http.Request) {
	out := []tableJSON{}
	for _, t := range h.db.Tables() {
		out = append(out, h.tableJSON(t))
	}
	writeJSON(w, map[string]any{"tables": out})
}

// GET /v1/tables/{table}: one table's definition.
func (h *handler) describe(w http.ResponseWriter, r *http.Request) {
	t, err := h.db.Table(r.PathValue("table"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, h.tableJSON(t))
}

// GET /v1/stats: the store's tables and last transaction.
func (h *handler) stats(w http.ResponseWriter, r *http.Request) {
	var last *string
	if s := cli.FormatTx(h.db.LastTx()); s != "" && h.db.LastTx() != 0 {
		last = &s
	}
	writeJSON(w, map[string]any{
		"tables": len(h.db.Tables()), "last_tx": last, "engine": h.db.EngineName(), "read_only": h.db.ReadOnly(),
	})
}

// keyOf reads the table and the key=... parameters (one per key column) of r.
func (h *handler) keyOf(r *http.Request) (*store.Table, store.Key, error) {
	t, err := h.db.Table(r.PathValue("table"))
	if err != nil {
		return nil, nil, err
	}
	key, err := cli.ParseKey(t, r.URL.Query()["key"])
	if err != nil {
		return nil, nil, &badRequest{"bitempo: key: " + err.Error()}
	}
	return t, key, nil
}

// param parses a time parameter with parse, naming it in the error.
func param(r *http.Request, name, def string, parse func(string) (int64, error)) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		s = def
	}
	v, err := parse(s)
	if err != nil {
		return 0, &badRequest{"bitempo: " + name + ": " + err.Error()}
	}
	return v, nil
}

// GET /v1/tables/{table}/get?key=K...&valid=V&tx=T: the version in effect at
// valid V as known at T (defaults: now, the latest commit).
func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	t, key, err := h.keyOf(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	at, err := asOf(r, t)
	if err != nil {
		writeErr(w, err)
		return
	}
	v, err := query.Get(h.db, t.Name, key, at, query.GetOptions{})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, versionOf(t, v))
}

// GET /v1/tables/{table}/history?key=K...&tx=T&from=V&to=V: the key's
// versions as known at T, as NDJSON.
func (h *handler) history(w http.ResponseWriter, r *http.Request) {
	t, key, err := h.keyOf(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	parseValid := func(s string) (int64, error) { return cli.ParseValid(t, s) }
	from, to := store.NegInfinity, store.Infinity
	if r.URL.Query().Has("from") {
		if from, err = param(r, "from", "", parseValid); err != nil {
			writeErr(w, err)
			return
		}
	}
	if r.URL.Query().Has("to") {
		if to, err = param(r, "to", "", parseValid); err != nil {
			writeErr(w, err)
			return
		}
	}
	tx, err := param(r, "tx", "latest", cli.ParseTx)
	if err != nil {
		writeErr(w, err)
		return
	}
	h.stream(w, r, t, query.History(h.db, t.Name, key, from, to, query.HistoryOptions{Tx: tx}))
}

// GET /v1/tables/{table}/scan?valid=V&tx=T: the version of every key in
// effect at V as known at T, in key order, as NDJSON.
func (h *handler) scan(w http.ResponseWriter, r *http.Request) {
	t, err := h.db.Table(r.PathValue("table"))
	if err != nil {
		writeErr(w, err)
		return
	}
	at, err := asOf(r, t)
	if err != nil {
		writeErr(w, err)
		return
	}
	h.stream(w, r, t, query.Snapshot(h.db, t.Name, at, query.KeyRange{}, query.SnapshotOptions{}))
}

// asOf reads the valid and tx parameters of a point read (defaults: now, the
// latest commit), on table t's axis.
func asOf(r *http.Request, t *store.Table) (query.AsOf, error) {
	valid, err := param(r, "valid", "now", func(s string) (int64, error) { return cli.ParseValid(t, s) })
	if err != nil {
		return query.AsOf{}, err
	}
	tx, err := param(r, "tx", "latest", cli.ParseTx)
	return query.AsOf{Valid: valid, Tx: tx}, err
}

// GET /v1/tables/{table}/audit?key=K...: every record of the key, with both
// periods, as NDJSON.
func (h *handler) audit(w http.ResponseWriter, r *http.Request) {
	t, key, err := h.keyOf(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	h.stream(w, r, t, query.Audit(h.db, t.Name, key, query.AuditOptions{}))
}

// stream writes versions as NDJSON, one line each, flushing as it goes. An
// error before the first line is the answer; one after it is a last line
// {"error": ..., "code": ...}.
func (h *handler) stream(w http.ResponseWriter, r *http.Request, t *store.Table, seq func(func(store.Version, error) bool)) {
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(&deadlineWriter{w: w, deadline: deadline{rc.SetWriteDeadline, h.opts.WriteTimeout}}, 32<<10)
	enc := json.NewEncoder(bw)
	started := false
	for v, err := range seq {
		if err != nil {
			if !started {
				writeErr(w, err)
				return
			}
			_ = enc.Encode(errorBody{Error: err.Error(), Code: codeOf(err)})
			break
		}
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			started = true
		}
		if enc.Encode(versionOf(t, v)) != nil || r.Context().Err() != nil {
			return
		}
	}
	if !started {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	_ = bw.Flush()
}

// codeOf names err's sentinel.
func codeOf(err error) string {
	_, code := classify(err)
	return code
}

// GET /v1/tables/{table}/keys?after=K...&limit=N: the table's keys in key
// order, a page at a time; next holds the after= of the next page.
func (h *handler) keys(w http.ResponseWriter, r *http.Request) {
	t, err := h.db.Table(r.PathValue("table"))
	if err != nil {
		writeErr(w, err)
		return
	}
	limit, err := limitParam(r, 100)
	if err != nil {
		writeErr(w, err)
		return
	}
	keys, next, err := h.keysAfter(t, r.URL.Query()["after"], limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([][]any, len(keys))
	for i, k := range keys {
		out[i] = []any(k)
	}
	var nextJSON []any
	if next != nil {
		nextJSON = []any(next)
	}
	writeJSON(w, map[string]any{"keys": out, "next": nextJSON})
}

// keysAfter returns up to limit keys after the key after (none: from the
// first), and the last of them when more follow.
func (h *handler) keysAfter(t *store.Table, after []string, limit int) (keys []store.Key, next store.Key, err error) {
	kr := query.KeyRange{}
	var start store.Key
	if len(after) > 0 {
		if start, err = cli.ParseKey(t, after); err != nil {
			return nil, nil, &badRequest{"bitempo: after: " + err.Error()}
		}
		kr.Start = start
	}
	var last []byte
	opts := query.HistoryOptions{Project: []string{"\x00"}} // decode no attribute
	for v, err := range query.HistoryRange(h.db, t.Name, kr, store.NegInfinity, store.Infinity, opts) {
		if err != nil {
			return nil, nil, err
		}
		if string(v.Tuple()) == string(last) || (start != nil && len(keys) == 0 && last == nil && sameKey(v.Key, start)) {
			last = v.Tuple()
			continue
		}
		if len(keys) == limit {
			return keys, keys[len(keys)-1], nil
		}
		last = v.Tuple()
		keys = append(keys, v.Key)
	}
	return keys, nil, nil
}

func sameKey(a, b store.Key) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalComponent(a[i], b[i]) {
			return false
		}
	}
	return true
}
