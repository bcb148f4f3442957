import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// Who is calling (spec §3): a user with a session, or an admin API key.
public enum Principal: Sendable, Equatable {
    /// A user's access token: `sub` and `sid` claims.
    case user(id: String, sessionID: String)
    /// An admin API key, by its name.
    case admin(name: String)
}

/// A routed request as handlers see it: the HTTP request, the path parameters of the
/// matched route, its template, and the parsed query.
public struct APIRequest: Sendable {
    public let http: HTTPRequest
    /// Path parameters by name (`uid`, `entryId`), raw (percent-decoded).
    public let parameters: [String: String]
    /// The matched route template, e.g. `/v1/users/{uid}` (logged instead of the path).
    public let route: String
    /// Query parameters, looked up by code points; a name given twice → 400 at parse time.
    public let query: QueryParameters
    /// Server clock at arrival, ms since the epoch.
    public let now: Int64

    /// Builds the request; throws 400 `invalid_query` for malformed or repeated parameters.
    init(http: HTTPRequest, parameters: [String: String], route: String, now: Int64) throws(APIError) {
        self.http = http
        self.parameters = parameters
        self.route = route
        self.now = now
        self.query = try Self.parseQuery(http.query)
    }

    /// A path parameter (the router guarantees presence for the route's own names).
    public func parameter(_ name: String) -> String { parameters[name] ?? "" }

    /// First value of a header (case-insensitive name).
    public func header(_ name: String) -> String? { http.headers.first(name: name) }

    /// `X-Device-ID` normalised, nil when absent.
    /// - Throws: 400 `invalid_device_id` when present but not a UUID.
    public func deviceID() throws(APIError) -> String? {
        guard let raw = header("X-Device-ID") else { return nil }
        guard let id = UUIDText.normalized(raw) else {
            throw APIError.badRequest(.invalidDeviceID, "X-Device-ID must be a UUID.")
        }
        return id
    }

    /// The body as a JSON value.
    /// - Parameter mergePatch: also accept `application/merge-patch+json` (RFC 7396).
    /// - Throws: 415 for another media type, 400 `malformed_json` for bad JSON or bytes.
    public func jsonBody(mergePatch: Bool = false) throws(APIError) -> JSONValue {
        let type =
            (header("Content-Type") ?? "").split(separator: ";", maxSplits: 1).first
            .map { $0.trimmingASCIISpaces().lowercased() } ?? ""
        guard type == "application/json" || (mergePatch && type == "application/merge-patch+json") else {
            throw APIError.unsupportedMediaType
        }
        do {
            return try JSONParser.parse(http.body)
        } catch {
            throw APIError.malformedJSON()
        }
    }

    /// Percent-decodes `application/x-www-form-urlencoded`-free query strings: `+` is kept
    /// as a literal plus (RFC 3986), so `from=2026-01-15T10:30:00+03:00` works from curl.
    /// Names are compared code point by code point (spec §1): `%E2%84%AA` (KELVIN SIGN) is
    /// not `K`, so such a name is another parameter, never a repeat of an ASCII one.
    static func parseQuery(_ raw: String?) throws(APIError) -> QueryParameters {
        guard let raw, !raw.isEmpty else { return QueryParameters([:]) }
        var out: [CodePointKey: String] = [:]
        // Split on the bytes `&` and `=` (ASCII, never inside a multi-byte UTF-8 sequence):
        // splitting the `String` would walk grapheme clusters for nothing.
        let bytes = Array(raw.utf8)
        for pair in bytes.split(separator: 0x26, omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: 0x3D)
            let nameBytes = pair[pair.startIndex..<(equals ?? pair.endIndex)]
            let valueBytes = equals.map { pair[pair.index(after: $0)...] } ?? pair[pair.endIndex...]
            guard let name = percentDecode(nameBytes), let value = percentDecode(valueBytes) else {
                throw APIError.badRequest(.invalidQuery, "The query string is not valid percent-encoding.")
            }
            guard out[CodePointKey(name)] == nil else {
                throw APIError.badRequest(.invalidQuery, "A query parameter is given more than once.")
            }
            out[CodePointKey(name)] = value
        }
        return QueryParameters(out)
    }

    /// `s` with `%XX` escapes decoded (RFC 3986 §2.1), or nil when an escape is cut short, not
    /// hexadecimal, or the result is not UTF-8.
    static func percentDecode(_ s: ArraySlice<UInt8>) -> String? {
        guard s.contains(0x25) else { return String(validating: s, as: UTF8.self) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.count)
        var index = s.startIndex
        while index < s.endIndex {
            let c = s[index]
            index += 1
            if c == 0x25 {
                guard index + 1 < s.endIndex, let hv = hexValue(s[index]), let lv = hexValue(s[index + 1]) else {
                    return nil
                }
                bytes.append(hv << 4 | lv)
                index += 2
            } else {
                bytes.append(c)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
}

/// The parsed query of a request: percent-decoded values by name, where names are equal
/// only with the same code points (spec §1; `String` keys would use Unicode equivalence).
public struct QueryParameters: Sendable {
    private let values: [CodePointKey: String]

    init(_ values: [CodePointKey: String]) { self.values = values }

    /// The value of parameter `name`, or nil when it is absent.
    public subscript(name: String) -> String? { values[CodePointKey(name)] }

    /// True when there are no parameters.
    public var isEmpty: Bool { values.isEmpty }
}

extension Substring {
    func trimmingASCIISpaces() -> Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return s
    }
}
