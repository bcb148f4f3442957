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
    ///
    /// Native strings compare their contiguous UTF-8 storage directly (a length check, then
    /// the bytes); others fall back to walking both views.
    @inlinable
    public func hasSameCodePoints<Other: StringProtocol>(as other: Other) -> Bool {
        let lhs = utf8
        let rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        let contiguous = lhs.withContiguousStorageIfAvailable { l in
            rhs.withContiguousStorageIfAvailable { r in sameBytes(l, r) }
        }
        if let contiguous, let equal = contiguous { return equal }
        return lhs.elementsEqual(rhs)
    }
}

/// True when `lhs` and `rhs` hold the same bytes: eight bytes per comparison, then the tail.
@inlinable
func sameBytes(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
    guard lhs.count == rhs.count else { return false }
    guard let l = lhs.baseAddress, let r = rhs.baseAddress else { return true }
    let left = UnsafeRawPointer(l)
    let right = UnsafeRawPointer(r)
    var index = 0
    while index + 8 <= lhs.count {
        if left.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            != right.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        {
            return false
        }
        index += 8
    }
    while index < lhs.count {
        if lhs[index] != rhs[index] { return false }
        index += 1
    }
    return true
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

    /// Hashes the UTF-8 bytes in one call (consistent with `==`; a string without contiguous
    /// storage is copied first, so both paths feed the hasher the same bytes).
    public func hash(into hasher: inout Hasher) {
        let utf8 = string.utf8
        let done: Void? = utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if done == nil { Array(utf8).withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    /// The string.
    public var description: String { string }
}
