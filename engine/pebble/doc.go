// Package pebble is bitempo's storage engine on Pebble: Open configures and
// opens Pebble in a directory for the key layout of package layout (its
// comparer, prefix bloom filters, values kept beside their keys, large index
// blocks), and the returned Engine implements engine.Engine and the optional
// capabilities only Pebble has: compaction, purging erased bytes from files,
// checkpoints (backups), atomic ingestion of a transaction spilled to disk,
// and recovery of a damaged write-ahead log.
//
// A store is usually opened with store.Open, which uses this engine with its
// defaults; to tune it, open the engine here and pass it to store.OpenEngine:
//
//	e, err := pebble.Open(dir, pebble.Options{CacheSize: 512 << 20})
//	...
//	db, err := store.OpenEngine(e, dir, store.Options{})
//
// The engine keeps Pebble's own guarantees (atomic, ordered, durable synced
// batches) and adds:
//
//  1. Open reads before it writes: a damaged MANIFEST or write-ahead log, a
//     store of another layout, or a directory that is not a store is refused
//     with the directory unchanged.
//  2. No panic reaches a caller and no background goroutine ends the process
//     (failure.go).
//  3. The directory stays locked from Open to Close, by Pebble's LOCK file and
//     by a lock on the directory itself (lock.go).
//
// # Failure model
//
// Every error wraps one of the sentinels in errors.go (or, for Compact, the
// context's error). No panic reaches a caller and no background goroutine ends
// the process: Pebble's corruption reports go to an event handler instead of
// Logger.Fatalf, and Pebble's Fatalf records the failure and unwinds only on a
// caller's goroutine (failure.go).
//
// What is detected, and what the store does:
//
//   - A damaged table file (any checksum mismatch, a missing, truncated or
//     swapped file): ErrCorrupt naming the file, from Open, from the read that
//     meets it, from Verify, or from Pebble's background table-stats collector
//     right after Open. From then on the DB refuses every read and write with
//     ErrCorrupt until it is reopened. Not recoverable by the store: restore a
//     backup.
//   - A damaged MANIFEST, a missing or dangling marker.manifest.* file, or an
//     OPTIONS file Pebble cannot parse: Open fails with ErrCorrupt and changes
//     nothing in the directory. Open reads the current MANIFEST's chunks and
//     checksums itself before Pebble opens the store (logscan.go), because
//     Pebble reads a MANIFEST up to its first bad record and then deletes, as
//     obsolete, every table file the rest names; a read-only open first would
//     not do, since it succeeds on a MANIFEST damaged in its later records and
//     the read-write open that follows still deletes. A torn last record, which a
//     crash leaves, is not damage: it was never acknowledged.
//   - A damaged live write-ahead log (a bad chunk followed by readable chunks of
//     the same log, or any bad chunk in a log older than the newest): Open fails
//     with ErrCorrupt and ErrDamagedWAL and changes nothing; Pebble itself would
//     replay up to the damage and silently drop every later acknowledged commit,
//     since the format bitempo pins writes no sync offsets that let it tell. With
//     Options.RecoverWAL, Open keeps the transactions before the damage, drops the
//     damaged one and every later one (so the store holds a prefix of its
//     history), moves the original log files into a lost-wal-* directory of the
//     store and reports, in DB.Recovery, the newest transaction kept and the
//     transaction times of the dropped ones it could still read. A torn last
//     record of the newest log is dropped silently, as before.
//   - A deleted live write-ahead log, when it was the only one: Open fails with
//     ErrCorrupt and ErrDamagedWAL, naming the range of log file numbers the
//     missing log lies in, and changes nothing. The MANIFEST's version edits
//     record the oldest unflushed log (manifestedit.go decodes them, and claims
//     nothing on an edit it cannot decode); Pebble replays every *.log numbered
//     at least that and never learns that one is missing. The check fires when
//     no such log exists and an OPTIONS file numbered above that minimum does:
//     Pebble's Open writes OPTIONS right after creating its log, so that log
//     existed and was live. The log numbered exactly the minimum is not
//     required: it does not exist after any healthy reopen (manifestedit.go). With
//     Options.RecoverWAL, Open opens what the table files hold and DB.Recovery
//     says the log was missing; its commits cannot be listed. If nothing of the
//     store was flushed, not even its own declaration, RecoverWAL fails with
//     ErrCorrupt and ErrNotExist.
//   - The newest write-ahead log cut short (truncated anywhere, to nothing) or
//     deleted after commits in it were synced and acknowledged: Open fails with
//     ErrCorrupt and ErrDamagedWAL, naming the log and how many acknowledged
//     commits are lost, and changes nothing. The log cannot tell this from a
//     crash, which only ever loses unsynced bytes; the store keeps a synced
//     watermark beside it (BITEMPO-WAL-SYNCED, watermark.go): the newest log's
//     number, how many of its bytes were synced and how many commits they hold,
//     rewritten after every synced commit, fsynced when a log is created, every
//     64 synced commits and on Close; Pebble's FormatWALSyncChunks reads a log
//     cut short as a clean end (docs/design/wal-synced-watermark.md). With
//     Options.RecoverWAL, Open accepts the loss, opens what is left and
//     reports it in DB.Recovery (Shortened, LostCommits). The
//     watermark also tells a power loss from damage: unreadable bytes of the
//     newest log past what it says was synced are a torn tail, whatever
//     readable pages of the log survived after them.
//   - A disk that fills up, or fails: a commit whose write-ahead log write or
//     sync fails fails with ErrFailed (the store refuses everything until
//     reopened; the commit is absent, or present whole). Such failures, a
//     failed write or sync of the MANIFEST or creation of its marker, and a
//     failed directory sync never reach Pebble, which would panic on some of
//     them (on a background goroutine, for a flush's or compaction's MANIFEST
//     edit): they fail the store, which from then on leaves its directory as the
//     failure found it, as a crash would, and the Compact, Purge or ingestion
//     during which it failed returns ErrFailed (fence.go,
//     docs/design/failed-manifest-writes.md). A commit that must wait for a flush while
//     flushes and compactions keep failing returns ErrIO after
//     Options.StallTimeout (default 30s) and did not commit; the store then stops
//     creating files and refuses everything, and cannot be closed (Close returns
//     ErrIO; Pebble's commit pipeline is held by the waiting commit): free space
//     and restart the process. Pebble's error lines are rate-limited to 10 per 10
//     seconds, with a count of those suppressed.
//   - A table file that fails to open or read (an I/O error, not damage in
//     its contents): the read that met it fails with ErrIO, and the store
//     fails (ErrFailed, everything refused until reopened; a reopen reads the
//     table again). From then on the store changes nothing in its directory,
//     and neither does it after a corruption: Pebble v2.1.7 drops the error of
//     a compaction's first read of its inputs' range keys (bitempo writes
//     them when it purges) and would install the compaction with no output,
//     deleting every input table (fence.go, docs/design/failed-table-reads.md).
//   - A value the decoders would refuse (over MaxValueSize; attributes over
//     MaxAttrsSize): the write fails with ErrTooLarge and nothing of its
//     transaction is written.
//   - The LOCK file deleted or replaced while the store is open: the store also
//     holds an flock(2) on its directory, so a second Open still fails with
//     ErrLocked; and every commit checks that LOCK is the file it locked, failing
//     with ErrLocked (and refusing every later write) once it is not.
//
// Not detected: a log cut short or deleted when it is not the one the
// watermark describes (an older live log, or the newest when the watermark is
// missing, unreadable or was last written for an earlier log), or cut after
// the last value of the watermark that reached the disk (after a power loss,
// the watermark may be up to 63 synced commits behind the log: those commits
// are then not counted). A store written without the watermark (before it
// existed) behaves as before: a log truncated at a record boundary looks
// exactly like a crash that lost unsynced commits. Nor is a deleted live log
// detected when another live log remains (nothing records which log numbers
// existed: they come from the one counter every file uses), or when every
// live log is deleted but the oldest unflushed one dates from a flush after
// the store's last Open (no OPTIONS file is newer than it) and the watermark
// does not describe it. These are left undetected rather than risk reporting
// a healthy store or a crash as damaged. Damage in the synced part of the
// newest log that the watermark does not cover (see above) is taken for a
// torn tail; and with no watermark, if the unsynced tail a power loss leaves
// happens to include a readable chunk of the same log after a bad one, Open
// reports damage where there was only a torn write, and RecoverWAL loses only
// commits that were never acknowledged.
package pebble
