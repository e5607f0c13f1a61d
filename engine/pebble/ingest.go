package pebble

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/engine"
)

// CanIngestFrom (engine.BulkIngester) refuses unless the engine is on the
// operating system's file system: the spilled runs and the sstable are
// written with it, and a store on another vfs.FS cannot ingest from there.
func (e *Engine) CanIngestFrom(dir string) error {
	if !e.onDisk {
		return fmt.Errorf("%w: a transaction spilled to disk: the store is not on the operating system's file system", engine.ErrUnsupported)
	}
	return nil
}

// IngestSorted (engine.BulkIngester) writes one sstable and ingests it. A
// failed MANIFEST or log write during the ingestion fails the store without
// reaching Pebble (fence.go), and the ingestion then returns ErrFailed, as a
// commit does.
func (e *Engine) IngestSorted(dir string, next func() (engine.Write, bool, error)) (err error) {
	if err := e.h.err(); err != nil {
		return err
	}
	if err := e.lock.check(); err != nil {
		return err
	}
	path := filepath.Join(dir, "ingest.sst")
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	sw := sstable.NewWriter(objstorageprovider.NewFileWritable(f), writerOptions(e.opts, e.db.TableFormat())) // comparer.go
	for {
		x, ok, err := next()
		if err != nil {
			_ = sw.Close()
			return err
		}
		if !ok {
			break
		}
		if x.Delete {
			err = sw.Delete(x.Key)
		} else {
			err = sw.Set(x.Key, x.Value)
		}
		if err != nil {
			_ = sw.Close()
			return err
		}
	}
	if err := sw.Close(); err != nil {
		return err
	}
	return e.h.failedOr(e.h.guard(func() error { return e.db.Ingest(context.Background(), []string{path}) }))
}
