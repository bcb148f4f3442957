import SuplashSQL

/// The column names of one result set, shared by all its rows.
public final class SQLiteColumns: Sendable {
    /// Column names in result order (`sqlite3_column_name`).
    public let names: [String]
    private let indexByName: [String: Int]

    init(names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (i, name) in names.enumerated() where index[name] == nil {
            index[name] = i  // the first of duplicate names wins
        }
        self.indexByName = index
    }

    /// Index of the first column called exactly `name`, or `nil`. Up to 16 columns a linear
    /// scan (names are short, mostly inline small strings compared in a word or two) beats
    /// hashing `name`, which was the larger part of decoding a row by column names.
    public func index(of name: String) -> Int? {
        if names.count <= 16 {
            // Lengths first: most names differ in length, and comparing two different
            // strings costs a runtime call where comparing two integers costs nothing.
            let length = name.utf8.count
            for i in names.indices where names[i].utf8.count == length && names[i] == name { return i }
            return nil
        }
        return indexByName[name]
    }
}

/// One result row: values by index or by column name, plus typed accessors.
///
/// Typed accessors (`int64`, `string`, `double`, `blob`) throw `StorageError` of kind
/// `.typeMismatch` when the value is `NULL` or of another storage class, and of kind `.misuse`
/// for an unknown column name or an index out of range. `optional…` variants return `nil`
/// for `NULL` instead.
public struct SQLiteRow: Sendable, SQLRowValues {
    /// The values in column order.
    public let values: [SQLValue]
    /// The result set's column names.
    public let columns: SQLiteColumns

    /// Creates a row (mostly for tests; rows normally come from `SQLiteConnection.query`).
    public init(values: [SQLValue], columns: SQLiteColumns) {
        self.values = values
        self.columns = columns
    }

    /// Number of columns.
    public var count: Int { values.count }

    /// The value of column `index` (0-based). Traps when out of range, like an array.
    public subscript(_ index: Int) -> SQLValue { values[index] }

    /// The value of the column called `name`, or `.null` when there is no such column.
    /// Use the typed accessors to get an error for a misspelt name instead.
    public subscript(_ name: String) -> SQLValue {
        guard let i = columns.index(of: name) else { return .null }
        return values[i]
    }

    /// The value at `index`, or a `.misuse` error when out of range.
    public func value(at index: Int) throws -> SQLValue {
        guard values.indices.contains(index) else {
            throw StorageError(code: 25, kind: .misuse, message: "column index \(index) out of range 0..<\(values.count)")
        }
        return values[index]
    }

    /// The value of column `name`, or a `.misuse` error when there is no such column.
    public func value(named name: String) throws -> SQLValue {
        guard let i = columns.index(of: name) else {
            throw StorageError(code: 25, kind: .misuse, message: "no column named \(name)")
        }
        return values[i]
    }

    /// `true` when column `index` is `NULL`.
    public func isNull(_ index: Int) throws -> Bool { try value(at: index).isNull }
    /// `true` when column `name` is `NULL`.
    public func isNull(_ name: String) throws -> Bool { try value(named: name).isNull }

    /// Column `index` as `Int64` (storage class `INTEGER` only).
    public func int64(_ index: Int) throws -> Int64 { try Self.int64(try value(at: index), "#\(index)") }
    /// Column `name` as `Int64` (storage class `INTEGER` only).
    public func int64(_ name: String) throws -> Int64 { try Self.int64(try value(named: name), name) }
    /// Column `index` as `Int64`, or `nil` for `NULL`.
    public func optionalInt64(_ index: Int) throws -> Int64? { try Self.optional(try value(at: index)) { try Self.int64($0, "#\(index)") } }
    /// Column `name` as `Int64`, or `nil` for `NULL`.
    public func optionalInt64(_ name: String) throws -> Int64? { try Self.optional(try value(named: name)) { try Self.int64($0, name) } }

    /// Column `index` as `String` (storage class `TEXT` only).
    public func string(_ index: Int) throws -> String { try Self.string(try value(at: index), "#\(index)") }
    /// Column `name` as `String` (storage class `TEXT` only).
    public func string(_ name: String) throws -> String { try Self.string(try value(named: name), name) }
    /// Column `index` as `String`, or `nil` for `NULL`.
    public func optionalString(_ index: Int) throws -> String? { try Self.optional(try value(at: index)) { try Self.string($0, "#\(index)") } }
    /// Column `name` as `String`, or `nil` for `NULL`.
    public func optionalString(_ name: String) throws -> String? { try Self.optional(try value(named: name)) { try Self.string($0, name) } }

    /// Column `index` as `Double` (`REAL`, or `INTEGER` converted exactly-as-possible).
    public func double(_ index: Int) throws -> Double { try Self.double(try value(at: index), "#\(index)") }
    /// Column `name` as `Double` (`REAL`, or `INTEGER` converted).
    public func double(_ name: String) throws -> Double { try Self.double(try value(named: name), name) }
    /// Column `index` as `Double`, or `nil` for `NULL`.
    public func optionalDouble(_ index: Int) throws -> Double? { try Self.optional(try value(at: index)) { try Self.double($0, "#\(index)") } }
    /// Column `name` as `Double`, or `nil` for `NULL`.
    public func optionalDouble(_ name: String) throws -> Double? { try Self.optional(try value(named: name)) { try Self.double($0, name) } }

    /// Column `index` as bytes (storage class `BLOB` only).
    public func blob(_ index: Int) throws -> [UInt8] { try Self.blob(try value(at: index), "#\(index)") }
    /// Column `name` as bytes (storage class `BLOB` only).
    public func blob(_ name: String) throws -> [UInt8] { try Self.blob(try value(named: name), name) }
    /// Column `index` as bytes, or `nil` for `NULL`.
    public func optionalBlob(_ index: Int) throws -> [UInt8]? { try Self.optional(try value(at: index)) { try Self.blob($0, "#\(index)") } }
    /// Column `name` as bytes, or `nil` for `NULL`.
    public func optionalBlob(_ name: String) throws -> [UInt8]? { try Self.optional(try value(named: name)) { try Self.blob($0, name) } }

    // MARK: - Decoding

    private static func optional<T>(_ value: SQLValue, _ decode: (SQLValue) throws -> T) throws -> T? {
        if case .null = value { return nil }
        return try decode(value)
    }

    private static func int64(_ value: SQLValue, _ column: @autoclosure () -> String) throws -> Int64 {
        if case .integer(let v) = value { return v }
        throw StorageError.typeMismatch("column \(column()): expected INTEGER, found \(className(value))")
    }

    private static func string(_ value: SQLValue, _ column: @autoclosure () -> String) throws -> String {
        if case .text(let v) = value { return v }
        throw StorageError.typeMismatch("column \(column()): expected TEXT, found \(className(value))")
    }

    private static func double(_ value: SQLValue, _ column: @autoclosure () -> String) throws -> Double {
        switch value {
        case .real(let v): return v
        case .integer(let v): return Double(v)
        default: throw StorageError.typeMismatch("column \(column()): expected REAL, found \(className(value))")
        }
    }

    private static func blob(_ value: SQLValue, _ column: @autoclosure () -> String) throws -> [UInt8] {
        if case .blob(let v) = value { return v }
        throw StorageError.typeMismatch("column \(column()): expected BLOB, found \(className(value))")
    }

    private static func className(_ value: SQLValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }
}
