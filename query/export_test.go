package query

// SetIntPath turns the backfill's integer path on or off (aggint.go), for
// benchmarks that compare it with the generic path; it returns the undo.
func SetIntPath(on bool) (restore func()) {
	old := useIntPath
	useIntPath = on
	return func() { useIntPath = old }
}
