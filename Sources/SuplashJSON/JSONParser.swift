/// Why `JSONParser` rejected a document. The cases name a rule of RFC 8259 (or a limit of
/// this reader); none carries any of the input, so an error can be logged or echoed safely.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The rule that was broken.
    public enum Reason: String, Sendable, Hashable {
        /// The bytes are not well-formed UTF-8 (RFC 8259 §8.1, RFC 3629): overlong forms,
        /// encoded surrogates, code points above U+10FFFF, truncated sequences, stray bytes.
        case invalidUTF8
        /// A byte that cannot start or continue the value at this position (this includes a
        /// byte order mark, which RFC 8259 §8.1 forbids, and literals such as `NaN`).
        case unexpectedByte
        /// The input ended inside a value (or was empty / whitespace only).
        case unexpectedEnd
        /// An object has two members with the same name (after unescaping).
        case duplicateKey
        /// Arrays/objects are nested deeper than `maxDepth`.
        case tooDeep
        /// Non-whitespace follows the top-level value.
        case trailingData
        /// A number does not match the RFC 8259 §6 grammar (`01`, `+1`, `.5`, `1.`, `1e`, `-`).
        case invalidNumber
        /// An unknown escape (`\x`), a malformed `\uXXXX`, or a lone/mispaired UTF-16
        /// surrogate escape (RFC 8259 §7).
        case invalidEscape
        /// An unescaped control character (U+0000–U+001F) inside a string (RFC 8259 §7).
        case controlCharacter
    }

    /// Zero-based byte offset into the input where the problem was detected.
    public let offset: Int
    /// The rule that was broken.
    public let reason: Reason

    /// Creates an error at byte `offset`.
    public init(offset: Int, reason: Reason) {
        self.offset = offset
        self.reason = reason
    }

    /// `"invalid JSON at byte 12: duplicateKey"` — never contains input text.
    public var description: String { "invalid JSON at byte \(offset): \(reason.rawValue)" }
}

/// A strict RFC 8259 JSON reader producing a `JSONValue` tree.
///
/// Strictness, on purpose: UTF-8 only and validated (no byte order mark), duplicate object
/// member names rejected, nesting limited (iteratively parsed, so very deep input is an
/// error rather than a stack overflow), number text kept verbatim after a grammar check,
/// `\uXXXX` surrogate pairs combined and lone surrogates rejected, raw control characters in
/// strings rejected, and nothing but whitespace (space, tab, LF, CR) after the value.
public enum JSONParser {
    /// Parses one JSON text (RFC 8259 §2).
    ///
    /// - Parameters:
    ///   - bytes: the UTF-8 document. Contiguous collections (`[UInt8]`, `ArraySlice`,
    ///     `UnsafeBufferPointer`…) are read in place; others are copied once.
    ///   - maxDepth: the maximum nesting of arrays/objects; `[]` has depth 1, a scalar 0.
    ///     Reading never recurses, but releasing/comparing a `JSONValue` tree does, so keep
    ///     this modest (the default 64 suits every API body).
    /// - Returns: the value tree; object members keep their input order.
    /// - Throws: `JSONParseError` with the byte offset of the first problem.
    public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            parseResult(UnsafeRawBufferPointer(buffer), maxDepth: maxDepth)
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBytes { raw in parseResult(raw, maxDepth: maxDepth) }.get()
    }

    /// Parses a JSON text held in `string` (its UTF-8 form). See `parse(_:maxDepth:)`.
    public static func parse(_ string: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        var string = string
        return try string.withUTF8 { buffer in
            parseResult(UnsafeRawBufferPointer(buffer), maxDepth: maxDepth)
        }.get()
    }

    /// Parses a JSON text directly from raw memory, which must stay valid for the call.
    /// See `parse(_:maxDepth:)`.
    public static func parse(_ buffer: UnsafeRawBufferPointer, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        var reader = Reader(buffer, maxDepth: maxDepth)
        return try reader.parseDocument()
    }

    private static func parseResult(_ buffer: UnsafeRawBufferPointer, maxDepth: Int) -> Result<JSONValue, JSONParseError> {
        var reader = Reader(buffer, maxDepth: maxDepth)
        do throws(JSONParseError) {
            return .success(try reader.parseDocument())
        } catch {
            return .failure(error)
        }
    }
}

// MARK: - The reader

private enum ASCII {
    static let quote: UInt8 = 0x22, backslash: UInt8 = 0x5C, slash: UInt8 = 0x2F
    static let comma: UInt8 = 0x2C, colon: UInt8 = 0x3A, minus: UInt8 = 0x2D, plus: UInt8 = 0x2B
    static let dot: UInt8 = 0x2E, zero: UInt8 = 0x30, nine: UInt8 = 0x39
    static let openBracket: UInt8 = 0x5B, closeBracket: UInt8 = 0x5D
    static let openBrace: UInt8 = 0x7B, closeBrace: UInt8 = 0x7D
    static let space: UInt8 = 0x20, tab: UInt8 = 0x09, lf: UInt8 = 0x0A, cr: UInt8 = 0x0D
    static let lowerE: UInt8 = 0x65, upperE: UInt8 = 0x45
}

/// One open array or object. Its elements live on the reader's shared `values` stack from
/// `valuesStart`, its member names on `keys` from `keysStart`.
private struct Frame {
    var isObject: Bool
    var valuesStart: Int
    var keysStart: Int
    /// Built once an object has many members, so duplicate detection stays O(1) per member.
    var seen: Set<CodePointKey>?
}

private struct Reader {
    let buf: UnsafeRawBufferPointer
    let count: Int
    let maxDepth: Int
    var i = 0
    var frames: [Frame] = []
    var values: [JSONValue] = []
    var keys: [String] = []
    /// Reused buffer for strings that contain escapes.
    var scratch: [UInt8] = []

    /// Objects with more members than this switch from a linear scan to a hash set.
    static let linearKeyScanLimit = 12

    init(_ buf: UnsafeRawBufferPointer, maxDepth: Int) {
        self.buf = buf
        self.count = buf.count
        self.maxDepth = maxDepth
    }

    @inline(__always) func fail(_ reason: JSONParseError.Reason, at offset: Int) -> JSONParseError {
        JSONParseError(offset: offset, reason: reason)
    }

    @inline(__always) mutating func skipWhitespace() {
        while i < count {
            let b = buf[i]
            if b == ASCII.space || b == ASCII.lf || b == ASCII.cr || b == ASCII.tab { i += 1 } else { return }
        }
    }

    /// The error for an unexpected byte at `offset`: non-ASCII bytes that are not UTF-8 at
    /// all are reported as `invalidUTF8`.
    func unexpected(at offset: Int) -> JSONParseError {
        guard offset < count else { return fail(.unexpectedEnd, at: offset) }
        if buf[offset] >= 0x80, utf8SequenceLength(at: offset) == nil { return fail(.invalidUTF8, at: offset) }
        return fail(.unexpectedByte, at: offset)
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        if i < count {
            if buf[i] >= 0x80, utf8SequenceLength(at: i) == nil { throw fail(.invalidUTF8, at: i) }
            throw fail(.trailingData, at: i)
        }
        return value
    }

    /// Iterative value parser: containers are pushed on `frames`, so depth costs heap, not stack.
    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        outer: while true {
            // Read the start of a value: either a complete scalar / empty container, or an
            // opened container (then loop to read its first element).
            skipWhitespace()
            guard i < count else { throw fail(.unexpectedEnd, at: i) }
            var value: JSONValue
            switch buf[i] {
            case ASCII.openBracket:
                guard frames.count < maxDepth else { throw fail(.tooDeep, at: i) }
                i += 1
                skipWhitespace()
                if i < count, buf[i] == ASCII.closeBracket {
                    i += 1
                    value = .array([])
                } else {
                    frames.append(Frame(isObject: false, valuesStart: values.count, keysStart: keys.count, seen: nil))
                    continue outer
                }
            case ASCII.openBrace:
                guard frames.count < maxDepth else { throw fail(.tooDeep, at: i) }
                i += 1
                skipWhitespace()
                if i < count, buf[i] == ASCII.closeBrace {
                    i += 1
                    value = .object([])
                } else {
                    frames.append(Frame(isObject: true, valuesStart: values.count, keysStart: keys.count, seen: nil))
                    try readMemberName()
                    continue outer
                }
            case ASCII.quote:
                value = .string(try readString())
            case ASCII.minus, ASCII.zero...ASCII.nine:
                value = .number(try readNumber())
            case ASCII.plus, ASCII.dot:
                throw fail(.invalidNumber, at: i)
            case 0x74:  // t
                try expectLiteral("true")
                value = .bool(true)
            case 0x66:  // f
                try expectLiteral("false")
                value = .bool(false)
            case 0x6E:  // n
                try expectLiteral("null")
                value = .null
            default:
                throw unexpected(at: i)
            }

            // A value is complete: attach it to the enclosing containers, closing as many
            // as the input closes.
            while true {
                guard !frames.isEmpty else { return value }
                values.append(value)
                skipWhitespace()
                guard i < count else { throw fail(.unexpectedEnd, at: i) }
                let b = buf[i]
                let isObject = frames[frames.count - 1].isObject
                if b == ASCII.comma {
                    i += 1
                    if isObject {
                        skipWhitespace()
                        try readMemberName()
                    }
                    continue outer
                }
                if isObject ? b == ASCII.closeBrace : b == ASCII.closeBracket {
                    i += 1
                    let frame = frames.removeLast()
                    if isObject {
                        var members: [(String, JSONValue)] = []
                        members.reserveCapacity(values.count - frame.valuesStart)
                        for (k, v) in zip(keys[frame.keysStart...], values[frame.valuesStart...]) {
                            members.append((k, v))
                        }
                        keys.removeSubrange(frame.keysStart...)
                        values.removeSubrange(frame.valuesStart...)
                        value = .object(members)
                    } else {
                        value = .array(Array(values[frame.valuesStart...]))
                        values.removeSubrange(frame.valuesStart...)
                    }
                    continue
                }
                throw unexpected(at: i)
            }
        }
    }

    /// Reads `"name"` `:` for the innermost object (at `i`, whitespace already skipped),
    /// rejecting a name the object already has.
    mutating func readMemberName() throws(JSONParseError) {
        guard i < count else { throw fail(.unexpectedEnd, at: i) }
        guard buf[i] == ASCII.quote else { throw unexpected(at: i) }
        let nameOffset = i
        let name = try readString()
        let top = frames.count - 1
        let start = frames[top].keysStart
        let memberCount = keys.count - start
        if frames[top].seen != nil {
            if frames[top].seen!.insert(CodePointKey(name)).inserted == false { throw fail(.duplicateKey, at: nameOffset) }
        } else {
            // Names are duplicates only with the same code points (spec §1): `"weight\u212Ag"`
            // (KELVIN SIGN) is not a duplicate of `"weightKg"`.
            for k in start..<keys.count where keys[k].hasSameCodePoints(as: name) { throw fail(.duplicateKey, at: nameOffset) }
            if memberCount + 1 > Reader.linearKeyScanLimit {
                var set = Set<CodePointKey>(minimumCapacity: memberCount * 2 + 2)
                for k in start..<keys.count { set.insert(CodePointKey(keys[k])) }
                set.insert(CodePointKey(name))
                frames[top].seen = set
            }
        }
        keys.append(name)
        skipWhitespace()
        guard i < count else { throw fail(.unexpectedEnd, at: i) }
        guard buf[i] == ASCII.colon else { throw unexpected(at: i) }
        i += 1
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let n = literal.utf8CodeUnitCount
        let p = literal.utf8Start
        for k in 0..<n {
            guard i + k < count else { throw fail(.unexpectedEnd, at: i + k) }
            guard buf[i + k] == p[k] else { throw unexpected(at: i + k) }
        }
        i += n
    }

    // MARK: Numbers (RFC 8259 §6)

    mutating func readNumber() throws(JSONParseError) -> JSONNumber {
        let start = i
        if buf[i] == ASCII.minus {
            i += 1
            guard i < count else { throw fail(.invalidNumber, at: i) }
        }
        // int = zero / ( digit1-9 *DIGIT )
        guard isDigit(at: i) else { throw fail(.invalidNumber, at: i) }
        if buf[i] == ASCII.zero {
            i += 1
            if isDigit(at: i) { throw fail(.invalidNumber, at: i) }
        } else {
            while isDigit(at: i) { i += 1 }
        }
        // frac = decimal-point 1*DIGIT
        if i < count, buf[i] == ASCII.dot {
            i += 1
            guard isDigit(at: i) else { throw fail(.invalidNumber, at: i) }
            while isDigit(at: i) { i += 1 }
        }
        // exp = e [ minus / plus ] 1*DIGIT
        if i < count, buf[i] == ASCII.lowerE || buf[i] == ASCII.upperE {
            i += 1
            if i < count, buf[i] == ASCII.minus || buf[i] == ASCII.plus { i += 1 }
            guard isDigit(at: i) else { throw fail(.invalidNumber, at: i) }
            while isDigit(at: i) { i += 1 }
        }
        // A number glued to letters (`1x`, `2true`) is a malformed number, not trailing data.
        if i < count {
            let b = buf[i]
            if (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == ASCII.dot || b == ASCII.plus || b == ASCII.minus {
                throw fail(.invalidNumber, at: i)
            }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: buf[start..<i]), as: UTF8.self)
        return JSONNumber(validatedText: text)
    }

    @inline(__always) func isDigit(at offset: Int) -> Bool {
        offset < count && buf[offset] >= ASCII.zero && buf[offset] <= ASCII.nine
    }

    // MARK: Strings (RFC 8259 §7)

    /// Reads a string starting at the opening quote at `i`; leaves `i` after the closing quote.
    mutating func readString() throws(JSONParseError) -> String {
        i += 1
        let start = i
        // Fast path: no escapes. Validate UTF-8 as we go and decode the slice once.
        while i < count {
            let b = buf[i]
            if b == ASCII.quote {
                let s = String(decoding: UnsafeRawBufferPointer(rebasing: buf[start..<i]), as: UTF8.self)
                i += 1
                return s
            }
            if b == ASCII.backslash { break }
            if b < 0x20 { throw fail(.controlCharacter, at: i) }
            if b < 0x80 {
                i += 1
            } else {
                guard let n = utf8SequenceLength(at: i) else { throw fail(.invalidUTF8, at: i) }
                i += n
            }
        }
        guard i < count else { throw fail(.unexpectedEnd, at: i) }
        // Slow path: escapes present; build into the reusable scratch buffer.
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[start..<i]))
        while i < count {
            let b = buf[i]
            if b == ASCII.quote {
                i += 1
                return String(decoding: scratch, as: UTF8.self)
            }
            if b == ASCII.backslash {
                try readEscape()
            } else if b < 0x20 {
                throw fail(.controlCharacter, at: i)
            } else if b < 0x80 {
                scratch.append(b)
                i += 1
            } else {
                guard let n = utf8SequenceLength(at: i) else { throw fail(.invalidUTF8, at: i) }
                scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[i..<(i + n)]))
                i += n
            }
        }
        throw fail(.unexpectedEnd, at: i)
    }

    /// Decodes the escape at `i` (a backslash) into `scratch`.
    mutating func readEscape() throws(JSONParseError) {
        let escapeStart = i
        i += 1
        guard i < count else { throw fail(.unexpectedEnd, at: i) }
        let c = buf[i]
        i += 1
        switch c {
        case ASCII.quote: scratch.append(ASCII.quote)
        case ASCII.backslash: scratch.append(ASCII.backslash)
        case ASCII.slash: scratch.append(ASCII.slash)
        case 0x62: scratch.append(0x08)  // b
        case 0x66: scratch.append(0x0C)  // f
        case 0x6E: scratch.append(0x0A)  // n
        case 0x72: scratch.append(0x0D)  // r
        case 0x74: scratch.append(0x09)  // t
        case 0x75:  // u
            let unit = try readHex4()
            var scalar: UInt32
            if unit >= 0xD800 && unit <= 0xDBFF {
                // A high surrogate must be followed by an escaped low surrogate.
                guard i + 1 < count, buf[i] == ASCII.backslash, buf[i + 1] == 0x75 else {
                    throw fail(.invalidEscape, at: escapeStart)
                }
                i += 2
                let low = try readHex4()
                guard low >= 0xDC00 && low <= 0xDFFF else { throw fail(.invalidEscape, at: escapeStart) }
                scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            } else if unit >= 0xDC00 && unit <= 0xDFFF {
                throw fail(.invalidEscape, at: escapeStart)
            } else {
                scalar = UInt32(unit)
            }
            appendUTF8(scalar)
        default:
            throw fail(.invalidEscape, at: escapeStart)
        }
    }

    mutating func readHex4() throws(JSONParseError) -> UInt16 {
        var v: UInt16 = 0
        for _ in 0..<4 {
            guard i < count else { throw fail(.unexpectedEnd, at: i) }
            let b = buf[i]
            let d: UInt8
            switch b {
            case 0x30...0x39: d = b - 0x30
            case 0x41...0x46: d = b - 0x41 + 10
            case 0x61...0x66: d = b - 0x61 + 10
            default: throw fail(.invalidEscape, at: i)
            }
            v = v << 4 | UInt16(d)
            i += 1
        }
        return v
    }

    mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | (scalar >> 6)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | (scalar >> 12)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            scratch.append(UInt8(0xF0 | (scalar >> 18)))
            scratch.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }

    /// The length (2–4) of the well-formed UTF-8 sequence for a non-ASCII lead byte at
    /// `offset`, or nil when ill-formed (RFC 3629 §4 / Unicode Table 3-7: no overlongs, no
    /// surrogates, nothing above U+10FFFF, no truncation).
    func utf8SequenceLength(at offset: Int) -> Int? {
        let b0 = buf[offset]
        @inline(__always) func cont(_ k: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) -> Bool {
            offset + k < count && buf[offset + k] >= lo && buf[offset + k] <= hi
        }
        switch b0 {
        case 0xC2...0xDF:
            return cont(1) ? 2 : nil
        case 0xE0:
            return cont(1, 0xA0, 0xBF) && cont(2) ? 3 : nil
        case 0xE1...0xEC, 0xEE...0xEF:
            return cont(1) && cont(2) ? 3 : nil
        case 0xED:
            return cont(1, 0x80, 0x9F) && cont(2) ? 3 : nil
        case 0xF0:
            return cont(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : nil
        case 0xF1...0xF3:
            return cont(1) && cont(2) && cont(3) ? 4 : nil
        case 0xF4:
            return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : nil
        default:
            return nil
        }
    }
}
