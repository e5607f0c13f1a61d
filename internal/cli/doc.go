// Package cli is the bitempo command line tool (the main packages tools/bitempo
// and, with the etcd engine, etcd/cmd/bitempo are thin wrappers around Main). The
// tool creates
// tables, loads CSV and JSONL files, answers as-of questions (get, scan, history,
// audit, changes, resolve), computes point-in-time features of grouped tables for
// the rows of a file (backfill), draws timelines, dumps the raw keys, lists,
// describes and drops tables, and verifies and compacts a store. `bitempo demo`
// builds a small store and walks through all of it; `bitempo COMMAND --help`
// documents each command with an example.
//
// # Conventions
//
//   - Every command takes --db DIR (default ./bitempo.db). Flags may come before
//     or after the positional arguments.
//   - Read commands, dump, verify and stats open the store read-only; create may
//     create the store; every other command requires it to exist.
//   - Valid times are read and printed on the table's axis: RFC 3339 in UTC with
//     microseconds (time), YYYY-MM-DD (date) or integers (int); flags also take
//     "now". Transaction times are RFC 3339. Open ends (±∞) print empty (null in
//     JSON).
//   - Output is a table on a terminal and CSV otherwise (--format table|csv|json).
//     Columns: key columns, valid_from, valid_to, sk, attributes in the order the
//     table first saw them, and with --with-tx tx_from and tx_to.
//   - Errors are one line on stderr. Exit status 2: the command line is wrong;
//     1: the command failed, or found nothing (get), or found a problem (verify);
//     130: a load interrupted by a signal.
//   - A damaged store is named as such ("store DIR is corrupt: FILE ...") and
//     left as it was; no command suggests creating a store over it. A store
//     whose write-ahead log is damaged is refused until `bitempo recover` opens
//     it, keeping every transaction before the damage and listing the lost ones
//     (the original log files are kept in a lost-wal-* directory of the store).
//   - Table output cuts values to 60 characters; csv and json print them whole.
//   - Nothing is destroyed without being asked: demo rebuilds only stores it
//     marked as its own (a DEMO file), and drop asks on a terminal or takes --yes.
//
// # Decisions
//
// Each is stated here; the reasoning and the alternatives rejected are in
// docs/design (load-one-transaction.md, load-two-pass-stream.md,
// load-compaction.md, load-change-order.md, load-exact-decimals.md,
// load-utf8.md).
//
//   - A load reads and checks the whole file before it writes anything, so a bad
//     row or an overlap fails it with nothing committed, and then commits every
//     row in one transaction: one transaction time, all or nothing. SIGINT and
//     SIGTERM roll it back (exit 130, saying the store is as it was); a kill or
//     crash cannot leave part of it either. A load of more than --spill-rows rows
//     never holds its input: it reads it twice (types, then checked rows into
//     runs sorted by key on disk; Parquet by row group; stdin is first copied
//     to a file next to the store), merges the runs and applies them key by
//     key (txn.Tx.Flush; a changes table's rows as one CDC batch through
//     txn.KeyBatch, with the result of one Apply), spilling the transaction's
//     writes to disk past 64 MB and committing them by one atomic sstable
//     ingestion (load_stream.go); versions are those of the in-memory path,
//     surrogate keys of a periods table are numbered in key order, and memory
//     does not grow with the rows. --batch-size N is
//     the opt-in batched mode: an interruption or failure stops between batches,
//     names the rows that committed and says how to continue; reloading is safe
//     (versions already stored, upserts already in effect and CDC batch ids
//     already applied change nothing). Batches are not the default: they leave
//     an interrupted load half applied. A batched load into a changes table of
//     more than --spill-rows rows streams too, on every engine, in the
//     in-memory path's batches: checked rows go into runs sorted by event
//     (key, --at, --seq), whose merge keeps the last row of each event in runs
//     sorted by file order, whose merge gives the file-order batches one at a
//     time, batch k applied as ID#k; so the batch ids, the rows a stopped load
//     names and what a rerun skips are those of the in-memory load, the store
//     ends byte for byte the same, and memory is the runs' budget and one
//     batch's rows (load_stream_changes_batches.go). On an engine that bounds
//     one commit (etcd) --spill-rows is at most what a commit holds, and a
//     batched load into a periods table streams in key order instead
//     (load_stream_batches.go).
//   - A periods table keeps versions, not events: a change row equal to the
//     version in effect is dropped, and a late row only rewrites up to the next
//     stored change; the load summary counts both, and create says so when
//     --kind is left out (changes tables are order-independent).
//   - A load of 100,000 rows or more that commits anything ends with a
//     compaction of the store (--no-compact skips it; `bitempo compact` runs
//     one on demand), since Pebble's background compaction falls behind a bulk
//     load. Smaller loads leave it to the background, since a full compaction
//     rewrites the whole store.
//   - Rows that are SCD2 changes (--at) are applied in ascending --at order, file
//     order breaking ties, so the result does not depend on how the file is
//     sorted; two rows of one key at one time with different attributes are
//     counted as conflicts and the later row wins (not file order, which gives
//     a different history for the same rows sorted differently).
//   - Attribute types are inferred per column, not per cell: a column is int64 if
//     every non-empty cell is an integer without leading zeros (so 0123 stays a
//     string), else float64 if every cell is a decimal, else bool, else string.
//     A decimal column holding a value float64 cannot hold exactly is kept as
//     text, with a warning, not rounded silently. Cells must be UTF-8: others
//     fail with line and column.
//     A time column (--types col=time) is validated and stored as an RFC 3339 UTC
//     string, since the catalog keeps no attribute types that would let a tick
//     count print as a time. In JSONL an absent field is left out of the record
//     (a partial update for tables with --ignore-nulls) and null is null.
//   - An empty --from cell means the beginning of time, so that scan output (an
//     open start prints empty) loads back as it was written.
//   - Bytes key components are written in hex.
//   - backfill types the group values of the left file as load types attribute
//     values (inferred per column, or --types), so a left file and a data file
//     with the same cells name the same groups; a table-wide aggregation is asked
//     for by leaving out --group-by and --key (not a separate flag, which could
//     contradict them). An empty group cell fails the command, as a missing
//     key fails resolve. A ts cell may say now, for scoring rows.
package cli
