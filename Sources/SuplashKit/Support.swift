import Foundation

/// RFC 3339 timestamps as the server writes them (`2026-11-29T08:15:00.000Z`) and reads
/// them (`Z` or an offset, 0–9 fractional digits). Integer arithmetic only: no formatter
/// objects, so it is cheap, thread-safe and identical on every platform.
enum Timestamp {
    /// Milliseconds since 1970 → `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    static func format(millis: Int64) -> String {
        let days = floorDiv(millis, 86_400_000)
        let msOfDay = millis - days * 86_400_000
        let (y, m, d) = civil(fromDays: days)
        let h = msOfDay / 3_600_000
        let mi = msOfDay / 60_000 % 60
        let s = msOfDay / 1000 % 60
        let ms = msOfDay % 1000
        return pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2) + "T" + pad(h, 2) + ":" + pad(mi, 2) + ":" + pad(s, 2)
            + "." + pad(ms, 3) + "Z"
    }

    static func format(_ date: Date) -> String { format(millis: millis(date)) }

    static func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }

    static func date(millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }

    /// Parses an RFC 3339 timestamp to milliseconds since 1970 (digits past ms truncated).
    static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func num(_ from: Int, _ count: Int) -> Int64? {
            var n: Int64 = 0
            for i in from..<(from + count) {
                guard i < b.count, (0x30...0x39).contains(b[i]) else { return nil }
                n = n * 10 + Int64(b[i] - 0x30)
            }
            return n
        }
        guard let y = num(0, 4), b[4] == 0x2D, let mo = num(5, 2), b[7] == 0x2D, let d = num(8, 2),
            b[10] == 0x54 || b[10] == 0x74 || b[10] == 0x20, let h = num(11, 2), b[13] == 0x3A,
            let mi = num(14, 2), b[16] == 0x3A, let s = num(17, 2),
            (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61
        else { return nil }
        var i = 19
        var ms: Int64 = 0
        if i < b.count, b[i] == 0x2E {
            i += 1
            var digits = 0
            while i < b.count, (0x30...0x39).contains(b[i]) {
                if digits < 3 { ms = ms * 10 + Int64(b[i] - 0x30) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { ms *= 10 }
        }
        guard i < b.count else { return nil }
        var offset: Int64 = 0
        if b[i] == 0x5A || b[i] == 0x7A {
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D {
            let sign: Int64 = b[i] == 0x2D ? -1 : 1
            guard let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == 0x3A, let om = num(i + 4, 2) else { return nil }
            offset = sign * (oh * 60 + om) * 60_000
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(y, mo, d)
        return days * 86_400_000 + h * 3_600_000 + mi * 60_000 + s * 1000 + ms - offset
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    private static func pad(_ n: Int64, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}

/// A tiny JSON writer with a fixed member order, so a retried request body is byte-for-byte
/// the first one (the server's Idempotency-Key fingerprint covers the body).
indirect enum JSONText: Sendable {
    case string(String)
    case int(Int64)
    case bool(Bool)
    case null
    case object([(String, JSONText)])
    case array([JSONText])
    /// Already-serialised JSON, embedded as is.
    case raw(String)

    var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    func write(into out: inout String) {
        switch self {
        case .string(let s): JSONText.quote(s, into: &out)
        case .int(let n): out += String(n)
        case .bool(let b): out += b ? "true" : "false"
        case .null: out += "null"
        case .raw(let r): out += r
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                JSONText.quote(key, into: &out)
                out += ":"
                value.write(into: &out)
            }
            out += "}"
        }
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

/// Reading JSON answers: Foundation's parser, with typed accessors.
enum JSONRead {
    static func object(_ data: Data) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: data, options: [])) as? [String: Any]
    }

    static func object(_ text: String) -> [String: Any]? { object(Data(text.utf8)) }

    /// Serialises a parsed value back (sorted keys: stable text for the local store).
    static func text(_ value: Any) -> String? {
        guard JSONSerialization.isValidJSONObject(value),
            let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    static func int(_ value: Any?) -> Int? {
        if let n = value as? Int { return n }
        if let n = value as? NSNumber { return n.intValue }
        return nil
    }

    static func string(_ value: Any?) -> String? { value as? String }

    static func bool(_ value: Any?) -> Bool? {
        if let b = value as? Bool { return b }
        if let n = value as? NSNumber { return n.boolValue }
        return nil
    }
}

/// A lower-case canonical UUID string.
func newUUID() -> String { UUID().uuidString.lowercased() }
