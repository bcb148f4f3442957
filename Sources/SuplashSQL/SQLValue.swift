/// One SQL value, as bound to a statement parameter or read from a result column, on either
/// engine (SQLite through `SuplashStorage`, PostgreSQL through `SuplashPostgres`).
///
/// The five cases are SQLite's storage classes (https://sqlite.org/datatype3.html §2):
/// `NULL`, `INTEGER` (64-bit signed), `REAL` (IEEE-754 double), `TEXT` (UTF-8) and `BLOB`.
/// Binding a `.real(.nan)` stores `NULL` under SQLite (SQLite's rule). The libpq driver maps
/// them to and from PostgreSQL's types (`BIGINT`, `DOUBLE PRECISION`, `TEXT`, `BYTEA`).
public enum SQLValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A double-precision float.
    case real(Double)
    /// UTF-8 text (may contain U+0000; it is bound with an explicit byte length).
    case text(String)
    /// Raw bytes. An empty blob stays an empty blob (it is not turned into `NULL`).
    case blob([UInt8])

    /// `true` for `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension SQLValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByNilLiteral, ExpressibleByBooleanLiteral
{
    /// `42` → `.integer(42)`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// `2.5` → `.real(2.5)`.
    public init(floatLiteral value: Double) { self = .real(value) }
    /// `"x"` → `.text("x")`.
    public init(stringLiteral value: String) { self = .text(value) }
    /// `nil` → `.null`.
    public init(nilLiteral: ()) { self = .null }
    /// `true` → `.integer(1)`, `false` → `.integer(0)` (SQLite has no boolean class).
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

extension SQLValue {
    /// `.integer(Int64(value))`.
    public static func int(_ value: Int) -> SQLValue { .integer(Int64(value)) }

    /// `.text(value)` or `.null` when `value` is `nil`.
    public static func optionalText(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }

    /// `.integer(value)` or `.null` when `value` is `nil`.
    public static func optionalInteger(_ value: Int64?) -> SQLValue { value.map(SQLValue.integer) ?? .null }

    /// `.real(value)` or `.null` when `value` is `nil`.
    public static func optionalReal(_ value: Double?) -> SQLValue { value.map(SQLValue.real) ?? .null }
}

/// Column accessors for row mappings on either engine: a value as the Swift type a model
/// field wants, nil for NULL or another storage class (never a throw, never a trap).
extension SQLValue {
    /// An integer; a real with an exact integral value too (PostgreSQL `numeric`).
    public var int64: Int64? {
        switch self {
        case .integer(let i): i
        case .real(let d): Int64(exactly: d)
        default: nil
        }
    }

    /// A real; an integer too.
    public var double: Double? {
        switch self {
        case .real(let d): d
        case .integer(let i): Double(i)
        default: nil
        }
    }

    /// Text.
    public var text: String? {
        if case .text(let s) = self { return s }
        return nil
    }

    /// A blob.
    public var bytes: [UInt8]? {
        if case .blob(let b) = self { return b }
        return nil
    }
}
