import Foundation

/// Severity of a log line.
public enum LogLevel: String, Sendable, Comparable {
    case debug, info, warning, error

    private var rank: Int {
        switch self {
        case .debug: 0
        case .info: 1
        case .warning: 2
        case .error: 3
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }
}

/// A typed log field. There is deliberately no case for free-form text built from user
/// input: the only strings a line can carry are `LogEvent` names, route templates, HTTP
/// methods, request ids (already restricted to `[A-Za-z0-9._-]`), and type names.
/// Spec §7 (privacy): never bodies, emails, tokens, notes, subscriber numbers.
public enum LogField: Sendable {
    /// Request id (`X-Request-ID`, 1–64 chars of `[A-Za-z0-9._-]`).
    case requestID(String)
    /// HTTP method token, e.g. `GET`. A method outside RFC 9110 §9 and `PATCH` is logged
    /// as `OTHER`: the token is chosen by the client (up to the request-line limit).
    case method(String)
    /// A route template such as `/v1/water_logs/{uid}/entries` — never the concrete path.
    case route(String)
    /// HTTP status code.
    case status(Int)
    /// Duration in milliseconds.
    case durationMs(Double)
    /// The Swift type name of an error (`String(reflecting: type(of: error))`), never its description.
    case errorType(String)
    /// A count (connections, jobs in a commit, migrations applied…).
    case count(String, Int)
    /// A static, code-defined label (`"listener"`, `"writer"`); `StaticString` so it cannot be user text.
    case component(StaticString)
    /// A numeric value under a static key (e.g. port, errno).
    case number(StaticString, Int)

    var key: String {
        switch self {
        case .requestID: "requestId"
        case .method: "method"
        case .route: "route"
        case .status: "status"
        case .durationMs: "durationMs"
        case .errorType: "errorType"
        case .count(let k, _): k
        case .component: "component"
        case .number(let k, _): k.description
        }
    }
}

/// Writes one JSON object per line to standard error:
/// `{"ts":"2026-11-29T08:15:00.000Z","level":"info","event":"request",...}`.
///
/// Events are `StaticString`s so a message can never be assembled from user input.
/// Thread-safe; lines are written with a single `write(2)` each.
public struct Logger: Sendable {
    /// Lines below this level are dropped.
    public var minimumLevel: LogLevel

    public init(minimumLevel: LogLevel = .info) {
        self.minimumLevel = minimumLevel
    }

    /// Logs `event` with typed `fields` at `level`.
    public func log(_ level: LogLevel, _ event: StaticString, _ fields: LogField...) {
        log(level, event, fields)
    }

    public func debug(_ event: StaticString, _ fields: LogField...) { log(.debug, event, fields) }
    public func info(_ event: StaticString, _ fields: LogField...) { log(.info, event, fields) }
    public func warning(_ event: StaticString, _ fields: LogField...) { log(.warning, event, fields) }
    public func error(_ event: StaticString, _ fields: LogField...) { log(.error, event, fields) }

    /// Array form of `log(_:_:_:)`, for forwarding variadic fields.
    public func log(_ level: LogLevel, _ event: StaticString, _ fields: [LogField]) {
        guard level >= minimumLevel else { return }
        var line = "{\"ts\":\"\(Logger.timestamp())\",\"level\":\"\(level.rawValue)\",\"event\":\"\(event)\""
        for field in fields {
            line += ",\"\(field.key)\":"
            switch field {
            case .method(let s):
                line += Logger.quoted(Logger.knownMethods.contains(s) ? s : "OTHER")
            case .requestID(let s), .route(let s), .errorType(let s):
                line += Logger.quoted(s)
            case .component(let s):
                line += Logger.quoted(s.description)
            case .status(let n), .count(_, let n), .number(_, let n):
                line += String(n)
            case .durationMs(let d):
                line += String(format: "%.3f", d)
            }
        }
        line += "}\n"
        Logger.writeLine(line)
    }

    /// Methods logged as sent (RFC 9110 §9.1 plus RFC 5789 `PATCH`).
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

    static func writeLine(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(2, base + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += n
            }
        }
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

    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = ts.tv_sec
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                      Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(ts.tv_nsec / 1_000_000))
    }
}
