import SuplashJSON

/// Reads typed fields out of a JSON object and collects a `FieldError` for each bad one,
/// so a single response can list every problem (spec §2).
///
/// Each `read…` call takes the member name; a missing member or (when `allowNull`)
/// a JSON `null` come back as `.absent` / `.null`, so merge-patch callers can tell
/// "leave unchanged" from "reset to default" (RFC 7396).
public struct FieldReader {
    /// A field's outcome.
    public enum Value<T> {
        case absent
        case null
        case value(T)
        case invalid
    }

    public private(set) var errors: [FieldError] = []
    private let members: [(String, JSONValue)]
    private let prefix: String

    /// - Parameters:
    ///   - members: the object's members.
    ///   - prefix: pointer prefix for nested objects (`""` at the top level).
    public init(members: [(String, JSONValue)], prefix: String = "") {
        self.members = members
        self.prefix = prefix
    }

    /// Records an error at `/name`.
    public mutating func fail(_ name: String, _ code: FieldErrorCode, _ message: String) {
        errors.append(FieldError(pointer(name), code, message))
    }

    /// Records an error at an explicit pointer.
    public mutating func fail(pointer: String, _ code: FieldErrorCode, _ message: String) {
        errors.append(FieldError(pointer, code, message))
    }

    /// `/name`, RFC 6901-escaped, under the reader's prefix.
    public func pointer(_ name: String) -> String {
        prefix + "/" + JSONPointer.escape(name)
    }

    /// Flags every member not in `writable`: names in `readOnly` get `read_only_field`,
    /// the rest `unknown_field` (a typo must not be silently dropped, spec §1). Names are
    /// compared by code points, never by Unicode equivalence: `"weight\u{212A}g"` (KELVIN
    /// SIGN) is an unknown field, not `weightKg` (spec §1).
    public mutating func rejectOthers(writable: Set<String>, readOnly: Set<String>) {
        for (name, _) in members where !writable.containsCodePoints(name) {
            if readOnly.containsCodePoints(name) {
                fail(name, .readOnlyField, "read-only field")
            } else {
                fail(name, .unknownField, "unknown field")
            }
        }
    }

    /// The member named `name`, compared by code points (spec §1).
    func raw(_ name: String) -> JSONValue? {
        members.first(where: { $0.0.hasSameCodePoints(as: name) })?.1
    }

    /// An integer in `range`; integral JSON numbers only (`250`, `250.0`; not `2.5`, `true`, `"250"`).
    public mutating func int(_ name: String, in range: ClosedRange<Int64>, required: Bool = false) -> Value<Int64> {
        guard let v = raw(name) else {
            if required { fail(name, .required, "required") }
            return .absent
        }
        switch v {
        case .null:
            if required {
                fail(name, .required, "required")
                return .invalid
            }
            return .null
        case .number(let n):
            guard n.isIntegral else {
                fail(name, .invalidType, "must be an integer")
                return .invalid
            }
            guard let i = n.int64Value, range.contains(i) else {
                fail(name, .outOfRange, "must be between \(range.lowerBound) and \(range.upperBound)")
                return .invalid
            }
            return .value(i)
        default:
            fail(name, .invalidType, "must be an integer")
            return .invalid
        }
    }

    /// A finite number in `range`, with at most `maxDecimals` decimal places when given.
    public mutating func number(
        _ name: String, in range: ClosedRange<Double>, maxDecimals: Int? = nil,
        required: Bool = false
    ) -> Value<Double> {
        guard let v = raw(name) else {
            if required { fail(name, .required, "required") }
            return .absent
        }
        switch v {
        case .null:
            if required {
                fail(name, .required, "required")
                return .invalid
            }
            return .null
        case .number(let n):
            guard let d = n.doubleValue, range.contains(d) else {
                fail(name, .outOfRange, "must be between \(range.lowerBound) and \(range.upperBound)")
                return .invalid
            }
            if let maxDecimals, n.decimalPlaces > maxDecimals {
                fail(name, .invalidFormat, "at most \(maxDecimals) decimal places")
                return .invalid
            }
            return .value(d)
        default:
            fail(name, .invalidType, "must be a number")
            return .invalid
        }
    }

    /// A string; `maxLength` counts characters (extended grapheme clusters, spec §1).
    public mutating func string(_ name: String, minLength: Int = 0, maxLength: Int, required: Bool = false) -> Value<String> {
        guard let v = raw(name) else {
            if required { fail(name, .required, "required") }
            return .absent
        }
        switch v {
        case .null:
            if required {
                fail(name, .required, "required")
                return .invalid
            }
            return .null
        case .string(let s):
            let count = s.count
            if count > maxLength {
                fail(name, .tooLong, "at most \(maxLength) characters")
                return .invalid
            }
            if count < minLength {
                fail(name, minLength == 1 && count == 0 ? .required : .outOfRange, "at least \(minLength) characters")
                return .invalid
            }
            return .value(s)
        default:
            fail(name, .invalidType, "must be a string")
            return .invalid
        }
    }

    /// A string that `parse` turns into `T`; nil from `parse` is `invalid_format`
    /// with `formatMessage`.
    public mutating func formatted<T>(
        _ name: String, required: Bool = false, formatMessage: String,
        parse: (String) -> T?
    ) -> Value<T> {
        guard let v = raw(name) else {
            if required { fail(name, .required, "required") }
            return .absent
        }
        switch v {
        case .null:
            if required {
                fail(name, .required, "required")
                return .invalid
            }
            return .null
        case .string(let s):
            guard let t = parse(s) else {
                fail(name, .invalidFormat, formatMessage)
                return .invalid
            }
            return .value(t)
        default:
            fail(name, .invalidType, "must be a string")
            return .invalid
        }
    }

    /// One of `allowed` (exact, case-sensitive, code point by code point: no Unicode
    /// equivalence, spec §1); the value is the matching element of `allowed`.
    public mutating func oneOf(_ name: String, _ allowed: [String], required: Bool = false) -> Value<String> {
        formatted(name, required: required, formatMessage: "must be one of: " + allowed.joined(separator: ", ")) {
            allowed.firstWithSameCodePoints(as: $0)
        }
    }

    /// The raw member, for fields with their own shape (arrays).
    public func member(_ name: String) -> JSONValue? { raw(name) }
}

extension FieldReader.Value {
    /// The payload of `.value`, else nil.
    public var value: T? {
        if case .value(let t) = self { return t }
        return nil
    }
}
