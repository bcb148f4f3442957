/// A PostgreSQL failure, classified by its SQLSTATE (https://www.postgresql.org/docs/15/errcodes-appendix.html).
///
/// `message` is the server's (or libpq's) text: it may quote row values, so it is never
/// logged or shown — log `description`, which carries only `kind` and `sqlState`.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in the terms callers act on.
    public enum Kind: String, Sendable {
        /// 23505 `unique_violation`.
        case uniqueViolation
        /// 23503 `foreign_key_violation`.
        case foreignKeyViolation
        /// 23502 `not_null_violation`, 23514 `check_violation`, other class 23.
        case constraintViolation
        /// 40001 `serialization_failure`: retry the whole transaction.
        case serializationFailure
        /// 40P01 `deadlock_detected`: retry the whole transaction.
        case deadlockDetected
        /// Class 08 or a lost connection (libpq reported `CONNECTION_BAD`).
        case connectionFailure
        /// 57P01 `admin_shutdown`, 57P02 `crash_shutdown`, 57P03 `cannot_connect_now`,
        /// 57P04 `database_dropped`, 57P05 `idle_session_timeout`: the server is shutting
        /// down, restarting or starting, or ended the session.
        case serverShutdown
        /// 53100 `disk_full`.
        case diskFull
        /// Other class 53 (insufficient resources): 53200 `out_of_memory`, 53300
        /// `too_many_connections`, 53400 `configuration_limit_exceeded`.
        case insufficientResources
        /// 25006 `read_only_sql_transaction`: a write on a standby or with
        /// `default_transaction_read_only`.
        case readOnlyTransaction
        /// XX001 `data_corrupted`, XX002 `index_corrupted`.
        case dataCorrupted
        /// Class 58 (system error): 58030 `io_error`, 58P01 `undefined_file`, ….
        case systemError
        /// 57014 `query_canceled` (statement timeout) or 55P03 `lock_not_available`.
        case timeout
        /// 42xxx: syntax error or undefined object — a programming error.
        case syntax
        /// The pool had no free connection within its wait limit.
        case poolExhausted
        /// A parameter cannot be sent (text containing U+0000).
        case invalidParameter
        /// A value read back could not be decoded.
        case decoding
        /// Anything else.
        case other
    }

    /// The classification.
    public let kind: Kind
    /// Five-character SQLSTATE, or "" when libpq failed before the server answered.
    public let sqlState: String
    /// Server or libpq text; may contain data — never log it.
    public let message: String

    /// Creates an error from a SQLSTATE (the kind is derived from it).
    public init(sqlState: String, message: String) {
        self.sqlState = sqlState
        self.message = message
        self.kind = PostgresError.kind(for: sqlState)
    }

    /// Creates an error with an explicit kind (client-side failures).
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.sqlState = ""
        self.message = message
    }

    /// Whether re-running the whole transaction may succeed (serialization failure, deadlock).
    public var isTransient: Bool { kind == .serializationFailure || kind == .deadlockDetected }

    /// Safe to log: kind and SQLSTATE only.
    public var description: String { "PostgresError(\(kind.rawValue), sqlstate: \(sqlState))" }

    /// Maps a SQLSTATE to its kind.
    public static func kind(for sqlState: String) -> Kind {
        switch sqlState {
        case "23505": return .uniqueViolation
        case "23503": return .foreignKeyViolation
        case "40001": return .serializationFailure
        case "40P01": return .deadlockDetected
        case "57014", "55P03": return .timeout
        case "53100": return .diskFull
        case "25006": return .readOnlyTransaction
        case "XX001", "XX002": return .dataCorrupted
        default:
            if sqlState.hasPrefix("23") { return .constraintViolation }
            if sqlState.hasPrefix("08") { return .connectionFailure }
            if sqlState.hasPrefix("57P") { return .serverShutdown }
            if sqlState.hasPrefix("53") { return .insufficientResources }
            if sqlState.hasPrefix("58") { return .systemError }
            if sqlState.hasPrefix("42") { return .syntax }
            return .other
        }
    }
}
