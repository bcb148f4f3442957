import SuplashSQL

/// One statement's text for both engines, written once with SQLite numbered placeholders
/// (`?1`, `?2`, …) and rendered for each `SQLDialect` when it is created: keep it in a
/// `static let` so the rendering (a scan of the text) happens once per process, and both
/// drivers' prepared-statement caches see one stable text.
public struct SQLText: Sendable {
    /// The text for SQLite (placeholders `?N`).
    public let sqlite: String
    /// The text for PostgreSQL (placeholders `$N`).
    public let postgres: String

    /// A statement with no dialect-dependent clause: `sql` as written for SQLite,
    /// `SQLDialect.postgres.render(sql)` for PostgreSQL.
    public init(_ sql: String) {
        self.init { _ in sql }
    }

    /// A statement built per dialect (for clauses that differ, such as
    /// `SQLDialect.forUpdate(of:skipLocked:)`), then rendered for that dialect.
    public init(_ build: (SQLDialect) -> String) {
        sqlite = SQLDialect.sqlite.render(build(.sqlite))
        postgres = SQLDialect.postgres.render(build(.postgres))
    }

    /// The text for `dialect`.
    public func text(for dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }
}

/// What a use case runs its statements on: an open transaction (`StoreTransaction`) or a read
/// (`SQLStore.reading`). Each engine implements it on its own connection, so a use case is
/// written once (docs/store.md, "Writing a use case once").
public protocol SQLExecutor {
    /// The engine's row type (values by column name or index).
    associatedtype Row: SQLRowValues
    /// The engine this executor runs on: statements are sent as `SQLText.text(for: dialect)`.
    var dialect: SQLDialect { get }
    /// Runs `sql` (already in this dialect) with `args` bound to its placeholders and returns
    /// every row (none for a statement without a result). One round trip on PostgreSQL.
    /// - Throws: the engine's error (the store maps it to `RepositoryError` around the
    ///   transaction).
    func query(_ sql: String, _ args: [SQLValue]) throws -> [Row]
    /// Runs `sql` (already in this dialect) and returns the number of rows it inserted,
    /// updated or deleted. One round trip on PostgreSQL.
    /// - Throws: the engine's error, as `query`.
    func execute(_ sql: String, _ args: [SQLValue]) throws -> Int
}

extension SQLExecutor {
    /// Every row of `sql` in this executor's dialect (`query(_:_:)` of `sql.text(for: dialect)`).
    /// - Throws: the engine's error.
    public func query(_ sql: SQLText, _ args: [SQLValue]) throws -> [Row] {
        try query(sql.text(for: dialect), args)
    }

    /// The first row of `query(sql, args)`, or nil when there is none.
    /// - Throws: the engine's error.
    public func queryOne(_ sql: SQLText, _ args: [SQLValue]) throws -> Row? {
        try query(sql, args).first
    }

    /// The rows `sql` in this executor's dialect changed (`execute(_:_:)` of
    /// `sql.text(for: dialect)`).
    /// - Throws: the engine's error.
    @discardableResult
    public func execute(_ sql: SQLText, _ args: [SQLValue]) throws -> Int {
        try execute(sql.text(for: dialect), args)
    }
}

/// A revocation a committed write makes, which every server instance must learn of: a no-op on
/// SQLite (one process, whose routes update its revocation view themselves); on PostgreSQL a
/// `NOTIFY suplash_revocations` sent with the commit (delivered if and only if it commits).
public enum StoreRevocation: Sendable, Equatable {
    /// One session was revoked (logout, refresh-token reuse).
    case session(id: String)
    /// An admin key was created or revoked: every instance re-reads the key table.
    case adminKeys
}

/// An open write transaction of a store, with each engine's semantics kept: on SQLite one job of
/// the single writer's group commit (serialised, durable before the call returns); on
/// PostgreSQL READ COMMITTED, re-run on unique violations, serialization failures and
/// deadlocks — rows read to be changed are locked with `SQLDialect.forUpdate(of:skipLocked:)`.
/// Its statements run on `connection`; `query`, `queryOne`, `execute` and `dialect` forward there.
public protocol StoreTransaction {
    /// The connection the transaction is open on.
    associatedtype Connection: SQLExecutor
    /// The connection the transaction is open on (valid only inside the transaction).
    var connection: Connection { get }
    /// Tells every server instance about `revocation` after this transaction commits (nothing is
    /// sent if it rolls back). A no-op on SQLite.
    func announce(_ revocation: StoreRevocation)
}

extension StoreTransaction {
    /// The engine of `connection`.
    public var dialect: SQLDialect { connection.dialect }

    /// `connection.query(sql, args)`.
    /// - Throws: the engine's error.
    public func query(_ sql: SQLText, _ args: [SQLValue]) throws -> [Connection.Row] {
        try connection.query(sql, args)
    }

    /// `connection.queryOne(sql, args)`.
    /// - Throws: the engine's error.
    public func queryOne(_ sql: SQLText, _ args: [SQLValue]) throws -> Connection.Row? {
        try connection.queryOne(sql, args)
    }

    /// `connection.execute(sql, args)`: the rows changed.
    /// - Throws: the engine's error.
    @discardableResult
    public func execute(_ sql: SQLText, _ args: [SQLValue]) throws -> Int {
        try connection.execute(sql, args)
    }
}

/// A store whose use cases are written once over `StoreTransaction` and `SQLExecutor`
/// (`SQLiteStore`, `PostgresStore`). The default implementations of the repository protocols
/// of `SuplashDomain` in this target are built on these two methods.
public protocol SQLStore: Sendable {
    /// The engine's transaction adapter.
    associatedtype Transaction: StoreTransaction
    /// The engine's read adapter.
    associatedtype Reader: SQLExecutor

    /// Runs `body` in one write transaction and returns its result once committed (durably).
    /// - Throws: `RepositoryError` (storage failures mapped and recorded by the store), or what
    ///   `body` throws; the transaction is then rolled back.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) throws -> T

    /// Runs `body` as a read: on SQLite one read transaction of the reader pool, on PostgreSQL
    /// a pooled connection (single statements; each sees the latest commit).
    /// - Throws: `RepositoryError` (mapped as `transaction`), or what `body` throws.
    func reading<T>(_ body: (Reader) throws -> T) throws -> T
}
