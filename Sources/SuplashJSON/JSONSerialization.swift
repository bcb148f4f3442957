// Compact RFC 8259 writer, RFC 6901 pointer escaping, and small builders.

extension JSONValue {
    /// The compact UTF-8 JSON text of this value (RFC 8259): no insignificant whitespace,
    /// object members in stored order, numbers written as their stored text, strings with
    /// `"` and `\` escaped, U+0000–U+001F written as `\u00XX`, everything else raw UTF-8.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(into: &out)
        return out
    }

    /// `serialized()` as a `String`.
    public func serializedString() -> String {
        String(decoding: serialized(), as: UTF8.self)
    }

    /// Appends the compact JSON text of this value to `out` (see `serialized()`).
    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(true): out.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
        case .bool(false): out.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
        case .number(let n): out.append(contentsOf: n.text.utf8)
        case .string(let s): JSONValue.writeString(s, into: &out)
        case .array(let elements):
            out.append(0x5B)
            for (k, e) in elements.enumerated() {
                if k > 0 { out.append(0x2C) }
                e.write(into: &out)
            }
            out.append(0x5D)
        case .object(let members):
            out.append(0x7B)
            for (k, m) in members.enumerated() {
                if k > 0 { out.append(0x2C) }
                JSONValue.writeString(m.0, into: &out)
                out.append(0x3A)
                m.1.write(into: &out)
            }
            out.append(0x7D)
        }
    }

    /// Appends `string` as a quoted, escaped JSON string (RFC 8259 §7) to `out`.
    public static func writeString(_ string: String, into out: inout [UInt8]) {
        out.append(0x22)
        var s = string
        s.withUTF8 { buffer in
            var runStart = 0
            for k in 0..<buffer.count {
                let b = buffer[k]
                guard b < 0x20 || b == 0x22 || b == 0x5C else { continue }
                if runStart < k { out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[runStart..<k])) }
                runStart = k + 1
                if b == 0x22 || b == 0x5C {
                    out.append(0x5C)
                    out.append(b)
                } else {
                    let low = b & 0xF
                    out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, 0x30 + (b >> 4), low < 10 ? 0x30 + low : 0x57 + low])
                }
            }
            if runStart < buffer.count {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[runStart...]))
            }
        }
        out.append(0x22)
    }
}

/// RFC 6901 JSON Pointer helpers (used for `errors[].pointer` in problem responses).
public enum JSONPointer {
    /// Escapes one reference token: `~` → `~0`, then `/` → `~1` (RFC 6901 §3/§4).
    /// `"a/b~c"` → `"a~1b~0c"`.
    public static func escape(_ token: String) -> String {
        guard token.utf8.contains(where: { $0 == 0x7E || $0 == 0x2F }) else { return token }
        var out: [UInt8] = []
        out.reserveCapacity(token.utf8.count + 4)
        for b in token.utf8 {
            switch b {
            case 0x7E: out.append(contentsOf: [0x7E, 0x30])
            case 0x2F: out.append(contentsOf: [0x7E, 0x31])
            default: out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A pointer from unescaped reference tokens: `["entries", "0", "a/b"]` →
    /// `"/entries/0/a~1b"`; `[]` → `""` (the whole document).
    public static func pointer(_ tokens: [String]) -> String {
        tokens.reduce(into: "") { $0 += "/" + escape($1) }
    }
}

// MARK: - Builders and accessors

extension JSONValue {
    /// An integer number (`.int(250)` → `250`).
    public static func int(_ value: some BinaryInteger) -> JSONValue {
        .number(JSONNumber(validatedText: String(value)))
    }

    /// A number from a finite double in shortest round-trip form (`62.5`, `250`);
    /// `.null` for NaN or ±infinity, which JSON cannot represent.
    public static func double(_ value: Double) -> JSONValue {
        guard let n = JSONNumber(exactly: value) else { return .null }
        return .number(n)
    }

    /// `.string(value)`, or `.null` when `value` is nil.
    public static func optional(_ value: String?) -> JSONValue {
        value.map(JSONValue.string) ?? .null
    }

    /// The number payload, or nil.
    public var numberValue: JSONNumber? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The exact integral value of a number that fits `Int64` (see `JSONNumber.int64Value`);
    /// nil for non-numbers (`true` is not 1).
    public var int64Value: Int64? { numberValue?.int64Value }

    /// The bool payload, or nil (numbers are not bools).
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The elements of an array, or nil.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The members of an object in order, or nil.
    public var objectValue: [(String, JSONValue)]? {
        if case .object(let o) = self { return o }
        return nil
    }
}

/// `let v: JSONValue = ["a": 1, "b": [true, nil]]` — literals build values; dictionary
/// literals keep their written order (write each key once).
extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `nil` → `.null`.
    public init(nilLiteral: ()) { self = .null }
    /// `true`/`false` → `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer literal → `.number`.
    public init(integerLiteral value: Int64) { self = .number(JSONNumber(value)) }
    /// A float literal → `.number` (shortest round-trip text).
    public init(floatLiteral value: Double) { self = JSONValue.double(value) }
    /// A string literal → `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array literal → `.array`.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// A dictionary literal → `.object`, members in written order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements) }
}
