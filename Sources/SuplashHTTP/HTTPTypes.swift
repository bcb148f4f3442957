/// An HTTP/1.x protocol version (RFC 9112 §2.3).
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    /// Major version; always 1 for requests the engine accepts.
    public var major: Int
    /// Minor version: 0 or 1 (other 1.x minors are treated like 1.1).
    public var minor: Int

    /// Creates a version.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    // swift-format-ignore: AlwaysUseLowerCamelCase
    // (`http1_0` and `http1_1` spell the protocol versions; `http10` would read as "HTTP 10".)
    /// HTTP/1.0.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    // swift-format-ignore: AlwaysUseLowerCamelCase
    /// HTTP/1.1.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// `"HTTP/1.1"`.
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// A parsed request head: request line plus header section (RFC 9112 §3, §5).
///
/// Given to `HTTPResponder.bodyLimit(for:)` before any body byte is read.
public struct HTTPRequestHead: Sendable {
    /// The method token as received, e.g. `"GET"` (case-sensitive, RFC 9110 §9.1).
    public var method: String
    /// The request target in origin form, e.g. `"/v1/users/me?x=1"`; for an absolute-form
    /// target (`http://host/v1/users/me?x=1`, RFC 9112 §3.2.2) its path and query.
    public var target: String
    /// The target's path, before `?`, not percent-decoded.
    public var path: String
    /// The target's query, after the first `?` (without it), or nil when there is no `?`.
    public var query: String?
    /// The request's protocol version.
    public var version: HTTPVersion
    /// The header fields, in order.
    public var headers: HTTPHeaders

    /// Creates a head.
    public init(method: String, target: String, path: String, query: String?, version: HTTPVersion, headers: HTTPHeaders) {
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
    }
}

/// A complete request handed to `HTTPResponder.respond(to:sink:)`.
public struct HTTPRequest: Sendable {
    /// The head's fields.
    public var head: HTTPRequestHead
    /// The body with any chunked transfer coding removed (RFC 9112 §7.1); empty when none.
    public var body: [UInt8]
    /// The request id: the incoming `X-Request-ID` when it is 1–64 characters of
    /// `[A-Za-z0-9._-]`, otherwise a fresh random one. The engine echoes it on the response.
    public var requestID: String
    /// The peer's IP address as text (`"127.0.0.1"`, `"::1"`).
    public var remoteAddress: String

    /// Creates a request.
    public init(head: HTTPRequestHead, body: [UInt8], requestID: String, remoteAddress: String) {
        self.head = head
        self.body = body
        self.requestID = requestID
        self.remoteAddress = remoteAddress
    }

    /// The method token, e.g. `"POST"`.
    public var method: String { head.method }
    /// The raw request target.
    public var target: String { head.target }
    /// The raw path (before `?`).
    public var path: String { head.path }
    /// The raw query (after `?`), or nil.
    public var query: String? { head.query }
    /// The protocol version.
    public var version: HTTPVersion { head.version }
    /// The header fields.
    public var headers: HTTPHeaders { head.headers }
}

/// A response the responder hands to `HTTPResponseSink.send(_:)`.
///
/// The engine sets `Date`, `X-Request-ID`, `Content-Length` (from `body.count`) and
/// `Connection` itself; values the responder sets for those are replaced (except a
/// `Content-Length` on a bodiless answer to HEAD, which is kept). `Connection: close`
/// set by the responder makes the engine close the connection after this response.
/// Header names or values containing CR or LF are dropped (no response splitting).
public struct HTTPResponse: Sendable {
    /// Status code, 200–599 (1xx are not allowed here).
    public var status: Int
    /// Header fields to send, in order.
    public var headers: HTTPHeaders
    /// The body bytes (not sent for HEAD, 204 and 304).
    public var body: [UInt8]
    /// A body held in a temporary file, sent as the socket drains (for large answers such as
    /// exports); when set it replaces `body`, and `Content-Length` is its `count`.
    public var bodyFile: HTTPFileBody?

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], bodyFile: HTTPFileBody? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyFile = bodyFile
    }
}

/// Why a request was malformed (each maps to 400 Bad Request).
public enum HTTPBadRequestReason: String, Sendable, Hashable {
    /// The request line is not `method SP request-target SP HTTP/1.x` with an origin-form or
    /// `http`/`https` absolute-form target (RFC 9112 §3, §3.2).
    case invalidRequestLine
    /// The version is not HTTP/1.x (the engine answers 400, never 505).
    case unsupportedVersion
    /// A line ended in a bare LF, or a CR was not followed by LF (RFC 9112 §2.2).
    case bareLineFeed
    /// A field name is not a token, is empty, or has whitespace before the colon (RFC 9112 §5.1).
    case invalidHeaderName
    /// A field value contains a control character other than HTAB (RFC 9110 §5.5).
    case invalidHeaderValue
    /// A field line starts with whitespace: obsolete line folding (RFC 9112 §5.2).
    case obsoleteLineFolding
    /// An HTTP/1.1 request without `Host`, with more than one, or a `Host` value that is
    /// not `uri-host [":" port]` (RFC 9112 §3.2, RFC 3986 §3.2.2).
    case invalidHost
    /// Both `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.3), or
    /// `Transfer-Encoding` in an HTTP/1.0 request.
    case conflictingFraming
    /// `Content-Length` not `1*DIGIT`, overflowing, or differing duplicates (RFC 9110 §8.6).
    case invalidContentLength
    /// A `Transfer-Encoding` whose final coding is not `chunked`, or that applies
    /// `chunked` more than once (RFC 9112 §6.3, §7).
    case invalidTransferEncoding
    /// A malformed chunk-size line, chunk terminator or trailer (RFC 9112 §7.1).
    case invalidChunk
}

/// An error the engine answers by itself, through `HTTPServerConfiguration.errorResponse`.
/// After every one of them the connection is closed (lingering close).
public enum HTTPEngineError: Error, Sendable, Hashable {
    /// 400: malformed request or framing.
    case badRequest(HTTPBadRequestReason)
    /// 408: the request head (or body) did not arrive in time.
    case requestTimeout
    /// 413: the body exceeds `HTTPResponder.bodyLimit(for:)`.
    case contentTooLarge
    /// 414: the request line exceeds `maxRequestLine`.
    case uriTooLong
    /// 431: the header section (or chunked trailer section) exceeds `maxHeaderSection`.
    case headerFieldsTooLarge
    /// 501: a final `chunked` after a transfer coding the engine does not implement, e.g.
    /// `gzip, chunked` (RFC 9112 §6.1).
    case unsupportedTransferCoding
    /// 503: the server is shutting down (a request arrived while draining).
    case shuttingDown

    /// The HTTP status code for this error.
    public var status: Int {
        switch self {
        case .badRequest: 400
        case .requestTimeout: 408
        case .contentTooLarge: 413
        case .uriTooLong: 414
        case .headerFieldsTooLarge: 431
        case .unsupportedTransferCoding: 501
        case .shuttingDown: 503
        }
    }

    /// One error of each kind, for listing every code the engine can answer.
    public static let everyKind: [HTTPEngineError] = [
        .badRequest(.invalidRequestLine), .requestTimeout, .contentTooLarge, .uriTooLong,
        .headerFieldsTooLarge, .unsupportedTransferCoding, .shuttingDown,
    ]

    /// Every problem `code` the engine can answer (the application's problem registry must
    /// list each; spec §2).
    public static var problemCodes: [String] { everyKind.map(\.code) }

    /// A stable machine-readable code for problem+json, as the API documents it (spec §2):
    /// `bad_request`, `request_timeout`, `payload_too_large`, `uri_too_long`,
    /// `header_fields_too_large`, `not_implemented`, `unavailable`.
    public var code: String {
        switch self {
        case .badRequest: "bad_request"
        case .requestTimeout: "request_timeout"
        case .contentTooLarge: "payload_too_large"
        case .uriTooLong: "uri_too_long"
        case .headerFieldsTooLarge: "header_fields_too_large"
        case .unsupportedTransferCoding: "not_implemented"
        case .shuttingDown: "unavailable"
        }
    }

    /// A short human title (RFC 9457 `title`), fixed per status.
    public var title: String {
        switch self {
        case .badRequest: "Bad Request"
        case .requestTimeout: "Request Timeout"
        case .contentTooLarge: "Content Too Large"
        case .uriTooLong: "URI Too Long"
        case .headerFieldsTooLarge: "Request Header Fields Too Large"
        case .unsupportedTransferCoding: "Not Implemented"
        case .shuttingDown: "Service Unavailable"
        }
    }
}

/// The application side of the engine.
///
/// Both methods are called on the connection's event-loop thread and must not block:
/// hand slow work (SQLite, Argon2id) to a `BlockingPool` and call `sink.send` from there.
public protocol HTTPResponder: Sendable {
    /// The largest body, in bytes, accepted for a request with this head; called before
    /// any body byte is read. A declared `Content-Length` above it is answered 413 without
    /// reading the body; a chunked body is cut off with 413 once it grows past it.
    func bodyLimit(for head: HTTPRequestHead) -> Int

    /// Answers `request` by calling `sink.send(_:)` exactly once, from any thread, now or
    /// later. Responses on one connection are written in request order.
    func respond(to request: HTTPRequest, sink: HTTPResponseSink)
}
