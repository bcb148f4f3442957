/// What really differs between the two SQL engines the stores run on, so a store use case can
/// write one statement text for both: placeholders, locking clauses, column types, replace
/// semantics and table options. Everything else the stores use is the same text on SQLite
/// (3.40+) and PostgreSQL: `INSERT … ON CONFLICT (…) DO UPDATE SET … = excluded.…`,
/// `RETURNING`, `WITH`, window functions.
///
/// Write a statement once, with SQLite-style numbered placeholders `?1`, `?2`, …, and render
/// it per engine:
/// ```swift
/// let sql = dialect.render("""
///     SELECT id, version FROM water_entries
///     WHERE user_id = ?1 AND id = ?2 \(dialect.forUpdate())
///     """)
/// // SQLite:     … WHERE user_id = ?1 AND id = ?2
/// // PostgreSQL: … WHERE user_id = $1 AND id = $2 FOR UPDATE
/// ```
/// Render once per statement and keep the text (a `static let` per dialect, or a
/// dictionary keyed by `SQLDialect`): rendering scans the text, and both drivers cache
/// prepared statements by their text.
///
/// Sources: SQLite "Parameters" (https://sqlite.org/lang_expr.html#varparam), PostgreSQL
/// "Positional Parameters" (§4.2.2), "The Locking Clause" (SELECT, §FOR UPDATE), SQLite
/// "WITHOUT ROWID Tables" (https://sqlite.org/withoutrowid.html).
public enum SQLDialect: String, Sendable, Hashable, CaseIterable {
    /// SQLite through `SuplashStorage`: one writer at a time, so row locks are not needed.
    case sqlite
    /// PostgreSQL through libpq (`SuplashPostgres`): any number of writers on any number of
    /// instances; rows a transaction reads to change later are locked with `FOR UPDATE`.
    case postgres

    // MARK: - Placeholders

    /// The placeholder of parameter `n` (1-based): `?N` on SQLite, `$N` on PostgreSQL.
    /// Parameter `n` binds the `n`-th value of the statement's argument array.
    public func placeholder(_ n: Int) -> String {
        switch self {
        case .sqlite: "?\(n)"
        case .postgres: "$\(n)"
        }
    }

    /// `count` placeholders from `first` on, separated by `", "`: `placeholders(3)` is
    /// `"?1, ?2, ?3"` on SQLite and `"$1, $2, $3"` on PostgreSQL; `""` when `count` ≤ 0. For
    /// `VALUES (…)` and `IN (…)` lists.
    public func placeholders(_ count: Int, from first: Int = 1) -> String {
        guard count > 0 else { return "" }
        return (first..<(first + count)).map(placeholder).joined(separator: ", ")
    }

    /// `sql` written with SQLite numbered placeholders (`?1`, `?2`, …) as this dialect's text:
    /// unchanged on SQLite; on PostgreSQL every `?` followed by a digit becomes `$` and the
    /// same digits (`?12` → `$12`).
    ///
    /// Left as written on PostgreSQL: a `?` not followed by a digit (a JSON operator such as
    /// `?` or `?|`; a bare `?` placeholder has no PostgreSQL form, so write numbered ones),
    /// and anything inside a string literal (`'…'`, with `''` as a quote inside), a quoted
    /// identifier (`"…"`), a line comment (`-- …`) or a block comment (`/* … */`). The text
    /// is otherwise copied byte for byte.
    public func render(_ sql: String) -> String {
        guard self == .postgres else { return sql }
        let bytes = Array(sql.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            switch byte {
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                // A literal or quoted identifier runs to the next same quote; a doubled quote
                // closes and reopens it, which copies the same bytes.
                var end = i + 1
                while end < bytes.count, bytes[end] != byte { end += 1 }
                end = min(end + 1, bytes.count)
                out.append(contentsOf: bytes[i..<end])
                i = end
            case UInt8(ascii: "-") where i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "-"):
                var end = i + 2
                while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
                out.append(contentsOf: bytes[i..<end])
                i = end
            case UInt8(ascii: "/") where i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "*"):
                var end = i + 2
                while end + 1 < bytes.count, !(bytes[end] == UInt8(ascii: "*") && bytes[end + 1] == UInt8(ascii: "/")) {
                    end += 1
                }
                end = min(end + 2, bytes.count)
                out.append(contentsOf: bytes[i..<end])
                i = end
            case UInt8(ascii: "?") where i + 1 < bytes.count && Self.isDigit(bytes[i + 1]):
                out.append(UInt8(ascii: "$"))
                i += 1
            default:
                out.append(byte)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - Locking

    /// The clause that ends a `SELECT` whose rows the transaction will change: on PostgreSQL
    /// `FOR UPDATE`, or `FOR UPDATE SKIP LOCKED` (rows another transaction holds are left out:
    /// for work queues such as the outbox, where any instance may take any free row); on
    /// SQLite `""`, since its single writer already excludes every other writer for the
    /// whole transaction. `tables` (names or aliases of the `FROM` list) limits the lock to
    /// those tables' rows: `forUpdate(of: ["t", "s"])` is `FOR UPDATE OF t, s`.
    public func forUpdate(of tables: [String] = [], skipLocked: Bool = false) -> String {
        switch self {
        case .sqlite: ""
        case .postgres:
            "FOR UPDATE" + (tables.isEmpty ? "" : " OF " + tables.joined(separator: ", ")) + (skipLocked ? " SKIP LOCKED" : "")
        }
    }

    /// The row-lock clause a per-user lock takes (`FOR NO KEY UPDATE` on PostgreSQL: excludes
    /// other writers of the row but not inserts that reference it, which take `FOR KEY SHARE`;
    /// docs §13.3.2 "Row-Level Locks"), `""` on SQLite, whose single writer already excludes
    /// every other writer.
    public var forNoKeyUpdate: String {
        switch self {
        case .sqlite: ""
        case .postgres: "FOR NO KEY UPDATE"
        }
    }

    // MARK: - Column types and table options

    /// The column type for raw bytes: `BLOB` on SQLite, `BYTEA` on PostgreSQL.
    public var bytesType: String {
        switch self {
        case .sqlite: "BLOB"
        case .postgres: "BYTEA"
        }
    }

    /// The column type for a 64-bit signed integer: `INTEGER` on SQLite (its integers are
    /// already 64-bit; an `INTEGER PRIMARY KEY` is the rowid), `BIGINT` on PostgreSQL (its
    /// `INTEGER` is 32-bit).
    public var int64Type: String {
        switch self {
        case .sqlite: "INTEGER"
        case .postgres: "BIGINT"
        }
    }

    /// The table option for a table stored by its primary key rather than by a hidden rowid:
    /// `WITHOUT ROWID` on SQLite, `""` on PostgreSQL (heap tables have no such choice). Goes
    /// after the closing parenthesis of `CREATE TABLE`.
    public var withoutRowID: String {
        switch self {
        case .sqlite: "WITHOUT ROWID"
        case .postgres: ""
        }
    }

    // MARK: - Replace

    /// An insert that replaces the row with the same key, with numbered placeholders of this
    /// dialect for `columns` in order (`?1` … on SQLite, `$1` … on PostgreSQL):
    /// - SQLite: `INSERT OR REPLACE INTO table (a, b, c) VALUES (?1, ?2, ?3)`;
    /// - PostgreSQL: `INSERT INTO table (a, b, c) VALUES ($1, $2, $3) ON CONFLICT (a) DO
    ///   UPDATE SET b = excluded.b, c = excluded.c` (`DO NOTHING` when every column is in
    ///   `key`).
    ///
    /// The row that results is the same. What differs: SQLite's `REPLACE` deletes the old row
    /// (firing delete triggers and `ON DELETE` actions, and replacing on a conflict with any
    /// unique index), while PostgreSQL's form updates in place and replaces only on a
    /// conflict of `key`. Use it where `key` is the only unique key and no foreign key points
    /// at the table with an `ON DELETE` action; otherwise write `ON CONFLICT (…) DO UPDATE`,
    /// which is the same text on both engines.
    /// - Parameters:
    ///   - table: the table name, as written in SQL.
    ///   - columns: the inserted columns, in argument order.
    ///   - key: the columns of the primary key or unique index that identifies the row.
    public func insertOrReplace(into table: String, columns: [String], key: [String]) -> String {
        let values = "VALUES (\(placeholders(columns.count)))"
        let columnList = columns.joined(separator: ", ")
        switch self {
        case .sqlite:
            return "INSERT OR REPLACE INTO \(table) (\(columnList)) \(values)"
        case .postgres:
            let keySet = Set(key)
            let updates = columns.filter { !keySet.contains($0) }.map { "\($0) = excluded.\($0)" }
            let action = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(updates.joined(separator: ", "))"
            return "INSERT INTO \(table) (\(columnList)) \(values) ON CONFLICT (\(key.joined(separator: ", "))) \(action)"
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
