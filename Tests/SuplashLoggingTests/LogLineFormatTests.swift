import Foundation
import XCTest

@testable import SuplashLogging

/// Log lines stay byte-for-byte what the logger wrote before it had a logging thread: the
/// reference below is that earlier formatting (`String(format:)`), kept here verbatim.
final class LogLineFormatTests: XCTestCase {
    /// 2026-11-29T08:15:00.123Z.
    private let fixedTime = timespec(tv_sec: 1_795_939_200 + 15 * 60, tv_nsec: 123_456_789)

    func testTheAccessLineOfAFixedRequestIsByteForByteTheEarlierFormat() {
        let fields: [LogField] = [
            .requestID("req-1.A_b"), .method("GET"), .route("/v1/water_logs/{uid}/entries/{id}"), .status(200),
            .durationMs(0.8125),
        ]
        let expected =
            #"{"ts":"2026-11-29T08:15:00.123Z","level":"info","event":"request","requestId":"req-1.A_b","method":"GET","#
            + #""route":"/v1/water_logs/{uid}/entries/{id}","status":200,"durationMs":0.812}"# + "\n"
        XCTAssertEqual(String(decoding: LogLineFormat.line(.info, "request", fields, time: fixedTime), as: UTF8.self), expected)
        XCTAssertEqual(
            LogLineFormat.line(.info, "request", fields, time: fixedTime), Array(Reference.line(.info, "request", fields, time: fixedTime).utf8))
    }

    func testEveryFieldKindMatchesTheEarlierFormat() {
        let cases: [(LogLevel, StaticString, [LogField])] = [
            (.debug, "debug_event", []),
            (.info, "x", [.component("y"), .number("n", 7)]),
            (.warning, "odd_text", [.errorType("Mod.\"Quoted\"\\Back\u{01}\u{1F}\t\nçé🙂"), .route("")]),
            (.error, "numbers", [.status(-1), .count("jobs", Int.max), .count("neg", Int.min), .number("port", 0)]),
            (.info, "static", [.component("listener"), .identifier("pushId", "0194-abc"), .code("reason", "BadDeviceToken")]),
            (.info, "methods", [.method("PATCH"), .method("LEAKY"), .method("get"), .method("")]),
            // Every byte escaped (the line's allocation is sized by counting escapes).
            (
                .error, "escapes",
                [
                    .requestID(String(repeating: "\u{01}", count: 64)), .route(String(repeating: "\"\\", count: 40)),
                    .identifier("id", String(repeating: "\u{1F}\"", count: 30)), .code("code", "\n\t\r\u{0}"),
                    .errorType(String(repeating: "\\\u{7}", count: 50)), .method(String(repeating: "\u{2}", count: 20)),
                    .durationMs(-.greatestFiniteMagnitude), .durationMs(-9_007_199_254_740_991),
                ]
            ),
        ]
        for (level, event, fields) in cases {
            XCTAssertEqual(
                String(decoding: LogLineFormat.line(level, event, fields, time: fixedTime), as: UTF8.self),
                Reference.line(level, event, fields, time: fixedTime))
        }
    }

    func testDurationsAndTimestampsMatchTheEarlierFormat() {
        var generator = SystemRandomNumberGenerator()
        var durations: [Double] = [0, 0.0004, 0.0005, 0.0015, 0.0025, 1.0005, 2.5, 999.9995, 1e6 + 0.0005, 123_456_789.987654]
        for _ in 0..<2000 { durations.append(Double.random(in: 0..<5000, using: &generator)) }
        for _ in 0..<200 { durations.append(Double(Int.random(in: 0..<100_000, using: &generator)) / 2000) }
        // Exact ties (odd sixteenths: x.xxx5 in binary, exactly) round to even, as printf does.
        for j in 0..<200 { durations.append(Double(2 * j + 1) / 16) }
        // Tiny, negative, subnormal, huge and non-finite values.
        durations += [
            -0.0, -1.0005, -0.0625, Double.leastNonzeroMagnitude, 1e-300, 0.00049999999999999999, 9_007_199_254_740_991, 9_007_199_254_740_992,
            1e20, 1.7976931348623157e308, .infinity, -.infinity,
        ]
        for exponent in -70...60 { durations.append(Double(sign: .plus, exponent: exponent, significand: 1.2345)) }
        for d in durations {
            XCTAssertEqual(
                String(decoding: LogLineFormat.line(.info, "d", [.durationMs(d)], time: fixedTime), as: UTF8.self),
                Reference.line(.info, "d", [.durationMs(d)], time: fixedTime), "\(d)")
        }
        var seconds: [Int] = [0, 59, 86_399, 951_782_400, 1_796_026_500, 4_102_444_799, 253_402_300_799, -1, -86_400, -86_401]
        // The first and last second of February 28, February 29 (where there is one) and March 1
        // of century and leap years (days since 1970 of each March 1).
        for march1 in [-135_080, -98_556, 11_017, 157_114, -25_508, 47_541] {
            for day in march1 - 2...march1 { seconds += [day * 86_400, day * 86_400 + 86_399] }
        }
        // Years 1 to 9999, a prime step apart.
        for s in stride(from: -62_135_596_800, through: 253_402_300_799, by: 1_234_567_891) { seconds.append(s) }
        for _ in 0..<2000 { seconds.append(Int.random(in: -62_135_596_800...253_402_300_799, using: &generator)) }
        for (i, s) in seconds.enumerated() {
            for ns in i < 10 ? [0, 999_999, 1_000_000, 500_000_000, 999_999_999] : [123_456_789] {
                let t = timespec(tv_sec: s, tv_nsec: ns)
                XCTAssertEqual(
                    String(decoding: LogLineFormat.line(.info, "t", [], time: t), as: UTF8.self),
                    Reference.line(.info, "t", [], time: t), "\(s).\(ns)")
            }
        }
    }

    /// Every day from 1900 to 2101 gets the date `gmtime_r` gives (the line's timestamp computes
    /// it without the C library's time-zone lock).
    func testCivilDatesOfEveryDayMatchGmtime() {
        for day in -25_567...48_211 {
            var t = time_t(day * 86_400)
            var parts = tm()
            gmtime_r(&t, &parts)
            let date = LineWriter.civilDate(daysSince1970: day)
            guard date.year == Int(parts.tm_year) + 1900, date.month == Int(parts.tm_mon) + 1, date.day == Int(parts.tm_mday)
            else {
                return XCTFail("day \(day): \(date) against \(parts.tm_year + 1900)-\(parts.tm_mon + 1)-\(parts.tm_mday)")
            }
        }
        XCTAssertEqual(LineWriter.civilDate(daysSince1970: 11_016).day, 29, "2000-02-29")
        XCTAssertEqual(LineWriter.civilDate(daysSince1970: 47_540).month, 2, "2100-02-28 is followed by March 1")
        XCTAssertEqual(LineWriter.civilDate(daysSince1970: 47_541).month, 3)
        // The earliest second: no overflow in the floor division.
        let earliest = LogLineFormat.line(.info, "t", [], time: timespec(tv_sec: Int.min, tv_nsec: 0))
        XCTAssertTrue(String(decoding: earliest, as: UTF8.self).hasPrefix(#"{"ts":"-"#))
    }

    /// Each field alone, with every byte of its text escaped (`\u00xx`, six bytes each) or its
    /// number at its widest, fits the line's bound (the line is formatted in scratch space of
    /// that size).
    func testEveryFieldAtItsWidestFitsTheBound() {
        let worst = String(repeating: "\u{01}", count: 64)
        let fields: [LogField] = [
            .requestID(worst), .route(worst), .errorType(worst), .identifier("id", worst), .code("code", worst),
            .method("OPTIONS"), .method(worst), .status(Int.min), .count("jobs", Int.min), .number("port", Int.min),
            .durationMs(-9_007_199_254_740_991), .durationMs(-.greatestFiniteMagnitude), .durationMs(.nan),
            .component("listener"),
        ]
        let time = timespec(tv_sec: Int.min, tv_nsec: 999_999_999)
        for field in fields {
            let line = LogLineFormat.line(.warning, "event", [field], time: time)
            let bound = LogLineFormat.bound("event", [field])
            XCTAssertLessThanOrEqual(line.count, bound, "\(field)")
        }
    }

    /// The formatting the logger used before (Logger.log, Logger.quoted, Logger.timestamp),
    /// with the clock passed in.
    private enum Reference {
        static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

        static func line(_ level: LogLevel, _ event: StaticString, _ fields: [LogField], time: timespec) -> String {
            var line = "{\"ts\":\"\(timestamp(time))\",\"level\":\"\(level.rawValue)\",\"event\":\"\(event)\""
            for field in fields {
                line += ",\"\(field.key)\":"
                switch field {
                case .method(let s):
                    line += quoted(knownMethods.contains(s) ? s : "OTHER")
                case .requestID(let s), .route(let s), .errorType(let s), .identifier(_, let s), .code(_, let s):
                    line += quoted(s)
                case .component(let s):
                    line += quoted(s.description)
                case .status(let n), .count(_, let n), .number(_, let n):
                    line += String(n)
                case .durationMs(let d):
                    line += String(format: "%.3f", d)
                }
            }
            line += "}\n"
            return line
        }

        static func quoted(_ s: String) -> String {
            var out = "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case _ where scalar.value < 0x20:
                    out += String(format: "\\u%04x", scalar.value)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }

        static func timestamp(_ ts: timespec) -> String {
            var t = ts.tv_sec
            var parts = tm()
            gmtime_r(&t, &parts)
            return String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(ts.tv_nsec / 1_000_000))
        }
    }
}
