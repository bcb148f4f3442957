/// One header field of an outbound request or of a response (RFC 9110 §5).
public struct HTTPClientHeader: Sendable, Hashable {
    /// The field name as sent or received (HTTP/2 delivers names in lower case, RFC 9113 §8.2.1).
    public var name: String
    /// The field value, without surrounding whitespace.
    public var value: String

    /// Creates a header field.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// An outbound HTTP request: method, absolute `https` URL, header fields, body.
public struct HTTPClientRequest: Sendable {
    /// The request method (RFC 9110 §9): `GET`, `HEAD`, `POST`, `PUT`, `PATCH`, `DELETE`, or
    /// another token of letters.
    public var method: String
    /// The absolute `https://host[:port]/path?query` URL (RFC 9110 §4.2.2). Other schemes are
    /// refused with `HTTPClientError.invalidRequest` (`http` is accepted only when
    /// `HTTPClientConfiguration.allowsCleartext` is set).
    public var url: String
    /// Header fields in order. Names are tokens; names and values must not contain CR, LF or NUL
    /// (`HTTPClientError.invalidRequest` otherwise). `content-length` and the HTTP/2
    /// pseudo-headers are written by libcurl and must not be given.
    public var headers: [HTTPClientHeader]
    /// The request content (may be empty).
    public var body: [UInt8]
    /// The deadline for the whole exchange (queueing for a stream, connecting, sending,
    /// receiving), or nil for the client's `HTTPClientConfiguration.requestTimeout`.
    public var timeout: Duration?

    /// Creates a request.
    public init(
        method: String, url: String, headers: [HTTPClientHeader] = [], body: [UInt8] = [],
        timeout: Duration? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// The HTTP version a response arrived over (`CURLINFO_HTTP_VERSION`).
public enum HTTPClientVersion: String, Sendable, Hashable {
    // swift-format-ignore: AlwaysUseLowerCamelCase
    // (`http1_0` and `http1_1` spell the protocol versions, as `HTTPVersion` does.)
    /// HTTP/1.0 (RFC 1945).
    case http1_0 = "HTTP/1.0"
    // swift-format-ignore: AlwaysUseLowerCamelCase
    /// HTTP/1.1 (RFC 9112).
    case http1_1 = "HTTP/1.1"
    /// HTTP/2 (RFC 9113).
    case http2 = "HTTP/2"
    /// HTTP/3 (RFC 9114).
    case http3 = "HTTP/3"
    /// libcurl reported no version (no response was parsed).
    case unknown = "unknown"
}

/// A complete response: status, header fields, content, and the HTTP version it came over.
public struct HTTPClientResponse: Sendable {
    /// The status code (RFC 9110 §15), 100–599.
    public var status: Int
    /// The final response's header fields in order (informational 1xx responses are dropped).
    public var headers: [HTTPClientHeader]
    /// The response content, at most `HTTPClientConfiguration.maxResponseBodyBytes` bytes.
    public var body: [UInt8]
    /// `.http2` or `.http3` when `HTTPClientConfiguration.requiresHTTP2` is set (anything older
    /// fails the request); otherwise whatever the server answered over.
    public var httpVersion: HTTPClientVersion

    /// Creates a response (the client builds these; tests may too).
    public init(status: Int, headers: [HTTPClientHeader], body: [UInt8], httpVersion: HTTPClientVersion) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    /// The value of the first header field named `name` (ASCII case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// Why an exchange failed. Descriptions are fixed strings (no URL, header or body), safe to log.
public enum HTTPClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The request was refused before anything was sent: not an absolute `https` URL, a method
    /// that is not a token, a header name or value with CR/LF/NUL, or libcurl refused an option.
    case invalidRequest
    /// The server did not negotiate HTTP/2. Normally caught in the TLS handshake (ALPN did not
    /// select `h2`), before any request byte is sent; as a second check, a response that still
    /// arrived over HTTP/1.x (`CURLINFO_HTTP_VERSION`, e.g. on a resumed TLS session) is
    /// discarded — that request may have reached the server.
    case http2NotNegotiated(HTTPClientVersion)
    /// The host name did not resolve (`CURLE_COULDNT_RESOLVE_HOST`).
    case couldNotResolve
    /// No TCP connection could be made (`CURLE_COULDNT_CONNECT`): refused, unreachable.
    case couldNotConnect
    /// The TLS handshake failed or the server's certificate was not trusted
    /// (`CURLE_SSL_CONNECT_ERROR`, `CURLE_PEER_FAILED_VERIFICATION`, an unreadable CA file …).
    case tls
    /// The request's deadline passed (`CURLE_OPERATION_TIMEDOUT`).
    case timedOut
    /// The connection broke while the exchange was in flight: reset, closed, an HTTP/2
    /// framing or stream error, or an empty reply (`CURLE_SEND_ERROR`, `CURLE_RECV_ERROR`,
    /// `CURLE_HTTP2`, `CURLE_HTTP2_STREAM`, `CURLE_GOT_NOTHING`, `CURLE_PARTIAL_FILE`). The
    /// request may or may not have been processed; libcurl connects anew for the next one.
    case connectionLost
    /// The response content exceeded `HTTPClientConfiguration.maxResponseBodyBytes`.
    case responseTooLarge
    /// The caller's task was cancelled, or `HTTPClient.cancel` was called, before completion.
    case cancelled
    /// The client is shutting down or has shut down.
    case shutDown
    /// Any other libcurl failure, by its `CURLcode` number (see libcurl-errors(3)).
    case curl(code: Int)

    /// A fixed, content-free description.
    public var description: String {
        switch self {
        case .invalidRequest: return "request refused before sending"
        case .http2NotNegotiated(let version): return "server did not negotiate HTTP/2 (answered over \(version.rawValue))"
        case .couldNotResolve: return "host name did not resolve"
        case .couldNotConnect: return "could not connect"
        case .tls: return "TLS handshake or certificate verification failed"
        case .timedOut: return "request timed out"
        case .connectionLost: return "connection lost during the exchange"
        case .responseTooLarge: return "response body too large"
        case .cancelled: return "request cancelled"
        case .shutDown: return "HTTP client is shut down"
        case .curl(let code): return "libcurl error \(code)"
        }
    }

    /// True for failures that say nothing about the request itself, where sending it again
    /// later (after backoff) is reasonable: `couldNotResolve`, `couldNotConnect`, `tls`,
    /// `timedOut`, `connectionLost`.
    public var isTransient: Bool {
        switch self {
        case .couldNotResolve, .couldNotConnect, .tls, .timedOut, .connectionLost: return true
        default: return false
        }
    }
}

/// Settings of one `HTTPClient`.
public struct HTTPClientConfiguration: Sendable {
    /// A PEM file of trusted CA certificates (`CURLOPT_CAINFO`), or nil for the system store.
    /// Tests point it at the mock server's self-signed CA.
    public var caFile: String?
    /// Deadline for establishing a connection (TCP + TLS), `CURLOPT_CONNECTTIMEOUT_MS`.
    public var connectTimeout: Duration
    /// Default deadline for a whole exchange, `CURLOPT_TIMEOUT_MS` (overridable per request).
    public var requestTimeout: Duration
    /// Most concurrent HTTP/2 streams this client opens on one connection
    /// (`CURLMOPT_MAX_CONCURRENT_STREAMS`); the server's `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// (RFC 9113 §6.5.2) lowers it further. Requests beyond it wait for a stream.
    public var maxConcurrentStreams: Int
    /// Largest accepted response content, bytes.
    public var maxResponseBodyBytes: Int
    /// True (the default): only HTTP/2 is accepted — a server without ALPN `h2` is refused in
    /// the TLS handshake and a response over HTTP/1.x fails with `.http2NotNegotiated`. False:
    /// HTTP/2 is offered over TLS (`CURL_HTTP_VERSION_2TLS`) and HTTP/1.1 (RFC 9112) is
    /// accepted too, for plain HTTP APIs such as a mail provider's or a key set download.
    public var requiresHTTP2: Bool
    /// False (the default): only `https` URLs. True: `http` URLs too (cleartext HTTP/1.1), for
    /// endpoints an operator points at a local service; only honoured with `requiresHTTP2` false.
    public var allowsCleartext: Bool

    /// Creates a configuration: system CA store, 10 s to connect, 30 s per exchange,
    /// 100 streams per connection, 1 MiB responses, HTTP/2 over TLS only.
    public init(
        caFile: String? = nil, connectTimeout: Duration = .seconds(10), requestTimeout: Duration = .seconds(30),
        maxConcurrentStreams: Int = 100, maxResponseBodyBytes: Int = 1 << 20,
        requiresHTTP2: Bool = true, allowsCleartext: Bool = false
    ) {
        self.caFile = caFile
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.maxConcurrentStreams = maxConcurrentStreams
        self.maxResponseBodyBytes = maxResponseBodyBytes
        self.requiresHTTP2 = requiresHTTP2
        self.allowsCleartext = allowsCleartext && !requiresHTTP2
    }
}

extension Duration {
    /// Whole milliseconds, rounded up, at least 1 (libcurl treats 0 as "no timeout").
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        let ms = seconds.multipliedReportingOverflow(by: 1000)
        guard !ms.overflow, seconds >= 0 else { return seconds < 0 ? 1 : Int.max }
        let extra = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return max(1, Int(ms.partialValue + extra))
    }
}
