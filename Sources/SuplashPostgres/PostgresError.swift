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
        default:
            if sqlState.hasPrefix("23") { return .constraintViolation }
            if sqlState.hasPrefix("08") || sqlState.hasPrefix("57P") { return .connectionFailure }
            if sqlState.hasPrefix("42") { return .syntax }
            return .other
        }
    }
}
