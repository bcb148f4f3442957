import Foundation

#if canImport(SQLite3)
    import SQLite3
#else
    import CSQLite
#endif

/// A value bound to or read from a statement.
enum SQLValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
}

/// The small SQLite wrapper SuplashKit needs: one connection, prepared statements,
/// transactions. Not thread-safe on its own; `LocalStore` serialises access.
final class SQLiteConnection {
    private var db: OpaquePointer?

    /// SQLite's destructor value that makes it copy bound text at once.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    init(path: String) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw SuplashError.localStore("cannot open \(path): \(message)")
        }
        db = handle
        sqlite3_busy_timeout(handle, 5000)
        try execute("PRAGMA journal_mode=WAL")
        // FULL: a write the UI has shown is on disk before `log` returns (the outbox promise).
        try execute("PRAGMA synchronous=FULL")
        try execute("PRAGMA foreign_keys=ON")
    }

    deinit { sqlite3_close_v2(db) }

    private func error(_ context: String) -> SuplashError {
        .localStore("\(context): \(String(cString: sqlite3_errmsg(db)))")
    }

    /// Runs one or more statements without parameters.
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &message) != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error"
            sqlite3_free(message)
            throw SuplashError.localStore(text)
        }
    }

    /// Runs a statement with parameters; returns every row.
    @discardableResult
    func query(_ sql: String, _ parameters: [SQLValue] = []) throws -> [[SQLValue]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw error("prepare")
        }
        defer { sqlite3_finalize(statement) }
        for (offset, value) in parameters.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .null: sqlite3_bind_null(statement, index)
            case .int(let n): sqlite3_bind_int64(statement, index, n)
            case .text(let s): sqlite3_bind_text(statement, index, s, -1, SQLiteConnection.transient)
            }
        }
        var rows: [[SQLValue]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error("step") }
            var row: [SQLValue] = []
            for column in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_NULL: row.append(.null)
                case SQLITE_INTEGER: row.append(.int(sqlite3_column_int64(statement, column)))
                default:
                    if let text = sqlite3_column_text(statement, column) {
                        row.append(.text(String(cString: text)))
                    } else {
                        row.append(.null)
                    }
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`; rolls back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}

extension SQLValue {
    var string: String? { if case .text(let s) = self { return s } else { return nil } }
    var int: Int64? { if case .int(let n) = self { return n } else { return nil } }
}
