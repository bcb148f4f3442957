/// Exact semantics of a number's text, computed by decimal arithmetic on the digits (never
/// through `Double`), so `2.5e2` is exactly 250 and `0.1` has exactly one decimal place.
extension JSONNumber {
    /// Validates `text` against the RFC 8259 §6 number grammar
    /// (`-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`); nil when it does not match.
    public init?(text: String) {
        guard JSONNumber.isValidText(text) else { return nil }
        self.init(validatedText: text)
    }

    /// A finite `Double` as a number (same text as `init(_:)`), or nil for NaN / ±infinity,
    /// which JSON cannot represent.
    public init?(exactly value: Double) {
        guard value.isFinite else { return nil }
        self.init(value)
    }

    /// True when `text` matches the RFC 8259 §6 number grammar.
    public static func isValidText(_ text: String) -> Bool {
        var s = text.utf8[...]
        func digit(_ b: UInt8?) -> Bool { b.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }
        if s.first == 0x2D { s.removeFirst() }
        guard let first = s.first, digit(first) else { return false }
        if first == 0x30 {
            s.removeFirst()
        } else {
            while digit(s.first) { s.removeFirst() }
        }
        if s.first == 0x2E {
            s.removeFirst()
            guard digit(s.first) else { return false }
            while digit(s.first) { s.removeFirst() }
        }
        if s.first == 0x65 || s.first == 0x45 {
            s.removeFirst()
            if s.first == 0x2B || s.first == 0x2D { s.removeFirst() }
            guard digit(s.first) else { return false }
            while digit(s.first) { s.removeFirst() }
        }
        return s.isEmpty
    }

    /// The value as `sign × significand × 10^exponent` with the significand's leading and
    /// trailing zeros removed. `significand` is empty for zero (any spelling, incl. `-0`).
    struct Decomposed {
        var negative: Bool
        /// ASCII digits, no leading or trailing zeros; empty means zero.
        var significand: [UInt8]
        /// Decimal exponent applied to `significand`; saturated to ±(1 << 40).
        var exponent: Int
    }

    /// Splits the (grammar-valid) text into sign, significant digits and exponent.
    /// Nil only for the `null` text of a non-finite `init(_: Double)`.
    var decomposed: Decomposed? {
        let bytes = Array(text.utf8)
        guard let first = bytes.first, first == 0x2D || (first >= 0x30 && first <= 0x39) else { return nil }
        var k = 0
        var negative = false
        if k < bytes.count, bytes[k] == 0x2D {
            negative = true
            k += 1
        }
        var digits: [UInt8] = []
        digits.reserveCapacity(bytes.count)
        var fractionDigits = 0
        var inFraction = false
        while k < bytes.count {
            let b = bytes[k]
            if b >= 0x30 && b <= 0x39 {
                // Skip leading zeros of the whole digit string.
                if !(digits.isEmpty && b == 0x30) { digits.append(b) }
                if inFraction { fractionDigits += 1 }
            } else if b == 0x2E {
                inFraction = true
            } else {
                break
            }
            k += 1
        }
        // Leading zeros dropped before digits appeared still count as fraction digits, which is
        // right: 0.05 → digits "5", fractionDigits 2 → 5 × 10^-2.
        var exp = 0
        if k < bytes.count, bytes[k] == 0x65 || bytes[k] == 0x45 {
            k += 1
            var expNegative = false
            if k < bytes.count, bytes[k] == 0x2D || bytes[k] == 0x2B {
                expNegative = bytes[k] == 0x2D
                k += 1
            }
            let limit = 1 << 40
            while k < bytes.count {
                let d = Int(bytes[k]) - 0x30
                guard d >= 0 && d <= 9 else { break }
                if exp < limit { exp = exp * 10 + d }
                k += 1
            }
            if expNegative { exp = -exp }
        }
        var exponent = exp - fractionDigits
        while let last = digits.last, last == 0x30 {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty { exponent = 0 }
        return Decomposed(negative: negative && !digits.isEmpty, significand: digits, exponent: exponent)
    }

    /// True when the value is a whole number: `250`, `250.0`, `2.5e2`, `1e400`, `-0`;
    /// false for `2.5`, `1e-3`.
    public var isIntegral: Bool {
        guard let d = decomposed else { return false }
        return d.significand.isEmpty || d.exponent >= 0
    }

    /// The exact value when it is integral and fits `Int64`, else nil.
    /// `250` → 250, `250.0` → 250, `2.5e2` → 250, `1e2` → 100, `-0` → 0,
    /// `-9223372036854775808` → `Int64.min`; `2.5`, `-0.5`, `1e400`, `9223372036854775808` → nil.
    public var int64Value: Int64? {
        // Fast path: plain integers of up to 18 digits cannot overflow.
        let utf8 = text.utf8
        if utf8.count <= 18, !utf8.isEmpty {
            var v: Int64 = 0
            var negative = false
            var plain = true
            for (k, b) in utf8.enumerated() {
                if k == 0, b == 0x2D {
                    negative = true
                    continue
                }
                guard b >= 0x30 && b <= 0x39 else {
                    plain = false
                    break
                }
                v = v * 10 + Int64(b - 0x30)
            }
            if plain { return negative ? -v : v }
        }
        guard let d = decomposed else { return nil }
        if d.significand.isEmpty { return 0 }
        guard d.exponent >= 0, d.significand.count + d.exponent <= 19 else { return nil }
        // Accumulate negatively so Int64.min is reachable.
        var v: Int64 = 0
        for b in d.significand {
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.subtractingReportingOverflow(Int64(b - 0x30))
            if o1 || o2 { return nil }
            v = s
        }
        for _ in 0..<d.exponent {
            let (m, o) = v.multipliedReportingOverflow(by: 10)
            if o { return nil }
            v = m
        }
        if d.negative { return v }
        let (n, o) = (0 as Int64).subtractingReportingOverflow(v)
        return o ? nil : n
    }

    /// The nearest `Double` (IEEE 754 round-to-nearest, as `strtod`), or nil when the value
    /// is outside the finite range (`1e400`, `-1e400`). Underflow (`1e-400`) gives 0.
    public var doubleValue: Double? {
        guard let d = Double(text), d.isFinite else { return nil }
        return d
    }

    /// Digits after the decimal point once trailing zeros are dropped, accounting for the
    /// exponent: `1` → 0, `1.2500` → 2, `2.5e2` → 0, `1e-3` → 3, `0.125e1` → 2, `0.000` → 0.
    /// Use for "at most N decimals" rules.
    public var decimalPlaces: Int {
        guard let d = decomposed else { return 0 }
        return d.significand.isEmpty ? 0 : max(0, -d.exponent)
    }
}
