import SuplashHTTP
import SuplashJSON

extension HTTPResponse {
    /// A JSON response (`application/json`) with `value` serialised compactly.
    static func json(_ status: Int, _ value: JSONValue, headers: [(String, String)] = []) -> HTTPResponse {
        var response = HTTPResponse(status: status, body: value.serialized())
        response.headers.add(name: "Content-Type", value: "application/json")
        for (name, v) in headers { response.headers.add(name: name, value: v) }
        return response
    }

    /// An empty response (204, 304).
    static func empty(_ status: Int, headers: [(String, String)] = []) -> HTTPResponse {
        var response = HTTPResponse(status: status, body: [])
        for (name, v) in headers { response.headers.add(name: name, value: v) }
        return response
    }
}

/// Entity tags (RFC 9110 §8.8.3) and the conditional requests of spec §4.
enum EntityTag {
    /// The strong ETag of a document version: `"7"`.
    static func forVersion(_ version: Int64) -> String { "\"\(version)\"" }

    /// Parses an `If-Match` / `If-None-Match` list into opaque tags; nil means `*`.
    /// A `-gzip` suffix (added to compressed representations) is stripped. `W/` is
    /// removed when `keepWeak` is false (weak comparison); with `keepWeak` a weak tag
    /// stays prefixed and so never equals a strong one (strong comparison).
    static func parseList(_ header: String, keepWeak: Bool = false) -> [String]? {
        var tags: [String] = []
        for part in header.split(separator: ",") {
            var t = part.trimmingASCIISpaces()
            if t == "*" { return nil }
            if t.hasPrefix("W/") && !keepWeak { t = t.dropFirst(2) }
            var s = String(t)
            if s.hasSuffix("-gzip\"") { s = String(s.dropLast(6)) + "\"" }
            tags.append(s)
        }
        return tags
    }

    /// RFC 9110 §13.1.1: true when `If-Match` is absent, `*`, or lists `current`
    /// (strong comparison: a weak tag never matches).
    static func ifMatchPasses(_ header: String?, current: String) -> Bool {
        guard let header else { return true }
        guard let tags = parseList(header, keepWeak: true) else { return true }
        return tags.contains(current)
    }

    /// RFC 9110 §13.1.2: true when the client's copy is current (→ 304).
    static func ifNoneMatchHits(_ header: String?, current: String) -> Bool {
        guard let header else { return false }
        guard let tags = parseList(header) else { return true }
        return tags.contains(current)
    }
}
