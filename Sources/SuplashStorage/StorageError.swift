import CSQLite

/// The one error type of the storage layer.
///
/// `code` is SQLite's *extended* result code (https://sqlite.org/rescode.html), for example
/// `2067` (`SQLITE_CONSTRAINT_UNIQUE`). Errors raised by this library itself (misuse, a closed
/// database, a type mismatch while decoding a row) use the closest SQLite code:
/// `SQLITE_MISUSE` (21), `SQLITE_MISMATCH` (20) or `SQLITE_RANGE` (25).
///
/// `message` is SQLite's own text (`sqlite3_errmsg`). **Never log it**: it can contain data
/// (for example the conflicting value of a `UNIQUE` constraint or a fragment of SQL). Log
/// `kind` and `code` instead; `description` deliberately omits the message.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, coarsely, so callers can map it to an API answer without reading codes.
    public enum Kind: String, Sendable, Hashable {
        /// `SQLITE_CONSTRAINT_UNIQUE` (2067): a `UNIQUE` index or constraint.
        case constraintUnique
        /// `SQLITE_CONSTRAINT_PRIMARYKEY` (1555), including a duplicate `INTEGER PRIMARY KEY`.
        case constraintPrimaryKey
        /// `SQLITE_CONSTRAINT_FOREIGNKEY` (787).
        case constraintForeignKey
        /// `SQLITE_CONSTRAINT_CHECK` (275).
        case constraintCheck
        /// `SQLITE_CONSTRAINT_NOTNULL` (1299).
        case constraintNotNull
        /// Any other `SQLITE_CONSTRAINT` (19) variant (trigger `RAISE`, `ROWID`, …).
        case constraint
        /// `SQLITE_BUSY` (5) after the busy timeout, or `SQLITE_LOCKED` (6).
        case busy
        /// `SQLITE_CORRUPT` (11) or `SQLITE_NOTADB` (26).
        case corrupt
        /// `SQLITE_IOERR` (10, any extended variant such as `SQLITE_IOERR_WRITE` 778 or
        /// `SQLITE_IOERR_FSYNC` 1034) or `SQLITE_CANTOPEN` (14).
        case ioError
        /// `SQLITE_FULL` (13): disk (or `max_page_count`) full.
        case full
        /// `SQLITE_READONLY` (8, any extended variant such as `SQLITE_READONLY_DIRECTORY`
        /// 1544): the file, its directory or the file system cannot be written, or a write
        /// went through a read-only connection (any reader).
        case readOnly
        /// `SQLITE_MISMATCH` (20), or a row value of an unexpected type when decoding.
        case typeMismatch
        /// `SQLITE_MISUSE` (21) / `SQLITE_RANGE` (25) / `SQLITE_AUTH` (23): the library was
        /// used wrongly (unknown column name, parameter count, a blocking write on the writer
        /// thread, transaction control inside a group write job).
        case misuse
        /// The database was closed (the server is shutting down); code `SQLITE_MISUSE` (21).
        case closed
        /// Anything else; look at `code`.
        case other
    }

    /// SQLite extended result code.
    public let code: Int32
    /// Coarse classification of `code`.
    public let kind: Kind
    /// SQLite's message, for debugging only. Never log this: it can contain data.
    public let message: String

    /// Creates an error from an extended result code; `kind` is derived from `code`.
    public init(code: Int32, message: String) {
        self.code = code
        self.kind = StorageError.kind(for: code)
        self.message = message
    }

    /// Creates an error with an explicit kind (used for library-detected misuse).
    public init(code: Int32, kind: Kind, message: String) {
        self.code = code
        self.kind = kind
        self.message = message
    }

    /// Safe to log: kind and code only, never the message.
    public var description: String { "StorageError(\(kind.rawValue), code: \(code))" }

    /// Maps an extended result code to its kind (https://sqlite.org/rescode.html).
    public static func kind(for code: Int32) -> Kind {
        switch code {
        case ResultCode.constraintUnique: return .constraintUnique
        case ResultCode.constraintPrimaryKey: return .constraintPrimaryKey
        case ResultCode.constraintForeignKey: return .constraintForeignKey
        case ResultCode.constraintCheck: return .constraintCheck
        case ResultCode.constraintNotNull: return .constraintNotNull
        default: break
        }
        switch code & 0xff {
        case SQLITE_CONSTRAINT: return .constraint
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .corrupt
        case SQLITE_IOERR, SQLITE_CANTOPEN: return .ioError
        case SQLITE_FULL: return .full
        case SQLITE_READONLY: return .readOnly
        case SQLITE_MISMATCH: return .typeMismatch
        case SQLITE_MISUSE, SQLITE_RANGE, SQLITE_AUTH: return .misuse
        default: return .other
        }
    }

    static func misuse(_ message: String) -> StorageError {
        StorageError(code: SQLITE_MISUSE, kind: .misuse, message: message)
    }

    static func closed() -> StorageError {
        StorageError(code: SQLITE_MISUSE, kind: .closed, message: "the database is closed")
    }

    static func typeMismatch(_ message: String) -> StorageError {
        StorageError(code: SQLITE_MISMATCH, kind: .typeMismatch, message: message)
    }
}

/// Extended result codes that the C header defines as macro expressions (not importable).
enum ResultCode {
    static let constraintCheck: Int32 = SQLITE_CONSTRAINT | (1 << 8)  // 275
    static let constraintForeignKey: Int32 = SQLITE_CONSTRAINT | (3 << 8)  // 787
    static let constraintNotNull: Int32 = SQLITE_CONSTRAINT | (5 << 8)  // 1299
    static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)  // 1555
    static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)  // 2067
}
