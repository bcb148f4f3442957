#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Formats log lines straight into UTF-8 bytes: the same bytes the logger has always
/// written (`{"ts":"…","level":"…","event":"…",…}\n`, a test compares them with the
/// earlier `String(format:)` formatting), without Foundation's formatting on the hot path.
enum LogLineFormat {
    /// The whole line for `level`, `event` and `fields` at the current time (`CLOCK_REALTIME`).
    static func line(_ level: LogLevel, _ event: StaticString, _ fields: [LogField]) -> [UInt8] {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return line(level, event, fields, time: now)
    }

    /// The whole line at `time` (seconds and nanoseconds since the Unix epoch, UTC).
    static func line(_ level: LogLevel, _ event: StaticString, _ fields: [LogField], time: timespec) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(192)
        append(ascii: "{\"ts\":\"", to: &out)
        appendTimestamp(time, to: &out)
        append(ascii: "\",\"level\":\"", to: &out)
        switch level {
        case .debug: append(ascii: "debug", to: &out)
        case .info: append(ascii: "info", to: &out)
        case .warning: append(ascii: "warning", to: &out)
        case .error: append(ascii: "error", to: &out)
        }
        append(ascii: "\",\"event\":\"", to: &out)
        append(event, to: &out)
        out.append(0x22)
        for field in fields {
            append(ascii: ",\"", to: &out)
            switch field {
            case .count(let key, _): out.append(contentsOf: key.utf8)
            case .component: append(ascii: "component", to: &out)
            case .number(let key, _), .identifier(let key, _), .code(let key, _): append(key, to: &out)
            case .requestID: append(ascii: "requestId", to: &out)
            case .method: append(ascii: "method", to: &out)
            case .route: append(ascii: "route", to: &out)
            case .status: append(ascii: "status", to: &out)
            case .durationMs: append(ascii: "durationMs", to: &out)
            case .errorType: append(ascii: "errorType", to: &out)
            }
            append(ascii: "\":", to: &out)
            switch field {
            case .method(let s):
                appendQuoted(isKnownMethod(s) ? s : "OTHER", to: &out)
            case .requestID(let s), .route(let s), .errorType(let s), .identifier(_, let s), .code(_, let s):
                appendQuoted(s, to: &out)
            case .component(let s):
                appendQuoted(s.description, to: &out)
            case .status(let n), .count(_, let n), .number(_, let n):
                appendDecimal(n, to: &out)
            case .durationMs(let d):
                appendFixed3(d, to: &out)
            }
        }
        out.append(0x7D)  // }
        out.append(0x0A)
        return out
    }

    @inline(__always)
    static func append(ascii: StaticString, to out: inout [UInt8]) {
        ascii.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    @inline(__always)
    static func append(_ text: StaticString, to out: inout [UInt8]) {
        if text.hasPointerRepresentation {
            text.withUTF8Buffer { out.append(contentsOf: $0) }
        } else {
            out.append(contentsOf: text.description.utf8)
        }
    }

    /// `Logger.knownMethods.contains(method)`, without hashing (methods are small strings).
    @inline(__always)
    static func isKnownMethod(_ method: String) -> Bool {
        switch method {
        case "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE": true
        default: false
        }
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\u00xx` (lower-case hex),
    /// everything else as its UTF-8 bytes.
    static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        // Request ids, routes, methods and type names need no escaping: copy them whole.
        if !s.utf8.contains(where: { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 }) {
            out.append(contentsOf: s.utf8)
            out.append(0x22)
            return
        }
        for byte in s.utf8 {
            switch byte {
            case 0x22:
                out.append(0x5C)
                out.append(0x22)
            case 0x5C:
                out.append(0x5C)
                out.append(0x5C)
            case 0..<0x20:
                append(ascii: "\\u00", to: &out)
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0xF))
            default:
                out.append(byte)
            }
        }
        out.append(0x22)
    }

    @inline(__always)
    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : 0x61 + nibble - 10
    }

    /// A signed decimal integer, as `String(n)` writes it.
    static func appendDecimal(_ n: Int, to out: inout [UInt8]) {
        if n < 0 { out.append(0x2D) }
        var magnitude = n.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = 0x30 + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for i in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[i]) }
        }
    }

    /// `d` with three decimals, exactly as C's `%.3f` (which `String(format:)` used): the exact
    /// binary value rounded to the nearest thousandth, a tie to even. Integer arithmetic for
    /// |d| < 2^53 (every duration); `vsnprintf` otherwise (huge, infinite or NaN).
    static func appendFixed3(_ d: Double, to out: inout [UInt8]) {
        guard d.isFinite, d.magnitude < 9_007_199_254_740_992 else {
            appendFixed3Slow(d, to: &out)
            return
        }
        if d.sign == .minus { out.append(0x2D) }
        // magnitude = significand × 2^exponent exactly, significand < 2^53.
        let magnitude = d.magnitude
        let significand: UInt64
        let exponent: Int
        if magnitude.exponentBitPattern == 0 {
            significand = magnitude.significandBitPattern
            exponent = -1074
        } else {
            significand = (1 << 52) | magnitude.significandBitPattern
            exponent = Int(magnitude.exponentBitPattern) - 1075
        }
        // Thousandths: significand × 1000 × 2^exponent, rounded half to even.
        let scaled = significand &* 1000  // < 2^63
        var thousandths: UInt64
        if exponent >= 0 {
            thousandths = scaled << UInt64(exponent)  // magnitude < 2^53, so this is < 2^63
        } else if exponent <= -64 {
            thousandths = 0  // below 2^-11: far under half a thousandth
        } else {
            let shift = UInt64(-exponent)
            thousandths = scaled >> shift
            let remainder = scaled & ((1 << shift) &- 1)
            let half: UInt64 = 1 << (shift - 1)
            if remainder > half || (remainder == half && thousandths & 1 == 1) { thousandths += 1 }
        }
        appendDecimal(Int(thousandths / 1000), to: &out)
        out.append(0x2E)
        appendPadded(Int(thousandths % 1000), width: 3, to: &out)
    }

    /// `%.3f` through C's `vsnprintf`.
    static func appendFixed3Slow(_ d: Double, to out: inout [UInt8]) {
        // The largest double has 309 integer digits.
        var buffer = [CChar](repeating: 0, count: 400)
        let written = buffer.withUnsafeMutableBufferPointer { raw -> Int32 in
            guard let base = raw.baseAddress else { return 0 }
            return withVaList([d]) { vsnprintf(base, raw.count, "%.3f", $0) }
        }
        let n = min(max(0, Int(written)), buffer.count - 1)
        out.append(contentsOf: buffer[0..<n].map { UInt8(bitPattern: $0) })
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds truncated).
    static func appendTimestamp(_ time: timespec, to out: inout [UInt8]) {
        var t = time.tv_sec
        var parts = tm()
        gmtime_r(&t, &parts)
        appendPadded(Int(parts.tm_year) + 1900, width: 4, to: &out)
        out.append(0x2D)
        appendPadded(Int(parts.tm_mon) + 1, width: 2, to: &out)
        out.append(0x2D)
        appendPadded(Int(parts.tm_mday), width: 2, to: &out)
        out.append(0x54)
        appendPadded(Int(parts.tm_hour), width: 2, to: &out)
        out.append(0x3A)
        appendPadded(Int(parts.tm_min), width: 2, to: &out)
        out.append(0x3A)
        appendPadded(Int(parts.tm_sec), width: 2, to: &out)
        out.append(0x2E)
        appendPadded(Int(time.tv_nsec / 1_000_000), width: 3, to: &out)
        out.append(0x5A)
    }

    /// A non-negative integer zero-padded to at least `width` digits (`%0Nd`).
    static func appendPadded(_ n: Int, width: Int, to out: inout [UInt8]) {
        guard n >= 0 else {
            appendDecimal(n, to: &out)
            return
        }
        var digits = 1
        var limit = 10
        while n >= limit && digits < 19 {
            digits += 1
            limit &*= 10
        }
        for _ in digits..<max(digits, width) { out.append(0x30) }
        appendDecimal(n, to: &out)
    }
}
