/// Code-point comparison of request strings (spec §1): field names, enum values and query
/// parameter names are compared Unicode scalar by Unicode scalar, with no normalisation.
///
/// Swift's `String ==` and `String` hashing use canonical equivalence, so
/// `"weight\u{212A}g" == "weightKg"` (U+212A KELVIN SIGN is canonically `K`). A JSON member
/// name, an enum value or a query name must not match a different spelling that way: a
/// Kelvin-sign name is an unknown field, not `weightKg`. Two strings have the same code
/// points exactly when their UTF-8 bytes are equal (UTF-8 is a bijection on scalars), so
/// comparisons here are on `utf8`.
extension StringProtocol {
    /// True when `self` and `other` are the same sequence of Unicode scalars (equal UTF-8
    /// bytes), never by Unicode canonical equivalence.
    @inlinable
    public func hasSameCodePoints<Other: StringProtocol>(as other: Other) -> Bool {
        utf8.elementsEqual(other.utf8)
    }
}

extension Sequence where Element: StringProtocol {
    /// The first element with the same code points as `value` (see `hasSameCodePoints`), or nil.
    @inlinable
    public func firstWithSameCodePoints<Other: StringProtocol>(as value: Other) -> Element? {
        first(where: { $0.hasSameCodePoints(as: value) })
    }

    /// True when an element has the same code points as `value`.
    @inlinable
    public func containsCodePoints<Other: StringProtocol>(_ value: Other) -> Bool {
        contains(where: { $0.hasSameCodePoints(as: value) })
    }
}

/// A `String` used as a dictionary key or set element that is equal and hashes by its
/// code points (UTF-8 bytes), never by Unicode canonical equivalence (spec §1).
public struct CodePointKey: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The string as given.
    public let string: String

    /// Wraps `string`.
    public init(_ string: String) { self.string = string }

    /// Wraps a literal.
    public init(stringLiteral value: String) { self.string = value }

    /// Equal when the code points are equal.
    public static func == (lhs: CodePointKey, rhs: CodePointKey) -> Bool {
        lhs.string.hasSameCodePoints(as: rhs.string)
    }

    /// Hashes the UTF-8 bytes (consistent with `==`).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(string.utf8.count)
        for byte in string.utf8 { hasher.combine(byte) }
    }

    /// The string.
    public var description: String { string }
}
