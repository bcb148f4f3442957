import SuplashDomain
import SuplashSQL
import SuplashStoreRows

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

/// One statement and its arguments, for `SQLExecutor.pipeline` and `SQLStore.snapshotPipeline`.
public struct SQLStatement: Sendable {
    /// The statement (both dialects).
    public let sql: SQLText
    /// The values bound to `?1`, `?2`, … in order.
    public let args: [SQLValue]

    /// `sql` with `args` bound to its placeholders.
    public init(_ sql: SQLText, _ args: [SQLValue] = []) {
        self.sql = sql
        self.args = args
    }
}

/// A row that carries a change position (spec §5, "Change feed"): `table` and the key columns
/// that find it — SQL identifiers, constants of the use case, never input — with their values.
/// PostgreSQL stamps such a row at the commit (docs/postgresql.md, "Change sequence").
public struct ChangeRow: Sendable, Equatable {
    /// The table (an identifier constant).
    public let table: String
    /// Its key columns (identifier constants).
    public let keyColumns: [String]
    /// The key values, bound as parameters.
    public let key: [SQLValue]

    /// The row of `table` where `keyColumns` equal `key`.
    public init(table: String, keyColumns: [String], key: [SQLValue]) {
        self.table = table
        self.keyColumns = keyColumns
        self.key = key
    }

    /// A water entry (`water_entries`, key `user_id, id`).
    public static func entry(_ userID: String, _ id: String) -> ChangeRow {
        ChangeRow(table: "water_entries", keyColumns: ["user_id", "id"], key: [.text(userID), .text(id)])
    }

    /// A bill (`bills`, key `user_id, id`).
    public static func bill(_ userID: String, _ id: String) -> ChangeRow {
        ChangeRow(table: "bills", keyColumns: ["user_id", "id"], key: [.text(userID), .text(id)])
    }

    /// A day's document (`days`, key `user_id, local_date`).
    public static func day(_ userID: String, _ date: LocalDate) -> ChangeRow {
        ChangeRow(table: "days", keyColumns: ["user_id", "local_date"], key: [.text(userID), .text(date.description)])
    }

    /// The user's achievements document (`achievements`, one row per user, key `user_id`).
    public static func achievements(_ userID: String) -> ChangeRow {
        ChangeRow(table: "achievements", keyColumns: ["user_id"], key: [.text(userID)])
    }

    /// The profile (`users`, key `id`).
    public static func user(_ userID: String) -> ChangeRow {
        ChangeRow(table: "users", keyColumns: ["id"], key: [.text(userID)])
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
    /// Runs independent statements together and returns the rows of each, in order: one libpq
    /// pipeline (one round trip, behind whatever the transaction queued) on PostgreSQL, one
    /// after the other on SQLite. Use it for reads that do not depend on each other's results.
    /// - Throws: the engine's error of the first failing statement.
    func pipeline(_ statements: [SQLStatement]) throws -> [[Row]]
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
    /// Every access token of `userID` issued before `issuedBeforeSeconds` (Unix seconds) is
    /// refused (a password reset, an Apple account takeover).
    case userCutoff(userID: String, issuedBeforeSeconds: Int64)
    /// The account `userID` was erased: every instance forgets its sessions.
    case accountErased(userID: String)
}

/// An open write transaction of a store, with each engine's semantics kept: on SQLite one job of
/// the single writer's group commit (serialised, durable before the call returns); on
/// PostgreSQL READ COMMITTED, re-run on unique violations, serialization failures and
/// deadlocks — rows read to be changed are locked with `SQLDialect.forUpdate(of:skipLocked:)`,
/// and a user's documents are changed under the user's row lock (`UserLock`).
/// Its statements run on `connection`; `query`, `queryOne`, `execute`, `pipeline` and `dialect`
/// forward there.
public protocol StoreTransaction: AnyObject {
    /// The connection the transaction is open on.
    associatedtype Connection: SQLExecutor
    /// The connection the transaction is open on (valid only inside the transaction).
    var connection: Connection { get }
    /// Tells every server instance about `revocation` after this transaction commits (nothing is
    /// sent if it rolls back). A no-op on SQLite.
    func announce(_ revocation: StoreRevocation)
    /// Runs a write whose result nobody reads: on PostgreSQL it is queued and travels with the
    /// transaction's next round trip (its failure surfaces there or at the commit); on SQLite
    /// it runs now.
    /// - Throws: the engine's error (SQLite).
    func enqueue(_ sql: SQLText, _ args: [SQLValue]) throws
    /// The change position for `row` of `userID`, which this transaction writes, and the wake-up
    /// of `userID`'s long polls after the commit (every instance's, on PostgreSQL). On SQLite
    /// the next position, taken now; on PostgreSQL a provisional (negative) position unless the
    /// sequence is already held, and the commit stamps the row with the real one — write it
    /// into the row's `change_position`. Positions follow commit order without gaps
    /// (docs/postgresql.md, "Change sequence").
    /// - Throws: the engine's error.
    func changePosition(of row: ChangeRow, userID: String) throws -> Int64
    /// Writes `row` of `userID` with its change position: `sql` is one `INSERT` or `UPDATE` of
    /// that row (no `RETURNING`), with `args` bound to `?1`…`?n` and `?(n+1)` standing for the
    /// position. On PostgreSQL the statement runs inside the commit's statement, which takes
    /// the position (no round trip under the sequence lock) — so nothing later in the
    /// transaction may read the row (set `defersPositionedWrites` to false when something
    /// does); failures surface at the commit. On SQLite it runs now. Wakes `userID`'s long
    /// polls after the commit, as `changePosition`.
    /// - Throws: the engine's error.
    func positionedWrite(of row: ChangeRow, userID: String, _ sql: SQLText, _ args: [SQLValue]) throws
    /// Whether `positionedWrite` may move its statement into the commit (true, the default;
    /// no effect on SQLite). Set it to false in a transaction that reads a positioned row again
    /// after writing it (the sync push re-reads achievements per mutation).
    var defersPositionedWrites: Bool { get set }
    /// Registers `body` to run after the transaction committed (durably), not after a rollback
    /// or a re-run attempt. Keep it quick: long-poll wake-ups, sender nudges.
    func afterCommit(_ body: @escaping @Sendable () -> Void)
    /// The device making this transaction's changes (its `X-Device-ID`), nil when unknown (an
    /// admin key, a server job). The first change position taken for a user queues the
    /// background refresh of that user's other devices (`PushOutboxStatements.backgroundRefresh`),
    /// which skips this device: set it before the first `changePosition` / `positionedWrite`.
    var writerDeviceID: String? { get set }
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

    /// `connection.pipeline(statements)`: the rows of each.
    /// - Throws: the engine's error.
    public func pipeline(_ statements: [SQLStatement]) throws -> [[Connection.Row]] {
        try connection.pipeline(statements)
    }
}

/// What the commit made of a transaction's change positions (`SQLStore.transactionReportingPositions`).
public struct CommittedPositions: Sendable, Equatable {
    /// The number the first provisional position became, minus one (PostgreSQL's stamp base);
    /// nil when every position was final when taken (SQLite, or no provisional position).
    public let stampBase: Int64?
    /// The highest position the transaction took (final), nil when it took none.
    public let highest: Int64?

    /// - Parameters:
    ///   - stampBase: see `stampBase`.
    ///   - highest: see `highest`.
    public init(stampBase: Int64?, highest: Int64?) {
        self.stampBase = stampBase
        self.highest = highest
    }

    /// True for a provisional position (negative: −k for the k-th position the commit takes).
    public static func isProvisional(_ position: Int64) -> Bool { position < 0 }

    /// The final number of `position`: itself, or for a provisional one the number the commit
    /// took for it.
    public func final(_ position: Int64) -> Int64 {
        guard Self.isProvisional(position), let base = stampBase else { return position }
        return base - position
    }
}

/// A store whose use cases are written once over `StoreTransaction` and `SQLExecutor`
/// (`SQLiteStore`, `PostgresStore`). The default implementations of the repository protocols
/// of `SuplashDomain` in this target are built on these methods.
public protocol SQLStore: Sendable {
    /// The engine's transaction adapter.
    associatedtype Transaction: StoreTransaction
    /// The engine's read adapter.
    associatedtype Reader: SQLExecutor

    /// Runs `body` in one write transaction and returns its result once committed (durably).
    /// - Throws: `RepositoryError` (storage failures mapped and recorded by the store), or what
    ///   `body` throws; the transaction is then rolled back.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) throws -> T

    /// `transaction`, also returning what the commit made of the change positions the body
    /// took (provisional positions in an answer are mapped with `CommittedPositions.final`).
    /// - Throws: as `transaction`.
    func transactionReportingPositions<T: Sendable>(
        _ body: @escaping @Sendable (Transaction) throws -> T
    ) throws -> (value: T, positions: CommittedPositions)

    /// Runs `body` as a read: on SQLite a reader-pool connection, on PostgreSQL a pooled
    /// connection (single statements; each sees the latest commit).
    /// - Throws: `RepositoryError` (mapped as `transaction`), or what `body` throws.
    func reading<T>(_ body: (Reader) throws -> T) throws -> T

    /// Runs `body` as a read in one snapshot, so that its statements agree with each other: on
    /// SQLite a read transaction of the reader pool, on PostgreSQL REPEATABLE READ, READ ONLY.
    /// - Throws: as `reading`.
    func snapshot<T>(_ body: (Reader) throws -> T) throws -> T

    /// Runs `statements` in one snapshot and returns the rows of each, in order: on PostgreSQL
    /// `BEGIN`, the statements and `COMMIT` travel in one round trip (the first statement
    /// takes the snapshot), on SQLite one read transaction.
    /// - Throws: as `reading`.
    func snapshotPipeline(_ statements: [SQLStatement]) throws -> [[Reader.Row]]
}

/// The per-user lock: every write of a user's synced documents reads the user's row with
/// `statement` first. On PostgreSQL `FOR NO KEY UPDATE` — writers of one user run one after the
/// other (their read-modify-write of daily totals and achievements needs it), writers of
/// different users do not wait for each other, inserts referencing the user (`FOR KEY SHARE`)
/// are not blocked; lock order is user row, document rows, change sequence. On SQLite the
/// single writer already serialises every write, so it is a plain read.
public enum UserLock {
    /// The user's row (`StoreRows.userColumns`, decode with `StoreRows.user`), locked; binds
    /// `?1` = user id. Send it alone or first in a `pipeline`.
    public static let statement = SQLText { d in
        "SELECT \(StoreRows.userColumns) FROM users WHERE id = ?1 \(d.forNoKeyUpdate)"
    }

    /// Locks `userID`'s row and returns the profile, or nil when there is no such user.
    /// - Throws: the engine's error.
    public static func lock(_ tx: some StoreTransaction, userID: String) throws -> UserProfile? {
        try tx.queryOne(statement, [.text(userID)]).map { StoreRows.user($0).profile }
    }
}
