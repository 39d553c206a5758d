package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/transparency-dev/merkle/compact"
)

// SchemaVersion is the PostgreSQL schema version this code creates and
// reads, the one row of table ledger_schema (see the package doc).
const SchemaVersion = 1

// ErrSchema is wrapped by OpenPostgres's error when the database holds
// no ledger schema (read-only open) or one of a newer version.
var ErrSchema = errors.New("the database's ledger schema is not one this bankdoor knows")

// writerLock is the key of the transaction-level advisory lock every
// Update takes first (pg_advisory_xact_lock): the bytes "bankdoor" read
// as a big-endian int64. Advisory locks are per database.
const writerLock int64 = 0x62616e6b646f6f72

// pageRows is how many rows a ForEach reads per query.
const pageRows = 1000

// schema creates SchemaVersion's tables; see the package doc.
const schema = `
CREATE TABLE ledger_meta (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL);
CREATE TABLE ledger_entries (idx bigint PRIMARY KEY CHECK (idx >= 0), data bytea NOT NULL);
CREATE TABLE ledger_leaves (hash bytea PRIMARY KEY, idx bigint NOT NULL CHECK (idx >= 0));
CREATE TABLE ledger_nodes (id bigint PRIMARY KEY CHECK (id >= 0), hash bytea NOT NULL);
CREATE TABLE ledger_heads (key_id text COLLATE "C" PRIMARY KEY, seq bigint NOT NULL,
	sha256 bytea NOT NULL CHECK (length(sha256) = 32), leaf_index bigint NOT NULL);
CREATE TABLE ledger_cosignatures (size bigint NOT NULL, witness text COLLATE "C" NOT NULL CHECK (witness <> ''),
	lines bytea NOT NULL, PRIMARY KEY (size, witness));
CREATE TABLE ledger_witnesses (witness text COLLATE "C" PRIMARY KEY CHECK (witness <> ''), size bigint NOT NULL);
INSERT INTO ledger_schema (version) VALUES (1);
`

// Postgres is the PostgreSQL backend (see the package doc). Update runs
// one READ COMMITTED transaction that first takes the database's writer
// lock, so the Updates of every process on one database run one at a
// time; with synchronous_commit on (set on every connection) a nil
// return means the commit is durable on the server. View runs a
// REPEATABLE READ READ ONLY transaction: one snapshot.
type Postgres struct {
	pool     *pgxpool.Pool
	name     string // the database, without the password, for messages
	readOnly bool
}

// IsPostgresURL reports whether db names a PostgreSQL database rather
// than a file: a postgres:// or postgresql:// URL.
func IsPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// OpenPostgres connects to the database connString names (a postgres://
// URL or a key=value connection string, as pgx reads it), with password
// unless it is empty (then pgx's defaults apply: PGPASSWORD, ~/.pgpass).
// Unless readOnly is set, it creates the schema in an empty database; it
// refuses a schema of any version but SchemaVersion (there is no
// migration: no other version was released), and, read-only, a database
// without one. It creates the ledger's tables
// only in a schema that holds no other tables (ErrOtherTables).
func OpenPostgres(ctx context.Context, connString, password string, readOnly bool) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("open ledger database: %w", err)
	}
	if password != "" {
		cfg.ConnConfig.Password = password
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	if cfg.ConnConfig.ConnectTimeout == 0 { // connect_timeout not given
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "bankdoor ledger"
	}
	name := fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open ledger database %s: %w", name, classify(err))
	}
	s := &Postgres{pool: pool, name: name, readOnly: readOnly}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open ledger database %s: %w", name, classify(err))
	}
	return s, nil
}

// ErrOtherTables is wrapped by the error of OpenPostgres when it would
// create the ledger's tables in a schema that holds other tables, and of
// Postgres.OtherTables.
var ErrOtherTables = errors.New("the database holds tables that are not the ledger's")

// ledgerTables are the tables of the schema (and ledger_schema).
var ledgerTables = []string{"ledger_schema", "ledger_meta", "ledger_entries", "ledger_leaves", "ledger_nodes",
	"ledger_heads", "ledger_cosignatures", "ledger_witnesses"}

// OtherTables returns an error wrapping ErrOtherTables, naming them, if
// the ledger's schema (the connection's current schema) holds tables,
// views or sequences that are not the ledger's: the ledger keeps its
// schema to itself.
func (s *Postgres) OtherTables(ctx context.Context) error {
	other, err := otherTables(ctx, s.pool)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, classify(err))
	}
	if len(other) > 0 {
		return fmt.Errorf("%s: %w", s.name, otherTablesError(other))
	}
	return nil
}

// otherTables lists (up to 10 of) the tables, views and sequences of the
// current schema, the one the ledger's tables are created in, that are not
// the ledger's. A ledger in a schema of its own shares the database with
// whatever is in other schemas.
func otherTables(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}) ([]string, error) {
	rows, _ := q.Query(ctx, `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND n.nspname = current_schema() AND NOT c.relname = ANY($1)
		ORDER BY 1 LIMIT 10`, ledgerTables)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func otherTablesError(names []string) error {
	return fmt.Errorf("%w: %s", ErrOtherTables, strings.Join(names, ", "))
}

// migrate checks the schema version and, for a writer, creates the
// schema under the writer lock, so that two processes opening one new
// database create it once.
func (s *Postgres) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass('ledger_schema') IS NOT NULL").Scan(&exists); err != nil {
		return err
	}
	if !exists && s.readOnly {
		return fmt.Errorf("%w: it has no table ledger_schema (no ledger was created in it)", ErrSchema)
	}
	if !s.readOnly {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", writerLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS ledger_schema (version integer NOT NULL)"); err != nil {
			return err
		}
	}
	var versions []int
	rows, _ := tx.Query(ctx, "SELECT version FROM ledger_schema")
	if versions, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
		return err
	}
	switch {
	case len(versions) == 0 && !s.readOnly:
		if other, err := otherTables(ctx, tx); err != nil {
			return err
		} else if len(other) > 0 {
			return otherTablesError(other)
		}
		if _, err := tx.Exec(ctx, schema); err != nil {
			return fmt.Errorf("creating the ledger schema: %w", err)
		}
	case len(versions) != 1:
		return fmt.Errorf("%w: table ledger_schema has %d rows, want 1", ErrSchema, len(versions))
	case versions[0] != SchemaVersion:
		return fmt.Errorf("%w: schema version %d; this bankdoor knows version %d, upgrade it", ErrSchema, versions[0], SchemaVersion)
	}
	if s.readOnly {
		return nil
	}
	return tx.Commit(ctx)
}

// defaultConnectTimeout bounds making a connection when the connection
// string gives no connect_timeout: a server that does not answer fails
// the operation in this time rather than the operating system's.
const defaultConnectTimeout = 10 * time.Second

// classify wraps err with ErrUnavailable if it says the server could not
// be reached or the connection was lost (see unreachable).
func classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || !unreachable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// unreachable reports whether err is a connection's failure rather than
// the database's answer: no connection could be made, it broke, timed
// out, or the server is shutting down, starting, or out of connections
// (SQLSTATE class 08, 57P01-57P03, 53300).
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "53300":
			return true
		}
		return strings.HasPrefix(pe.Code, "08")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// Shared is true: other processes may write to the database.
func (s *Postgres) Shared() bool { return true }

// Name returns the database's URL without its password.
func (s *Postgres) Name() string { return s.name }

// Close closes the connections.
func (s *Postgres) Close() error {
	s.pool.Close()
	return nil
}

// View runs fn on one snapshot of the database.
func (s *Postgres) View(fn func(Tx) error) error {
	ctx := context.Background()
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, classify(err))
	}
	defer tx.Rollback(ctx)
	return classify(fn(&pgTx{ctx: ctx, tx: tx}))
}

// Update runs fn in a transaction holding the writer lock and commits
// it.
func (s *Postgres) Update(fn func(Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("%s: %w", s.name, ErrReadOnly)
	}
	ctx := context.Background()
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, classify(err))
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", writerLock); err != nil {
		return fmt.Errorf("%s: taking the writer lock: %w", s.name, classify(err))
	}
	t := &pgTx{ctx: ctx, tx: tx, w: newWrites()}
	if err := fn(t); err != nil {
		return classify(err)
	}
	if err := t.flush(); err != nil {
		return classify(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("%s: commit: %w", s.name, classify(err))
	}
	return nil
}

// querier is what a pgTx sends its statements through: a transaction
// (pgx.Tx) or, for Read, the pool.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Read runs fn without a transaction: each read is one statement on a
// pooled connection, seeing what was committed when it ran.
func (s *Postgres) Read(fn func(Tx) error) error {
	return classify(fn(&pgTx{ctx: context.Background(), tx: s.pool}))
}

// pgTx is one transaction. Writes are buffered and sent together (one
// pgx.Batch of one multi-row upsert per table) before the next read and
// at commit.
type pgTx struct {
	ctx context.Context
	tx  querier
	w   *writes // nil in a View
}

type cosigKey struct {
	size    int64
	witness string
}

// writes are the buffered writes of a transaction, the last per key.
type writes struct {
	n            int
	meta         map[string][]byte
	entries      map[int64][]byte
	leaves       map[string]int64
	nodes        map[int64][]byte
	heads        map[string]Head
	cosignatures map[cosigKey][]byte
	witnesses    map[string]int64
}

func newWrites() *writes {
	return &writes{meta: map[string][]byte{}, entries: map[int64][]byte{}, leaves: map[string]int64{},
		nodes: map[int64][]byte{}, heads: map[string]Head{}, cosignatures: map[cosigKey][]byte{}, witnesses: map[string]int64{}}
}

// bigint converts a stored integer to PostgreSQL's bigint.
func bigint(what string, v uint64) (int64, error) {
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("%s %d does not fit in a PostgreSQL bigint", what, v)
	}
	return int64(v), nil
}

func (t *pgTx) writable() error {
	if t.w == nil {
		return ErrReadOnly
	}
	t.w.n++
	return nil
}

func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// flush sends the buffered writes.
func (t *pgTx) flush() error {
	w := t.w
	if w == nil || w.n == 0 {
		return nil
	}
	b := &pgx.Batch{}
	if len(w.meta) > 0 {
		k, v := unzip(w.meta)
		b.Queue(`INSERT INTO ledger_meta (key, value) SELECT * FROM unnest($1::text[], $2::bytea[])
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, k, v)
	}
	if len(w.entries) > 0 {
		k, v := unzip(w.entries)
		b.Queue(`INSERT INTO ledger_entries (idx, data) SELECT * FROM unnest($1::bigint[], $2::bytea[])
			ON CONFLICT (idx) DO UPDATE SET data = EXCLUDED.data`, k, v)
	}
	if len(w.leaves) > 0 {
		ks, v := unzip(w.leaves)
		k := make([][]byte, len(ks))
		for i := range ks {
			k[i] = []byte(ks[i])
		}
		b.Queue(`INSERT INTO ledger_leaves (hash, idx) SELECT * FROM unnest($1::bytea[], $2::bigint[])
			ON CONFLICT (hash) DO UPDATE SET idx = EXCLUDED.idx`, k, v)
	}
	if len(w.nodes) > 0 {
		k, v := unzip(w.nodes)
		b.Queue(`INSERT INTO ledger_nodes (id, hash) SELECT * FROM unnest($1::bigint[], $2::bytea[])
			ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash`, k, v)
	}
	if err := t.queueHeads(b); err != nil {
		return err
	}
	t.queueCosignatures(b)
	if b.Len() > 0 {
		if err := t.tx.SendBatch(t.ctx, b).Close(); err != nil {
			return fmt.Errorf("writing: %w", err)
		}
	}
	*w = *newWrites()
	return nil
}

func (t *pgTx) queueHeads(b *pgx.Batch) error {
	if len(t.w.heads) == 0 {
		return nil
	}
	var keys []string
	var seqs, idxs []int64
	var shas [][]byte
	for k, h := range t.w.heads {
		seq, err := bigint("head seq", h.Seq)
		if err != nil {
			return err
		}
		idx, err := bigint("head index", h.Index)
		if err != nil {
			return err
		}
		keys, seqs, idxs, shas = append(keys, k), append(seqs, seq), append(idxs, idx), append(shas, h.SHA256[:])
	}
	b.Queue(`INSERT INTO ledger_heads (key_id, seq, sha256, leaf_index)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bigint[])
		ON CONFLICT (key_id) DO UPDATE SET seq = EXCLUDED.seq, sha256 = EXCLUDED.sha256, leaf_index = EXCLUDED.leaf_index`,
		keys, seqs, shas, idxs)
	return nil
}

func (t *pgTx) queueCosignatures(b *pgx.Batch) {
	if len(t.w.cosignatures) > 0 {
		var sizes []int64
		var names []string
		var lines [][]byte
		for k, v := range t.w.cosignatures {
			sizes, names, lines = append(sizes, k.size), append(names, k.witness), append(lines, v)
		}
		b.Queue(`INSERT INTO ledger_cosignatures (size, witness, lines) SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[])
			ON CONFLICT (size, witness) DO UPDATE SET lines = EXCLUDED.lines`, sizes, names, lines)
	}
	if len(t.w.witnesses) > 0 {
		k, v := unzip(t.w.witnesses)
		b.Queue(`INSERT INTO ledger_witnesses (witness, size) SELECT * FROM unnest($1::text[], $2::bigint[])
			ON CONFLICT (witness) DO UPDATE SET size = EXCLUDED.size`, k, v)
	}
}

// unzip returns m's keys and values as two parallel slices.
func unzip[K comparable, V any](m map[K]V) ([]K, []V) {
	ks, vs := make([]K, 0, len(m)), make([]V, 0, len(m))
	for k, v := range m {
		ks, vs = append(ks, k), append(vs, v)
	}
	return ks, vs
}

// get scans the one row query returns into dest; found is false if
// there is none. It sends the buffered writes first.
func (t *pgTx) get(query string, args []any, dest ...any) (found bool, err error) {
	if err := t.flush(); err != nil {
		return false, err
	}
	err = t.tx.QueryRow(t.ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// getBytes returns the bytea of query's one row, or nil.
func (t *pgTx) getBytes(query string, args ...any) ([]byte, error) {
	var v []byte
	found, err := t.get(query, args, &v)
	if !found || err != nil {
		return nil, err
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

func (t *pgTx) Meta(key string) ([]byte, error) {
	return t.getBytes("SELECT value FROM ledger_meta WHERE key = $1", key)
}

func (t *pgTx) SetMeta(key string, v []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	t.w.meta[key] = clone(v)
	return nil
}

func (t *pgTx) Entry(i uint64) ([]byte, error) {
	if i > math.MaxInt64 {
		return nil, nil
	}
	return t.getBytes("SELECT data FROM ledger_entries WHERE idx = $1", int64(i))
}

func (t *pgTx) PutEntry(i uint64, data []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	idx, err := bigint("entry index", i)
	if err != nil {
		return err
	}
	t.w.entries[idx] = clone(data)
	return nil
}

// forEach runs fn on the rows of a keyset-paginated query, pageRows at
// a time: first(args...) for the first page, next(args..., last key)
// for the others. A page is read whole before fn sees its rows, so fn
// may use the transaction. scan reads one row and returns its key for
// the next page and a call of fn.
func forEach[K any](t *pgTx, first, next string, args []any, scan func(pgx.Rows) (K, func() error, error)) error {
	if err := t.flush(); err != nil {
		return err
	}
	query, qargs := first, args
	for {
		rows, err := t.tx.Query(t.ctx, query+fmt.Sprintf(" LIMIT %d", pageRows), qargs...)
		if err != nil {
			return err
		}
		var calls []func() error
		var last K
		for rows.Next() {
			var call func() error
			if last, call, err = scan(rows); err != nil {
				rows.Close()
				return err
			}
			calls = append(calls, call)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, call := range calls {
			if err := call(); err != nil {
				return err
			}
		}
		if len(calls) < pageRows {
			return nil
		}
		query, qargs = next, append(append([]any{}, args...), last)
	}
}

func (t *pgTx) ForEachEntry(start uint64, fn func(uint64, []byte) error) error {
	if start > math.MaxInt64 {
		return nil
	}
	return forEach(t, "SELECT idx, data FROM ledger_entries WHERE idx >= $1 ORDER BY idx",
		"SELECT idx, data FROM ledger_entries WHERE idx >= $1 AND idx > $2 ORDER BY idx",
		[]any{int64(start)}, func(r pgx.Rows) (int64, func() error, error) {
			var i int64
			var data []byte
			err := r.Scan(&i, &data)
			return i, func() error { return fn(uint64(i), data) }, err
		})
}

func (t *pgTx) Entries(start uint64, n int) ([]uint64, [][]byte, error) {
	if err := t.flush(); err != nil {
		return nil, nil, err
	}
	if start > math.MaxInt64 || n <= 0 {
		return nil, nil, nil
	}
	rows, err := t.tx.Query(t.ctx, "SELECT idx, data FROM ledger_entries WHERE idx >= $1 ORDER BY idx LIMIT $2", int64(start), n)
	if err != nil {
		return nil, nil, err
	}
	var idx []uint64
	var data [][]byte
	var i int64
	var d []byte
	_, err = pgx.ForEachRow(rows, []any{&i, &d}, func() error {
		idx, data = append(idx, uint64(i)), append(data, d)
		d = nil // the next row scans into a new slice
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return idx, data, nil
}

func (t *pgTx) LeafIndex(h []byte) (uint64, bool, error) {
	var i int64
	found, err := t.get("SELECT idx FROM ledger_leaves WHERE hash = $1", []any{h}, &i)
	return uint64(i), found, err
}

func (t *pgTx) LeafIndexes(hs [][]byte) ([]uint64, []bool, error) {
	if err := t.flush(); err != nil {
		return nil, nil, err
	}
	rows, err := t.tx.Query(t.ctx, "SELECT hash, idx FROM ledger_leaves WHERE hash = ANY($1)", hs)
	if err != nil {
		return nil, nil, err
	}
	byHash := make(map[string]int64, len(hs))
	var h []byte
	var i int64
	_, err = pgx.ForEachRow(rows, []any{&h, &i}, func() error {
		byHash[string(h)] = i
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	idx, found := make([]uint64, len(hs)), make([]bool, len(hs))
	for k, h := range hs {
		var v int64
		v, found[k] = byHash[string(h)]
		idx[k] = uint64(v)
	}
	return idx, found, nil
}

func (t *pgTx) PutLeafIndex(h []byte, i uint64) error {
	if err := t.writable(); err != nil {
		return err
	}
	idx, err := bigint("leaf index", i)
	if err != nil {
		return err
	}
	t.w.leaves[string(h)] = idx
	return nil
}

func (t *pgTx) ForEachLeaf(fn func([]byte, uint64) error) error {
	return forEach(t, "SELECT hash, idx FROM ledger_leaves ORDER BY hash",
		"SELECT hash, idx FROM ledger_leaves WHERE hash > $1 ORDER BY hash",
		nil, func(r pgx.Rows) ([]byte, func() error, error) {
			var h []byte
			var i int64
			err := r.Scan(&h, &i)
			return h, func() error { return fn(h, uint64(i)) }, err
		})
}

// nodeID returns the storage index of id as a bigint.
func nodeID(id compact.NodeID) int64 {
	i, _ := ParseIndex(NodeKey(id)) // below 2⁶², see MaxNodeIndex
	return int64(i)
}

func (t *pgTx) Node(id compact.NodeID) ([]byte, error) {
	return t.getBytes("SELECT hash FROM ledger_nodes WHERE id = $1", nodeID(id))
}

func (t *pgTx) Nodes(ids []compact.NodeID) ([][]byte, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	keys := make([]int64, len(ids))
	for i, id := range ids {
		keys[i] = nodeID(id)
	}
	rows, err := t.tx.Query(t.ctx, "SELECT id, hash FROM ledger_nodes WHERE id = ANY($1)", keys)
	if err != nil {
		return nil, err
	}
	found := map[int64][]byte{}
	var id int64
	var h []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &h}, func() error {
		found[id] = h
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(ids))
	for i, k := range keys {
		out[i] = found[k]
	}
	return out, nil
}

func (t *pgTx) PutNode(id compact.NodeID, h []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	t.w.nodes[nodeID(id)] = clone(h)
	return nil
}

func (t *pgTx) ForEachNode(fn func(compact.NodeID, []byte) error) error {
	return forEach(t, "SELECT id, hash FROM ledger_nodes ORDER BY id",
		"SELECT id, hash FROM ledger_nodes WHERE id > $1 ORDER BY id",
		nil, func(r pgx.Rows) (int64, func() error, error) {
			var i int64
			var h []byte
			if err := r.Scan(&i, &h); err != nil {
				return 0, nil, err
			}
			id, err := ParseNodeKey(IndexKey(uint64(i)))
			if err != nil {
				return 0, nil, fmt.Errorf("table ledger_nodes: %w", err)
			}
			return i, func() error { return fn(id, h) }, nil
		})
}

// scanHead reads seq, sha256, leaf_index.
func scanHead(row pgx.Row) (Head, error) {
	var seq, idx int64
	var sha []byte
	if err := row.Scan(&seq, &sha, &idx); err != nil {
		return Head{}, err
	}
	h := Head{Seq: uint64(seq), Index: uint64(idx)}
	if len(sha) != len(h.SHA256) {
		return Head{}, fmt.Errorf("table ledger_heads: sha256 is %d bytes, want 32", len(sha))
	}
	copy(h.SHA256[:], sha)
	return h, nil
}

func (t *pgTx) Head(keyID string) (Head, bool, error) {
	if err := t.flush(); err != nil {
		return Head{}, false, err
	}
	h, err := scanHead(t.tx.QueryRow(t.ctx, "SELECT seq, sha256, leaf_index FROM ledger_heads WHERE key_id = $1", keyID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Head{}, false, nil
	}
	return h, err == nil, err
}

func (t *pgTx) Heads(keyIDs []string) (map[string]Head, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	rows, err := t.tx.Query(t.ctx, "SELECT key_id, seq, sha256, leaf_index FROM ledger_heads WHERE key_id = ANY($1)", keyIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Head{}
	for rows.Next() {
		var k string
		var seq, idx int64
		var sha []byte
		if err := rows.Scan(&k, &seq, &sha, &idx); err != nil {
			return nil, err
		}
		h := Head{Seq: uint64(seq), Index: uint64(idx)}
		if len(sha) != len(h.SHA256) {
			return nil, fmt.Errorf("table ledger_heads, key %q: sha256 is %d bytes, want 32", k, len(sha))
		}
		copy(h.SHA256[:], sha)
		out[k] = h
	}
	return out, rows.Err()
}

func (t *pgTx) PutHead(keyID string, h Head) error {
	if err := t.writable(); err != nil {
		return err
	}
	t.w.heads[keyID] = h
	return nil
}

func (t *pgTx) ForEachHead(fn func(string, Head) error) error {
	return forEach(t, "SELECT key_id, seq, sha256, leaf_index FROM ledger_heads ORDER BY key_id",
		"SELECT key_id, seq, sha256, leaf_index FROM ledger_heads WHERE key_id > $1 ORDER BY key_id",
		nil, func(r pgx.Rows) (string, func() error, error) {
			var k string
			var seq, idx int64
			var sha []byte
			if err := r.Scan(&k, &seq, &sha, &idx); err != nil {
				return "", nil, err
			}
			h := Head{Seq: uint64(seq), Index: uint64(idx)}
			if copy(h.SHA256[:], sha) != 32 || len(sha) != 32 {
				return "", nil, fmt.Errorf("table ledger_heads, key %q: sha256 is %d bytes, want 32", k, len(sha))
			}
			return k, func() error { return fn(k, h) }, nil
		})
}

func (t *pgTx) Cosignature(size uint64, witness string) ([]byte, error) {
	if size > math.MaxInt64 || witness == "" {
		return nil, nil
	}
	return t.getBytes("SELECT lines FROM ledger_cosignatures WHERE size = $1 AND witness = $2", int64(size), witness)
}

func (t *pgTx) PutCosignature(size uint64, witness string, lines []byte) error {
	if witness == "" {
		return errNoWitness
	}
	if err := t.writable(); err != nil {
		return err
	}
	n, err := bigint("tree size", size)
	if err != nil {
		return err
	}
	t.w.cosignatures[cosigKey{n, witness}] = clone(lines)
	return nil
}

func (t *pgTx) ForEachCosignature(size uint64, fn func(string, []byte) error) error {
	if size > math.MaxInt64 {
		return nil
	}
	return forEach(t, "SELECT witness, lines FROM ledger_cosignatures WHERE size = $1 ORDER BY witness",
		"SELECT witness, lines FROM ledger_cosignatures WHERE size = $1 AND witness > $2 ORDER BY witness",
		[]any{int64(size)}, func(r pgx.Rows) (string, func() error, error) {
			var w string
			var lines []byte
			err := r.Scan(&w, &lines)
			return w, func() error { return fn(w, lines) }, err
		})
}

func (t *pgTx) WitnessSize(witness string) (uint64, bool, error) {
	var n int64
	found, err := t.get("SELECT size FROM ledger_witnesses WHERE witness = $1", []any{witness}, &n)
	return uint64(n), found, err
}

func (t *pgTx) PutWitnessSize(witness string, size uint64) error {
	if witness == "" {
		return errNoWitness
	}
	if err := t.writable(); err != nil {
		return err
	}
	n, err := bigint("tree size", size)
	if err != nil {
		return err
	}
	t.w.witnesses[witness] = n
	return nil
}

func (t *pgTx) ForEachWitness(fn func(string, uint64) error) error {
	return forEach(t, "SELECT witness, size FROM ledger_witnesses ORDER BY witness",
		"SELECT witness, size FROM ledger_witnesses WHERE witness > $1 ORDER BY witness",
		nil, func(r pgx.Rows) (string, func() error, error) {
			var w string
			var n int64
			err := r.Scan(&w, &n)
			return w, func() error { return fn(w, uint64(n)) }, err
		})
}
