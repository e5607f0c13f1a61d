// Package typed reads and writes a bitempo table as values of a Go struct type,
// over the same store, transactions and reads as the map API (store.Attrs): a
// Table[T] is a typed view, and a table written through it reads the same
// through package query, and the other way round.
//
// # Declaring a table
//
// New[T] declares a table of struct type T. Each exported field is an
// attribute named by its `bitempo:"name"` tag (the field's name without one);
// `bitempo:"name,key"` makes it a key column, and the key fields, in declaration
// order, are the table's natural key; `bitempo:"-"` leaves a field out. Field
// types: bool, the integer and float types, string, []byte and time.Time (and
// named types of them), encoding.Decimal, or a pointer to one for a nullable
// attribute. Key fields
// are strings, []byte or integers, never pointers. Everything else is a
// *SchemaError (ErrSchema) from New: an unexported field (which the package
// could neither fill nor write), an unsupported type, no key field, two fields
// with one name, an unknown tag option. Check, and the first read or write,
// compare the key fields with the table's key columns (the same names in the
// same order, of matching types) and refuse an attribute field named like a key
// column, so a mis-declared struct fails before it writes anything. Def derives
// a store.TableDef from T for creating the table.
//
// # Values
//
// A write stores each field as its canonical attribute value (integers as
// int64, or uint64 above math.MaxInt64; floats as float64; times in UTC to the
// microsecond). A nil pointer or nil []byte field is left out of the record: an
// absent attribute reads as null, and change detection treats it as null. A zero
// non-pointer field is a value, not a null (time.Time{} is the year 1): use a
// pointer for an attribute that may be unknown. A read sets the fields whose
// attributes the record holds; a null or absent attribute leaves its field zero
// (nil for a pointer); attributes the struct has no field for are skipped, so a
// struct may be a narrower view of a wider table (but an Upsert or Put through it
// writes only its own fields: the version it makes has no others). A stored
// value that does not fit its field (a string in an int field, 300 in an int8
// field, a float in an int field) is a *FieldError (ErrField) naming the key,
// attribute and field; integer widths and signedness convert when the value
// fits, and so does an int64 of at most 18 digits into a decimal field (as a
// decimal of scale 0, exactly). Nothing else converts: a float64 into a
// decimal field has no exact decimal value, and a decimal into a float field
// is a FieldError too, as an int64 into a float field is, rather than a
// silent rounding of money; a caller who wants the float reads the decimal and
// calls its Float64.
//
// # Reads
//
// Every read decodes each record straight from its stored bytes into the
// struct (a walk of the record's positional attributes), without the
// attribute map the map API builds: Get reads the store directly, Snapshot
// and Resolve read the batch reads' row views (store.Snapshot.ScanRowsAt,
// query.ResolveRows), and History, Audit and ResolveInferred, which have no
// row view, ask for the attributes left encoded (HistoryOptions.RawAttrs,
// AuditOptions.RawAttrs, ResolveOptions.RawAttrs). A scan decodes into one
// struct and yields copies; Resolve decodes each answer into its own slot on
// the goroutines of the batch join.
// Every read decodes only the attributes the struct has fields for: Get and
// Snapshot read through a view of the table projected to them
// (store.DB.Project, made once per catalog table), History, Audit and Resolve
// pass them to package query as its projection (History and
// Resolve keep a projection the caller gave). The other attributes of a
// record are stepped over, never decoded, so a narrow struct over a wide table
// pays for its own fields only; as with every projection, a record's bytes
// after the last projected attribute are not checked (store.Verify checks
// them). A retired record whose attributes are stored with its successor's
// comes back with a map, which the struct is filled from. History and Audit
// allocate less than the map API's reads (TestHistoryAuditAllocs).
//
// Decoding is by reflection over the schema New checked, not generated code,
// which would need a build step for every user type
// (docs/design/typed-reflection.md; projections:
// docs/design/projection-view-cache.md).
package typed
