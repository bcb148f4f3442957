import CSQLite
import SuplashSQL

/// One SQLite connection (`sqlite3*`), opened with `SQLITE_OPEN_NOMUTEX`.
///
/// **Not thread-safe and not `Sendable`.** A connection is used by one thread at a time:
/// the writer connection only on `SQLiteDatabase`'s writer thread, a reader only while it is
/// checked out of the pool by `SQLiteDatabase.read`. Do not let it escape those closures.
///
/// Statements run through `query`/`run`/`queryOne`/`scalar` are prepared once and kept in a
/// cache keyed by their exact SQL text (at most `statementCacheCapacity` entries; when full
/// the cache is emptied). A cached statement is `sqlite3_reset` and `sqlite3_clear_bindings`
/// right after every use, so no statement keeps a read transaction open between calls.
///
/// The handle is closed exactly once: by `close()` or, failing that, by `deinit`.
public final class SQLiteConnection {
    /// What a connection is for; decides the open flags and the pragmas applied.
    public enum Role: Sendable {
        /// Read-write, creates the file. Pragmas: `journal_mode=WAL`, `synchronous=FULL`,
        /// `foreign_keys=ON`, `temp_store=MEMORY`, `cache_size=-4000` (≈4 MiB; configurable),
        /// `wal_autocheckpoint=1000` (pages, SQLite's default), `journal_size_limit=64 MiB`.
        case writer
        /// `SQLITE_OPEN_READONLY`. Pragmas: `query_only=ON`, `foreign_keys=ON`,
        /// `temp_store=MEMORY`, `cache_size=-2000` (≈2 MiB, SQLite's own default; configurable).
        /// The file must exist.
        case reader

        /// The page-cache bound (KiB) applied unless the opener gives one. Pages a connection
        /// has read stay resident up to this bound (the OS file cache keeps them too): with
        /// 16 MiB for the writer and 8 MiB per reader, the create benchmark grew the process by
        /// ~10 MiB of writer cache in 5 s while the working set (the tree paths a request
        /// touches) is a few hundred KiB.
        public var defaultCacheKiB: Int {
            switch self {
            case .writer: 4000
            case .reader: 2000
            }
        }
    }

    /// Most statements kept in the cache (the app's SQL is static, so this is generous).
    public static let statementCacheCapacity = 512

    let handle: OpaquePointer
    /// The role this connection was opened for.
    public let role: Role
    private var cache: [String: CachedStatement] = [:]
    /// The same entries by the address of their SQL text's storage: the app's statements are
    /// `static let` texts passed as the same `String` on every call, so a hit costs hashing
    /// one integer instead of the whole text. Only texts an entry retains are mapped (its
    /// `texts`), so a mapped address always holds that text — a live storage cannot move
    /// or change, and it cannot be freed and reused while the entry keeps it.
    private var cacheByStorage: [UInt: CachedStatement] = [:]
    /// The writer's transaction-control statements, prepared once (`runTransactionControl`).
    /// Kept apart from `cache`, so `query`/`run` can never reach them.
    private var transactionStatements: [TransactionControl: OpaquePointer] = [:]
    private var isClosed = false

    /// A prepared statement and, once a query has read them, its result column names with
    /// the statement's re-prepare count at that time: SQLite re-prepares a statement by
    /// itself after a schema change (`SQLITE_STMTSTATUS_REPREPARE` counts it), and the
    /// names are read again then.
    private final class CachedStatement {
        let statement: OpaquePointer
        var columns: SQLiteColumns?
        var columnsReprepareCount: Int32 = 0
        /// The texts whose storage addresses map here (`cacheByStorage`), kept alive; at most
        /// `maxTexts` (a text built on every call is found by content instead).
        var texts: [String] = []
        static let maxTexts = 2

        init(statement: OpaquePointer) { self.statement = statement }
    }

    /// The address of `sql`'s UTF-8 storage when it has one of its own (not a small string
    /// held inline, whose bytes live wherever the value is).
    private static func storageAddress(_ sql: String) -> UInt? {
        guard sql.utf8.count > 15 else { return nil }
        return sql.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) }
    }

    /// The cached entry for `sql`, by its storage address first, then by content (mapping
    /// this text's address for next time).
    private func cachedEntry(_ sql: String) -> CachedStatement? {
        let address = Self.storageAddress(sql)
        if let address, let entry = cacheByStorage[address] { return entry }
        guard let entry = cache[sql] else { return nil }
        if let address, entry.texts.count < CachedStatement.maxTexts {
            entry.texts.append(sql)
            cacheByStorage[address] = entry
        }
        return entry
    }

    /// Statements that begin, delimit or end the writer's group transaction.
    enum TransactionControl: String, CaseIterable {
        case beginImmediate = "BEGIN IMMEDIATE"
        case savepoint = "SAVEPOINT suplash_job"
        case release = "RELEASE suplash_job"
        case rollbackToSavepoint = "ROLLBACK TO suplash_job"
        case commit = "COMMIT"
        case rollback = "ROLLBACK"
    }

    /// When `false`, preparing `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT` or `RELEASE` fails
    /// with `SQLITE_AUTH` (kind `.misuse`). The writer turns it off while a group job's body
    /// runs, so a job cannot end the shared transaction. Writer connections only.
    var allowsTransactionControl = true
    /// Set by the authorizer when the statement being prepared is transaction control;
    /// such statements are never cached (the authorizer only runs at prepare time).
    fileprivate var preparedTransactionControl = false

    /// How many statements this connection has compiled with `sqlite3_prepare_v3` for
    /// `query`/`run`/`queryOne`/`scalar` (a cache hit does not count). For tests and metrics.
    public private(set) var statementsPrepared = 0

    /// Statements currently held in the cache.
    public var cachedStatementCount: Int { cache.count }

    /// Opens `path` for `role` and applies the role's pragmas.
    ///
    /// - Parameters:
    ///   - path: a file path (not `:memory:`: the writer requires WAL, which needs a file).
    ///   - role: `.writer` or `.reader`.
    ///   - busyTimeoutMs: how long a statement waits for another connection's lock before
    ///     failing with `.busy` (milliseconds, `sqlite3_busy_timeout`).
    /// - Throws: `StorageError` if the file cannot be opened (`.ioError`), is not a database
    ///   (`.corrupt`), or WAL mode cannot be enabled for a writer (`.other`).
    ///   - cacheKiB: page-cache bound in KiB (`PRAGMA cache_size=-N`); nil = the role's
    ///     default (`Role.defaultCacheKiB`).
    public convenience init(path: String, role: Role, busyTimeoutMs: Int = 5000, cacheKiB: Int? = nil) throws {
        try self.init(path: path, role: role, busyTimeoutMs: busyTimeoutMs, applyPragmas: true, cacheKiB: cacheKiB)
    }

    /// Opens `path`; with `applyPragmas == false` no pragma is set (backup targets).
    init(path: String, role: Role, busyTimeoutMs: Int, applyPragmas: Bool, cacheKiB: Int? = nil) throws {
        let cacheKiB = max(64, cacheKiB ?? role.defaultCacheKiB)
        var db: OpaquePointer?
        let flags: Int32 =
            switch role {
            case .writer: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
            case .reader: SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
            }
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let code = db.map { sqlite3_extended_errcode($0) } ?? rc
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "sqlite3_open_v2 failed"
            sqlite3_close_v2(db)
            throw StorageError(code: code, message: message)
        }
        self.handle = db
        self.role = role
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Int32(clamping: busyTimeoutMs))
        if role == .writer {
            sqlite3_set_authorizer(
                db,
                { userData, action, _, _, _, _ in
                    guard action == SQLITE_TRANSACTION || action == SQLITE_SAVEPOINT, let userData else { return SQLITE_OK }
                    let connection = Unmanaged<SQLiteConnection>.fromOpaque(userData).takeUnretainedValue()
                    connection.preparedTransactionControl = true
                    return connection.allowsTransactionControl ? SQLITE_OK : SQLITE_DENY
                }, Unmanaged.passUnretained(self).toOpaque())
        }
        guard applyPragmas else { return }
        do {
            switch role {
            case .writer:
                let mode = try scalar("PRAGMA journal_mode=WAL")
                guard case .text(let m) = mode, m.lowercased() == "wal" else {
                    throw StorageError(code: SQLITE_ERROR, kind: .other, message: "could not enable WAL journal mode")
                }
                // secure_delete: deleted content is overwritten with zeros, not left in free pages
                // (blanked sealed secrets, erased accounts; docs/apple.md "Sealed secrets").
                try execute(
                    """
                    PRAGMA synchronous=FULL;
                    PRAGMA foreign_keys=ON;
                    PRAGMA temp_store=MEMORY;
                    PRAGMA cache_size=-\(cacheKiB);
                    PRAGMA wal_autocheckpoint=1000;
                    PRAGMA journal_size_limit=67108864;
                    PRAGMA secure_delete=ON;
                    """)
            case .reader:
                try execute(
                    """
                    PRAGMA query_only=ON;
                    PRAGMA foreign_keys=ON;
                    PRAGMA temp_store=MEMORY;
                    PRAGMA cache_size=-\(cacheKiB);
                    """)
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Finalizes every cached statement and closes the handle. Idempotent; later calls on
    /// this connection throw `.misuse`.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        for entry in cache.values { sqlite3_finalize(entry.statement) }
        cache.removeAll()
        cacheByStorage.removeAll()
        for statement in transactionStatements.values { sqlite3_finalize(statement) }
        transactionStatements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// `true` while a transaction is open (`sqlite3_get_autocommit` is 0).
    public var isInTransaction: Bool { !isClosed && sqlite3_get_autocommit(handle) == 0 }

    /// Rowid of the most recent successful `INSERT` on this connection (`sqlite3_last_insert_rowid`).
    public var lastInsertRowID: Int64 { isClosed ? 0 : sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the most recent `INSERT`/`UPDATE`/`DELETE` (`sqlite3_changes64`).
    public var changes: Int { isClosed ? 0 : Int(sqlite3_changes64(handle)) }

    // MARK: - Running SQL

    /// Runs a script of zero or more `;`-separated statements without parameters (schema,
    /// pragmas, transaction control). Result rows are discarded. Statements are not cached.
    /// - Throws: `StorageError` of the first failing statement; earlier ones stay applied.
    public func execute(_ sql: String) throws {
        try checkOpen()
        var utf8 = Array(sql.utf8CString)
        try utf8.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var cursor: UnsafePointer<CChar>? = UnsafePointer(base)
            while let sqlPointer = cursor, sqlPointer.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let rc = sqlite3_prepare_v2(handle, sqlPointer, -1, &statement, &tail)
                guard rc == SQLITE_OK else { throw lastError(rc) }
                cursor = tail
                guard let statement else { continue }  // whitespace or comment only
                defer { sqlite3_finalize(statement) }
                var step = sqlite3_step(statement)
                while step == SQLITE_ROW { step = sqlite3_step(statement) }
                guard step == SQLITE_DONE else { throw lastError(step) }
            }
        }
    }

    /// Runs one statement with `args` bound to its parameters (`?`, `?NNN`, in order) and
    /// returns every result row.
    /// - Throws: `StorageError` (`.misuse` for a wrong parameter count or trailing statements).
    public func query(_ sql: String, _ args: [SQLValue] = []) throws -> [SQLiteRow] {
        var rows: [SQLiteRow] = []
        try withStatement(sql, args) { statement, entry in
            var columns: SQLiteColumns?
            while true {
                let rc = sqlite3_step(statement)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw lastError(rc) }
                // Read after the first step: a schema change re-prepares the statement there.
                let names = columns ?? self.columns(of: statement, entry: entry)
                columns = names
                rows.append(SQLiteRow(values: Self.values(of: statement, count: names.names.count), columns: names))
            }
        }
        return rows
    }

    /// The first result row of one statement, or `nil` when there is none. Stops after it.
    /// - Throws: `StorageError`.
    public func queryOne(_ sql: String, _ args: [SQLValue] = []) throws -> SQLiteRow? {
        var row: SQLiteRow?
        try withStatement(sql, args) { statement, entry in
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw lastError(rc) }
            let columns = self.columns(of: statement, entry: entry)
            row = SQLiteRow(values: Self.values(of: statement, count: columns.names.count), columns: columns)
        }
        return row
    }

    /// The first column of the first row, or `nil` when there is no row.
    /// - Throws: `StorageError`.
    public func scalar(_ sql: String, _ args: [SQLValue] = []) throws -> SQLValue? {
        var value: SQLValue?
        try withStatement(sql, args) { statement, _ in
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw lastError(rc) }
            value = sqlite3_column_count(statement) > 0 ? Self.value(of: statement, column: 0) : .null
        }
        return value
    }

    /// The first column of the first row as `Int64`; `nil` when there is no row or it is `NULL`.
    /// - Throws: `StorageError` (`.typeMismatch` when the value is not an `INTEGER`).
    public func scalarInt64(_ sql: String, _ args: [SQLValue] = []) throws -> Int64? {
        switch try scalar(sql, args) {
        case nil, .null?: return nil
        case .integer(let v)?: return v
        case let other?: throw StorageError.typeMismatch("scalar: expected INTEGER, found \(other)")
        }
    }

    /// Runs one statement with `args` bound and returns the number of rows it changed
    /// (`sqlite3_changes64`). Result rows (`RETURNING`) are stepped through and discarded.
    /// - Throws: `StorageError`, e.g. `.constraintUnique`.
    @discardableResult
    public func run(_ sql: String, _ args: [SQLValue] = []) throws -> Int {
        try withStatement(sql, args) { statement, _ in
            var rc = sqlite3_step(statement)
            while rc == SQLITE_ROW { rc = sqlite3_step(statement) }
            guard rc == SQLITE_DONE else { throw lastError(rc) }
        }
        return Int(sqlite3_changes64(handle))
    }

    // MARK: - Statements

    /// Checks out the cached statement for `sql` (preparing it on a miss), binds `args`,
    /// runs `body`, then resets it and clears its bindings whatever happened.
    private func withStatement(
        _ sql: String, _ args: [SQLValue], _ body: (OpaquePointer, CachedStatement?) throws -> Void
    ) throws {
        try checkOpen()
        let (statement, entry) = try cachedStatement(sql)
        defer {
            if entry != nil {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            } else {
                sqlite3_finalize(statement)
            }
        }
        try bind(args, to: statement)
        try body(statement, entry)
    }

    /// The statement for `sql` and whether it lives in the cache (otherwise the caller
    /// finalizes it after use).
    private func cachedStatement(_ sql: String) throws -> (OpaquePointer, entry: CachedStatement?) {
        if let entry = cachedEntry(sql) {
            sqlite3_reset(entry.statement)
            sqlite3_clear_bindings(entry.statement)
            return (entry.statement, entry)
        }
        var statement: OpaquePointer?
        var trailing = false
        preparedTransactionControl = false
        let rc = sql.withCString { cString -> Int32 in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v3(handle, cString, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            if rc == SQLITE_OK, let tail {
                trailing = Self.hasStatementText(tail)
            }
            return rc
        }
        guard rc == SQLITE_OK else { throw lastError(rc) }
        guard let statement else {
            throw StorageError.misuse("the SQL text contains no statement")
        }
        if trailing {
            sqlite3_finalize(statement)
            throw StorageError.misuse("query/run take exactly one statement; use execute for scripts")
        }
        statementsPrepared += 1
        if preparedTransactionControl {
            return (statement, nil)
        }
        if cache.count >= Self.statementCacheCapacity {
            for cached in cache.values { sqlite3_finalize(cached.statement) }
            cache.removeAll(keepingCapacity: true)
            cacheByStorage.removeAll(keepingCapacity: true)
        }
        let entry = CachedStatement(statement: statement)
        cache[sql] = entry
        if let address = Self.storageAddress(sql) {
            entry.texts.append(sql)
            cacheByStorage[address] = entry
        }
        return (statement, entry)
    }

    /// Runs one of the writer's transaction-control statements, prepared on first use and
    /// kept (preparing them costs more than running them). Must be called while
    /// `allowsTransactionControl` is true, i.e. between jobs.
    /// - Throws: `StorageError`.
    func runTransactionControl(_ control: TransactionControl) throws {
        try checkOpen()
        let statement: OpaquePointer
        if let prepared = transactionStatements[control] {
            statement = prepared
        } else {
            var prepared: OpaquePointer?
            let rc = sqlite3_prepare_v3(handle, control.rawValue, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
            guard rc == SQLITE_OK else { throw lastError(rc) }
            guard let prepared else { throw StorageError.misuse("the SQL text contains no statement") }
            transactionStatements[control] = prepared
            statement = prepared
        }
        defer { sqlite3_reset(statement) }
        var rc = sqlite3_step(statement)
        while rc == SQLITE_ROW { rc = sqlite3_step(statement) }
        guard rc == SQLITE_DONE else { throw lastError(rc) }
    }

    /// The result column names of `statement` (the cached statement for `sql`), read once
    /// per cached statement instead of on every query.
    /// Call after a step (a re-prepare happens inside `sqlite3_step`).
    private func columns(of statement: OpaquePointer, entry: CachedStatement?) -> SQLiteColumns {
        guard let entry else {
            return Self.columns(of: statement)  // not cached (transaction control)
        }
        let reprepared = sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_REPREPARE, 0)
        if let columns = entry.columns, entry.columnsReprepareCount == reprepared {
            return columns
        }
        let columns = Self.columns(of: statement)
        entry.columns = columns
        entry.columnsReprepareCount = reprepared
        return columns
    }

    /// `true` if `tail` holds anything but whitespace and semicolons.
    private static func hasStatementText(_ tail: UnsafePointer<CChar>) -> Bool {
        var p = tail
        while p.pointee != 0 {
            switch UInt8(bitPattern: p.pointee) {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: ";"):
                p += 1
            default:
                return true
            }
        }
        return false
    }

    private func bind(_ args: [SQLValue], to statement: OpaquePointer) throws {
        let expected = Int(sqlite3_bind_parameter_count(statement))
        guard expected == args.count else {
            throw StorageError(
                code: SQLITE_RANGE, kind: .misuse,
                message: "statement has \(expected) parameters, \(args.count) values given")
        }
        for (offset, value) in args.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null:
                rc = sqlite3_bind_null(statement, index)
            case .integer(let v):
                rc = sqlite3_bind_int64(statement, index, v)
            case .real(let v):
                rc = sqlite3_bind_double(statement, index, v)
            case .text(let v):
                var text = v
                rc = text.withUTF8 { bytes in
                    // A nil base address would bind NULL; bind an empty string explicitly.
                    guard let base = bytes.baseAddress, bytes.count > 0 else {
                        return sqlite3_bind_text(statement, index, "", 0, sqliteTransient)
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        sqlite3_bind_text64(statement, index, $0, sqlite3_uint64(bytes.count), sqliteTransient, UInt8(SQLITE_UTF8))
                    }
                }
            case .blob(let v):
                if v.isEmpty {
                    rc = sqlite3_bind_zeroblob(statement, index, 0)
                } else {
                    rc = v.withUnsafeBytes { raw in
                        sqlite3_bind_blob64(statement, index, raw.baseAddress, sqlite3_uint64(raw.count), sqliteTransient)
                    }
                }
            }
            guard rc == SQLITE_OK else { throw lastError(rc) }
        }
    }

    private static func columns(of statement: OpaquePointer) -> SQLiteColumns {
        let count = Int(sqlite3_column_count(statement))
        var names: [String] = []
        names.reserveCapacity(count)
        for i in 0..<count {
            names.append(sqlite3_column_name(statement, Int32(i)).map { String(cString: $0) } ?? "")
        }
        return SQLiteColumns(names: names)
    }

    private static func values(of statement: OpaquePointer, count: Int) -> [SQLValue] {
        var values: [SQLValue] = []
        values.reserveCapacity(count)
        for i in 0..<count { values.append(value(of: statement, column: Int32(i))) }
        return values
    }

    private static func value(of statement: OpaquePointer, column: Int32) -> SQLValue {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, column) else { return .text("") }
            let length = Int(sqlite3_column_bytes(statement, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
        case SQLITE_BLOB:
            let length = Int(sqlite3_column_bytes(statement, column))
            guard length > 0, let bytes = sqlite3_column_blob(statement, column) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: length)))
        default:
            return .null
        }
    }

    // MARK: - Errors

    private func checkOpen() throws {
        if isClosed { throw StorageError.misuse("the connection is closed") }
    }

    /// The connection's most recent extended result code (`sqlite3_extended_errcode`):
    /// after SQLite ended a transaction on its own, the code of the failure that did it.
    var lastExtendedResultCode: Int32 { isClosed ? SQLITE_MISUSE : sqlite3_extended_errcode(handle) }

    /// The error for a failed call that returned `rc`, with the connection's message.
    func lastError(_ rc: Int32) -> StorageError {
        let extended = sqlite3_extended_errcode(handle)
        // `rc` from sqlite3_step/prepare is already extended (extended_result_codes is on);
        // prefer the connection's code when it refines the same primary code.
        let code = (extended & 0xff) == (rc & 0xff) ? extended : rc
        return StorageError(code: code, message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// `SQLITE_TRANSIENT`: SQLite copies the bound bytes before the bind call returns.
/// (The C macro `((sqlite3_destructor_type)-1)` is not importable.)
var sqliteTransient: sqlite3_destructor_type {
    unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}
