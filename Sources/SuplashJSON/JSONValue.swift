/// A JSON number kept as its exact RFC 8259 text, so integral checks and range checks
/// never go through a lossy conversion first (`250.0` is integral, `2.5` is not, `1e400`
/// does not fit a double).
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number's text exactly as it appeared in the input (or as produced by an initializer).
    public let text: String

    /// Wraps already-validated RFC 8259 number text. Callers that build numbers from Swift
    /// values should use `init(_ value: Int64)` / `init(_ value: Double)` instead.
    public init(validatedText text: String) { self.text = text }

    /// An integer, written in decimal (`250`, `-3`).
    public init(_ value: Int) { self.text = String(value) }
    /// An integer, written in decimal (`250`, `-3`).
    public init(_ value: Int64) { self.text = String(value) }

    /// A finite double, written in the shortest form that round-trips (`62.5`, `0.001`).
    /// NaN and ±infinity have no JSON form: they are written as `null` (as JavaScript's
    /// `JSON.stringify` does) and such a number has no `int64Value`/`doubleValue`. Prefer
    /// `init?(exactly:)` or `JSONValue.double(_:)` when the value may not be finite.
    public init(_ value: Double) {
        guard value.isFinite else {
            self.text = "null"
            return
        }
        if value.rounded() == value, abs(value) < 1e15 {
            self.text = String(Int64(value))
        } else {
            self.text = "\(value)"
        }
    }

    /// The number's text.
    public var description: String { text }
}

/// An RFC 8259 JSON value as read by `JSONParser` or built for output.
///
/// Objects keep their member order (`[(key, value)]`); the parser rejects duplicate keys,
/// so a key appears at most once.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// Structural equality; numbers compare by text (`1.0` ≠ `1`), objects by ordered members,
    /// strings and member names by code points (no Unicode normalisation, spec §1).
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a.hasSameCodePoints(as: b)
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for (x, y) in zip(a, b) where !x.0.hasSameCodePoints(as: y.0) || x.1 != y.1 { return false }
            return true
        default: return false
        }
    }

    /// Hashes consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b)
        case .number(let n): hasher.combine(n)
        case .string(let s): hasher.combine(CodePointKey(s))
        case .array(let a): hasher.combine(a)
        case .object(let o):
            for (k, v) in o {
                hasher.combine(CodePointKey(k))
                hasher.combine(v)
            }
        }
    }

    /// The member named `key` of an object (names compared by code points), or nil (also
    /// for non-objects).
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first(where: { $0.0.hasSameCodePoints(as: key) })?.1
    }

    /// The string payload, or nil.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// True for `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
