package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/bitempo/bitempo/internal/wire"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// DefaultMaxBody is the largest request body (a command's uploaded files and
// standard input) when Options.MaxBody is zero.
const DefaultMaxBody = 1 << 30

// Access is what a bearer token lets a client do.
type Access uint8

const (
	// Read runs reads only: a command that writes fails with store.ErrReadOnly.
	Read Access = iota + 1
	// Write runs every command.
	Write
)

// Token is one bearer token a client may present.
type Token struct {
	Value  string
	Access Access
}

// Options configure Handler.
type Options struct {
	// Name is what the tool's messages call the store (as --db names it
	// locally); the store's directory when empty.
	Name string
	// Tokens, when not empty, are the only bearer tokens accepted; with none,
	// every request may write (a loopback listener's default).
	Tokens []Token
	// MaxBody bounds a request body in bytes; DefaultMaxBody when zero.
	MaxBody int64
	// ReadTimeout and WriteTimeout, when positive, bound how long a request
	// waits for its client to send the next piece of its body or to take the
	// next piece of the answer; a stalled client is cut off and its command
	// cancelled (a load rolls back).
	ReadTimeout, WriteTimeout time.Duration
	// TempDir holds each command's stand-ins for its client's files; the
	// system's temporary directory when empty.
	TempDir string
	// BasePath is where the handler is mounted on the service's mux (as
	// "/bitempo", with http.StripPrefix): the pages' links start with it.
	BasePath string
}

// Handler returns the HTTP handler that serves db: the tool's commands at
// /v1/run, the JSON API under /v1/, and the pages under /. It never closes
// db; the caller closes it once the handler has stopped serving (after
// http.Server.Shutdown).
func Handler(db *store.DB, opts Options) http.Handler {
	if opts.Name == "" {
		opts.Name = db.Dir()
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	opts.BasePath = strings.TrimRight(opts.BasePath, "/")
	h := &handler{db: db, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+wire.Path, h.run)
	mux.HandleFunc("GET /v1/tables", h.tables)
	mux.HandleFunc("GET /v1/tables/{table}", h.describe)
	mux.HandleFunc("GET /v1/tables/{table}/get", h.get)
	mux.HandleFunc("GET /v1/tables/{table}/history", h.history)
	mux.HandleFunc("GET /v1/tables/{table}/audit", h.audit)
	mux.HandleFunc("GET /v1/tables/{table}/scan", h.scan)
	mux.HandleFunc("GET /v1/tables/{table}/keys", h.keys)
	mux.HandleFunc("GET /v1/tables/{table}/changes", h.changes)
	mux.HandleFunc("GET /v1/stats", h.stats)
	mux.HandleFunc("GET /{$}", h.indexPage)
	mux.HandleFunc("GET /table/{table}", h.tablePage)
	mux.HandleFunc("GET /table/{table}/key/{key...}", h.keyPage)
	mux.HandleFunc("GET /table/{table}/svg/{key...}", h.keySVG)
	mux.HandleFunc("/", h.noRoute)
	h.mux = mux
	return h
}

// handler serves one store.
type handler struct {
	db   *store.DB
	opts Options
	mux  *http.ServeMux
}

// accessKey is the request context's key of the request's Access.
type accessKey struct{}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	access, ok := h.authorize(w, r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="bitempo"`)
		writeError(w, http.StatusUnauthorized, "ErrUnauthorized", "bitempo: a valid bearer token is required (Authorization: Bearer TOKEN)")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBody)
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accessKey{}, access)))
}

// tokenCookie carries a token given once as ?token= to a browser's later
// requests (pages and their fetches).
const tokenCookie = "bitempo_token"

// authorize finds the request's token: the Authorization header, else the
// cookie or the token query parameter (which sets the cookie).
func (h *handler) authorize(w http.ResponseWriter, r *http.Request) (Access, bool) {
	if len(h.opts.Tokens) == 0 {
		return Write, true
	}
	tok, fromQuery := "", false
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, value, _ := strings.Cut(auth, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return 0, false
		}
		tok = strings.TrimSpace(value)
	} else if c, err := r.Cookie(tokenCookie); err == nil {
		tok = c.Value
	} else if q := r.URL.Query().Get("token"); q != "" {
		tok, fromQuery = q, true
	}
	access := Access(0)
	for _, t := range h.opts.Tokens {
		// Every token is compared, so the time taken does not say which matched.
		if subtle.ConstantTimeCompare([]byte(t.Value), []byte(tok)) == 1 && tok != "" {
			access = max(access, t.Access)
		}
	}
	if access == 0 {
		return 0, false
	}
	if fromQuery {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	}
	return access, true
}

// requestAccess is what the request's token lets it do.
func requestAccess(r *http.Request) Access {
	a, _ := r.Context().Value(accessKey{}).(Access)
	return a
}

// errorBody is the JSON of every refused request.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: msg, Code: code})
}

// sentinels name the library's errors in answers, with their HTTP status.
// The first one err matches wins: a Miss matches its reason's sentinel.
var sentinels = []struct {
	err    error
	code   string
	status int
}{
	{store.ErrUnknownTable, "ErrUnknownTable", http.StatusNotFound},
	{query.ErrUnknownKey, "ErrUnknownKey", http.StatusNotFound},
	{store.ErrUnknownKey, "ErrUnknownKey", http.StatusNotFound},
	{query.ErrBeforeFirst, "ErrBeforeFirst", http.StatusNotFound},
	{query.ErrInGap, "ErrInGap", http.StatusNotFound},
	{query.ErrAfterLast, "ErrAfterLast", http.StatusNotFound},
	{query.ErrNotFound, "ErrNotFound", http.StatusNotFound},
	{query.ErrUnknownSK, "ErrUnknownSK", http.StatusNotFound},
	{store.ErrKeyShape, "ErrKeyShape", http.StatusBadRequest},
	{store.ErrInvalidPeriod, "ErrInvalidPeriod", http.StatusBadRequest},
	{query.ErrBadCursor, "ErrBadCursor", http.StatusBadRequest},
	{txn.ErrWrongKind, "ErrWrongKind", http.StatusBadRequest},
	{wire.ErrFrame, "ErrFrame", http.StatusBadRequest},
	{store.ErrLocked, "ErrLocked", http.StatusConflict},
	{store.ErrTableExists, "ErrTableExists", http.StatusConflict},
	{store.ErrReadOnly, "ErrReadOnly", http.StatusForbidden},
	{store.ErrTooLarge, "ErrTooLarge", http.StatusRequestEntityTooLarge},
	{store.ErrBeforeHorizon, "ErrBeforeHorizon", http.StatusGone},
	{store.ErrClosed, "ErrClosed", http.StatusServiceUnavailable},
}

// writeErr answers with err, named by its sentinel.
func writeErr(w http.ResponseWriter, err error) {
	status, code := classify(err)
	writeError(w, status, code, err.Error())
}

// classify returns the HTTP status and the code of err: the name of the
// library's sentinel it wraps.
func classify(err error) (int, string) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge, "ErrTooLarge"
	}
	var bad *badRequest
	if errors.As(err, &bad) {
		return http.StatusBadRequest, "ErrBadRequest"
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.status, s.code
		}
	}
	return http.StatusInternalServerError, "ErrInternal"
}

// badRequest is a request the server cannot read: 400.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }
