#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Formats log lines straight into UTF-8 bytes: the same bytes the logger has always
/// written (`{"ts":"…","level":"…","event":"…",…}\n`, a test compares them with the
/// earlier `String(format:)` formatting), without Foundation's formatting on the hot path.
/// The line is written into one allocation sized for the worst case (every string byte
/// escaped as `\u00xx`), through a pointer.
enum LogLineFormat {
    /// The whole line for `level`, `event` and `fields` at the current time (`CLOCK_REALTIME`).
    static func line(_ level: LogLevel, _ event: StaticString, _ fields: [LogField]) -> [UInt8] {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return line(level, event, fields, time: now)
    }

    /// The whole line at `time` (seconds and nanoseconds since the Unix epoch, UTC).
    static func line(_ level: LogLevel, _ event: StaticString, _ fields: [LogField], time: timespec) -> [UInt8] {
        // Written into scratch space of the worst case's size (on the stack), then copied into an
        // array of its own length: an access line comes to about 200 bytes, which malloc serves
        // from its per-thread cache, where a worst-case array (over 1 KiB) took glibc's
        // large-request path on every line.
        let bound = bound(event, fields)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { buffer -> [UInt8] in
            guard let base = buffer.baseAddress else { return [] }
            var w = LineWriter(base)
            w.ascii("{\"ts\":\"")
            w.timestamp(time)
            w.ascii("\",\"level\":\"")
            switch level {
            case .debug: w.ascii("debug")
            case .info: w.ascii("info")
            case .warning: w.ascii("warning")
            case .error: w.ascii("error")
            }
            w.ascii("\",\"event\":\"")
            w.ascii(event)
            w.byte(0x22)
            for field in fields {
                w.ascii(",\"")
                switch field {
                case .component: w.ascii("component")
                case .count(let key, _), .number(let key, _), .identifier(let key, _), .code(let key, _): w.ascii(key)
                case .requestID: w.ascii("requestId")
                case .method: w.ascii("method")
                case .route: w.ascii("route")
                case .status: w.ascii("status")
                case .durationMs: w.ascii("durationMs")
                case .errorType: w.ascii("errorType")
                }
                w.ascii("\":")
                switch field {
                case .method(let s):
                    w.quoted(isKnownMethod(s) ? s : "OTHER")
                case .requestID(let s), .route(let s), .errorType(let s), .identifier(_, let s), .code(_, let s):
                    w.quoted(s)
                case .component(let s):
                    w.quoted(s.description)
                case .status(let n), .count(_, let n), .number(_, let n):
                    w.decimal(n)
                case .durationMs(let d):
                    w.fixed3(d)
                }
            }
            w.byte(0x7D)  // }
            w.byte(0x0A)
            precondition(w.count <= bound, "a log line outgrew its bound")
            return Array(UnsafeBufferPointer(rebasing: buffer[..<w.count]))
        }
    }

    /// The most bytes `line` can write for `event` and `fields`: fixed text 64, timestamp 48,
    /// the event, and per field its key and value (a string byte may become `\u00xx`; `%.3f`
    /// needs at most 24 bytes below 2^53 and 400 beyond).
    static func bound(_ event: StaticString, _ fields: [LogField]) -> Int {
        var bound = 112 + byteCount(event)
        for field in fields {
            bound += 8
            switch field {
            case .count(let key, _), .number(let key, _): bound += byteCount(key) + 24
            case .identifier(let key, let s), .code(let key, let s): bound += byteCount(key) + 2 + 6 * s.utf8.count
            case .component(let s): bound += 9 + 2 + 6 * byteCount(s)
            case .requestID(let s), .route(let s), .errorType(let s): bound += 10 + 2 + 6 * s.utf8.count
            case .method: bound += 6 + 2 + 7  // a known method or OTHER
            case .status: bound += 6 + 24
            case .durationMs(let d):
                // %.3f: a sign, 16 digits, the point and 3 decimals below 2^53; 309 digits at most.
                bound += 10 + (d.isFinite && d.magnitude < 9_007_199_254_740_992 ? 24 : 400)
            }
        }
        return bound
    }

    /// UTF-8 length of a static text (a single-scalar literal has no pointer form).
    @inline(__always)
    static func byteCount(_ text: StaticString) -> Int {
        text.hasPointerRepresentation ? text.utf8CodeUnitCount : text.description.utf8.count
    }

    /// `Logger.knownMethods.contains(method)`, without hashing (methods are small strings).
    @inline(__always)
    static func isKnownMethod(_ method: String) -> Bool {
        switch method {
        case "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE": true
        default: false
        }
    }
}

/// Writes bytes through a pointer into a buffer the caller sized for the worst case.
struct LineWriter {
    let base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0

    init(_ base: UnsafeMutablePointer<UInt8>) {
        self.base = base
    }

    @inline(__always)
    mutating func byte(_ b: UInt8) {
        base[count] = b
        count += 1
    }

    @inline(__always)
    mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) {
        guard let from = source.baseAddress, source.count > 0 else { return }
        (base + count).update(from: from, count: source.count)
        count += source.count
    }

    /// A code-defined text, written as is (never escaped, as before).
    @inline(__always)
    mutating func ascii(_ text: StaticString) {
        if text.hasPointerRepresentation {
            bytes(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        } else {
            var scalar = text.description
            scalar.withUTF8 { bytes($0) }
        }
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\u00xx` (lower-case hex),
    /// everything else as its UTF-8 bytes.
    mutating func quoted(_ s: String) {
        byte(0x22)
        var s = s
        s.withUTF8 { utf8 in
            var start = 0
            for i in 0..<utf8.count {
                let b = utf8[i]
                guard b == 0x22 || b == 0x5C || b < 0x20 else { continue }
                bytes(UnsafeBufferPointer(rebasing: utf8[start..<i]))
                start = i + 1
                switch b {
                case 0x22:
                    byte(0x5C)
                    byte(0x22)
                case 0x5C:
                    byte(0x5C)
                    byte(0x5C)
                default:
                    ascii("\\u00")
                    byte(LineWriter.hexDigit(b >> 4))
                    byte(LineWriter.hexDigit(b & 0xF))
                }
            }
            bytes(UnsafeBufferPointer(rebasing: utf8[start..<utf8.count]))
        }
        byte(0x22)
    }

    @inline(__always)
    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : 0x61 + nibble - 10
    }

    /// A signed decimal integer, as `String(n)` writes it.
    mutating func decimal(_ n: Int) {
        if n < 0 { byte(0x2D) }
        unsignedDecimal(n.magnitude, minimumDigits: 1)
    }

    /// `n` in decimal, zero-padded to at least `minimumDigits` digits (`%0Nu`).
    mutating func unsignedDecimal(_ n: UInt, minimumDigits: Int) {
        var digits = 1
        var rest = n / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        let width = max(digits, minimumDigits)
        var value = n
        var at = count + width - 1
        for _ in 0..<width {
            base[at] = 0x30 + UInt8(value % 10)
            value /= 10
            at -= 1
        }
        count += width
    }

    /// A non-negative integer zero-padded to at least `width` digits (`%0Nd`).
    @inline(__always)
    mutating func padded(_ n: Int, width: Int) {
        if n < 0 {
            decimal(n)
        } else {
            unsignedDecimal(UInt(n), minimumDigits: width)
        }
    }

    /// `d` with three decimals, exactly as C's `%.3f` (which `String(format:)` used): the exact
    /// binary value rounded to the nearest thousandth, a tie to even. Integer arithmetic for
    /// |d| < 2^53 (every duration); `vsnprintf` otherwise (huge, infinite or NaN).
    mutating func fixed3(_ d: Double) {
        guard d.isFinite, d.magnitude < 9_007_199_254_740_992 else {
            fixed3Slow(d)
            return
        }
        if d.sign == .minus { byte(0x2D) }
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
        unsignedDecimal(UInt(thousandths / 1000), minimumDigits: 1)
        byte(0x2E)
        unsignedDecimal(UInt(thousandths % 1000), minimumDigits: 3)
    }

    /// `%.3f` through C's `vsnprintf` (at most 400 bytes: the largest double has 309 digits).
    mutating func fixed3Slow(_ d: Double) {
        var buffer = [CChar](repeating: 0, count: 400)
        let written = buffer.withUnsafeMutableBufferPointer { raw -> Int32 in
            guard let start = raw.baseAddress else { return 0 }
            return withVaList([d]) { vsnprintf(start, raw.count, "%.3f", $0) }
        }
        let n = min(max(0, Int(written)), buffer.count - 1)
        for i in 0..<n { byte(UInt8(bitPattern: buffer[i])) }
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds truncated), as `gmtime_r` gives the parts
    /// (POSIX time: no leap seconds). Computed here: glibc's `gmtime_r` takes the process-wide
    /// time-zone lock on every call, and every thread that logs would queue on it.
    mutating func timestamp(_ time: timespec) {
        let seconds = Int(time.tv_sec)
        let remainder = seconds % 86_400  // negative before 1970: floor, without overflow at Int.min
        let days = seconds / 86_400 - (remainder < 0 ? 1 : 0)
        let secondOfDay = remainder < 0 ? remainder + 86_400 : remainder
        let date = LineWriter.civilDate(daysSince1970: days)
        padded(date.year, width: 4)
        byte(0x2D)
        padded(date.month, width: 2)
        byte(0x2D)
        padded(date.day, width: 2)
        byte(0x54)
        padded(secondOfDay / 3600, width: 2)
        byte(0x3A)
        padded(secondOfDay / 60 % 60, width: 2)
        byte(0x3A)
        padded(secondOfDay % 60, width: 2)
        byte(0x2E)
        padded(Int(time.tv_nsec / 1_000_000), width: 3)
        byte(0x5A)
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (negative before it): Howard Hinnant's
    /// `civil_from_days` ("chrono-Compatible Low-Level Date Algorithms"), which counts 400-year
    /// eras of 146,097 days from 0000-03-01, so that a leap day ends each year.
    static func civilDate(daysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468  // days since 0000-03-01
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097  // 0...146_096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // 0...399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365, from March 1
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0 = March … 11 = February
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
