package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// changeJSON is one entry of a change feed in answers: the record (null for
// an erasure, which keeps no key), or the erasure's count and reason, and the
// cursor that resumes the feed right after it.
type changeJSON struct {
	Tx            string       `json:"tx"`
	Op            string       `json:"op"`
	Record        *versionJSON `json:"record"`
	ErasedRecords *int         `json:"erased_records,omitempty"`
	ErasureReason *string      `json:"erasure_reason,omitempty"`
	Cursor        string       `json:"cursor"`
}

// GET /v1/tables/{table}/changes?since=TX&until=TX&cursor=C&limit=N: the
// change feed of the transactions in (since, until], as NDJSON, in commit
// order; since 0 (the default) starts at the first commit still held (after a
// vacuum, right after the table's retention horizon), until defaults to the
// latest commit. Each line carries the cursor that resumes the feed right
// after it: a consumer polls with the same since and the cursor of the last
// line it processed, and sees every change once. limit, when given, ends the
// answer after that many changes.
func (h *handler) changes(w http.ResponseWriter, r *http.Request) {
	t, err := h.db.Table(r.PathValue("table"))
	if err != nil {
		writeErr(w, err)
		return
	}
	since, err := param(r, "since", "0", cli.ParseSince)
	if err != nil {
		writeErr(w, err)
		return
	}
	until, err := param(r, "until", "latest", cli.ParseTx)
	if err != nil {
		writeErr(w, err)
		return
	}
	limit, err := limitParam(r, 0)
	if err != nil {
		writeErr(w, err)
		return
	}
	if since == 0 {
		if since, err = cli.TableHorizon(h.db, t); err != nil {
			writeErr(w, err)
			return
		}
	}
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(&deadlineWriter{w: w, deadline: deadline{rc.SetWriteDeadline, h.opts.WriteTimeout}}, 32<<10)
	enc := json.NewEncoder(bw)
	n := 0
	for c, err := range query.Changes(h.db, t.Name, since, until, r.URL.Query().Get("cursor"), query.ChangesOptions{}) {
		if err != nil {
			if n == 0 {
				writeErr(w, err)
				return
			}
			_ = enc.Encode(errorBody{Error: err.Error(), Code: codeOf(err)})
			break
		}
		if n == 0 {
			w.Header().Set("Content-Type", "application/x-ndjson")
		}
		n++
		if enc.Encode(changeOf(t, c)) != nil || r.Context().Err() != nil {
			return
		}
		if n == limit {
			break
		}
	}
	if n == 0 {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	_ = bw.Flush()
}

// limitParam reads the limit parameter, a positive integer (def when absent).
func limitParam(r *http.Request, def int) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, nil
	}
	limit, err := strconv.Atoi(s)
	if err != nil || limit <= 0 {
		return 0, &badRequest{"bitempo: limit: want a positive integer"}
	}
	return limit, nil
}

func changeOf(t *store.Table, c query.Change) changeJSON {
	out := changeJSON{Tx: cli.FormatTx(c.Tx), Op: c.Op.String(), Cursor: c.Cursor()}
	if c.Erasure != nil {
		out.ErasedRecords, out.ErasureReason = &c.Erasure.Records, &c.Erasure.Reason
		return out
	}
	v := versionOf(t, c.Version)
	out.Record = &v
	return out
}
