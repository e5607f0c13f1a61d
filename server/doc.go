// Package server shares an open bitempo store over HTTP: every command of the
// bitempo tool (bitempo CMD --db http://HOST:PORT), a JSON API for programs,
// and pages that draw each key's bitemporal diagram. `bitempo serve` runs it
// on a store of its own; a service that embeds bitempo mounts Handler on its
// own mux to make its store inspectable by the tool:
//
//	mux.Handle("/bitempo/", http.StripPrefix("/bitempo", server.Handler(db, server.Options{BasePath: "/bitempo"})))
//
// Routes:
//
//	POST /v1/run                        one command of the tool (format: internal/wire)
//	GET  /v1/tables                     every table: name, kind, axis, key columns, attributes
//	GET  /v1/tables/NAME                one table (describe)
//	GET  /v1/tables/NAME/get            ?key=K...&valid=V&tx=T: the version in effect (JSON)
//	GET  /v1/tables/NAME/history        ?key=K...&from=V&to=V&tx=T: versions (NDJSON)
//	GET  /v1/tables/NAME/audit          ?key=K...: every record with both periods (NDJSON)
//	GET  /v1/tables/NAME/scan           ?valid=V&tx=T: every key's version in effect (NDJSON)
//	GET  /v1/tables/NAME/keys           ?after=K...&limit=N: a page of keys
//	GET  /v1/tables/NAME/changes        ?since=TX&until=TX&cursor=C&limit=N: the change feed (NDJSON),
//	                                    each line with the cursor that resumes after it
//	GET  /v1/stats                      tables, last transaction, engine
//	GET  /                              pages: the tables; /table/NAME its keys, a page at a time;
//	                                    /table/NAME/key/K... a key's diagram, where a click reads the
//	                                    key at that point; /table/NAME/svg/K... the diagram alone
//
// Keys and times are written as the tool takes them (key=, one per key
// column; valid on the table's axis; tx RFC 3339 or latest). A refused request
// answers {"error": "...", "code": "ErrUnknownKey"}, the code naming the
// library's sentinel: 404 for an unknown table or key or a miss, 400 for bad
// input, 401 without a valid token, 403 for a write with a read-only token,
// 409 for a conflict, 413 for a body over the limit, 500 otherwise. A path
// no route takes is 404 ErrNoRoute; one asked with a method its route does
// not take is 405 ErrMethodNotAllowed, with Allow.
//
// The server keeps these invariants:
//
//  1. A command prints through the server what it prints on a local store:
//     the server runs the tool's own command tree on its open store, with the
//     client's terminal flags, and streams stdout, stderr, the files the
//     command wrote and the exit status back as they come (a scan or an export
//     is never held whole in memory).
//  2. A command never touches a path of the server's that a client named: its
//     file arguments are replaced by stand-ins in a directory of the request's
//     own, filled from the uploads, and their names are turned back into the
//     client's in what it prints. demo, recover and serve run locally only.
//  3. Uploads are read whole before the command starts, so a slow client holds
//     no lock; writes then take the store's writer lock one at a time, and
//     reads run beside them on snapshots.
//  4. A command ends with its request: a client that disconnects, or stalls
//     past the write timeout, cancels it, and a load then rolls back, so
//     nothing is left half-written. A load commits whole or not at all, and
//     the client is told which when the answer reaches it.
//  5. With tokens, every request needs one (bearer); a read token's commands
//     that write fail with store.ErrReadOnly before reading their input.
//  6. The handler never closes the store: its owner closes it after the
//     server has drained (Serve returns only once every request has ended).
package server
