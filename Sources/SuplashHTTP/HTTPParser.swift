#if canImport(Glibc)
    import Glibc
#endif

/// Size limits the parser checks while bytes arrive (never after buffering everything).
struct HTTPParserLimits: Sendable {
    /// Longest request line in bytes, without CRLF (RFC 9112 §3) → 414 past it.
    var maxRequestLine: Int = 8 * 1024
    /// Largest header section in bytes, field lines plus CRLFs and the final CRLF → 431.
    /// Also bounds a chunked body's trailer section.
    var maxHeaderSection: Int = 16 * 1024
    /// Longest chunk-size line (size plus extensions) → 400 past it.
    var maxChunkLine: Int = 4 * 1024
}

/// How the request's body is delimited (RFC 9112 §6.3).
enum BodyFraming: Equatable, Sendable {
    /// No body (no Content-Length / Transfer-Encoding, or Content-Length: 0).
    case none
    /// Exactly this many bytes follow the head.
    case length(Int)
    /// `Transfer-Encoding: chunked`.
    case chunked
}

/// A request head plus what the parser derived from its fields.
struct ParsedHead: Sendable {
    var head: HTTPRequestHead
    var framing: BodyFraming
    /// HTTP/1.1 without `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`.
    var keepAlive: Bool
    /// True when the request is HTTP/1.0 and asked for keep-alive (answer says so).
    var http10KeepAlive: Bool
    /// `Expect: 100-continue` was sent.
    var expectContinue: Bool
    /// The incoming `X-Request-ID` if it is 1–64 chars of `[A-Za-z0-9._-]`.
    var incomingRequestID: String?
    /// True for `HEAD` (the answer has no body).
    var isHead: Bool
}

/// What one `parse` step produced.
enum ParserEvent: Sendable {
    /// A complete head. If `framing` is not `.none`, call `beginBody(limit:)` before
    /// parsing on; otherwise the parser is already waiting for the next request.
    case head(ParsedHead)
    /// The body of the current request is complete (de-chunked).
    case body([UInt8])
    /// The request is malformed; the parser is now failed and must not be used again.
    case error(HTTPEngineError)
}

/// An incremental HTTP/1.1 request parser (RFC 9112).
///
/// Feed it the bytes received so far that it has not consumed; it consumes what it can
/// and stops after each event. A request split down to one byte per read and many
/// requests in one read both work. Partial lines are copied into a small carry-over
/// buffer bounded by the limits; complete lines in the input are parsed in place.
struct HTTPRequestParser {
    enum State: Equatable {
        case requestLine
        case headers
        case awaitingBody
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case failed
    }

    let limits: HTTPParserLimits
    private(set) var state: State = .requestLine

    /// A line whose LF has not arrived yet.
    private var carry: [UInt8] = []
    /// True once any byte of the current request head has been consumed.
    private(set) var headStarted = false
    private var headerBytes = 0

    // Head under construction.
    private var method = ""
    private var target = ""
    private var path = ""
    private var query: String?
    private var version = HTTPVersion.http1_1
    private var headers = HTTPHeaders()
    private var contentLength: Int?
    private var transferEncodings: [String] = []
    private var hostCount = 0
    /// A Host value that is not `uri-host [":" port]` was seen.
    private var hostInvalid = false
    private var connectionClose = false
    private var connectionKeepAlive = false
    private var expectContinue = false
    private var incomingRequestID: String?
    private var framing = BodyFraming.none

    // Body under construction.
    private var body: [UInt8] = []
    private var bodyLimit = 0

    init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// A valid incoming `X-Request-ID` of the request being parsed, once its field was
    /// seen (kept after an error, so error answers can echo it).
    var requestIDSoFar: String? { incomingRequestID }

    /// True when no byte of a next request has arrived (keep-alive idle).
    var isIdle: Bool { state == .requestLine && !headStarted }

    /// True while a body is being read.
    var isReadingBody: Bool {
        switch state {
        case .fixedBody, .chunkSize, .chunkData, .chunkDataEnd, .trailers: true
        default: false
        }
    }

    /// Starts reading the body announced by the last `.head` event.
    /// - Returns: `.contentTooLarge` when a declared Content-Length exceeds `limit`
    ///   (the parser is then failed), else nil.
    mutating func beginBody(limit: Int) -> HTTPEngineError? {
        precondition(state == .awaitingBody, "beginBody without a head that has a body")
        bodyLimit = limit
        switch framing {
        case .length(let n):
            if n > limit {
                state = .failed
                return .contentTooLarge
            }
            body = []
            body.reserveCapacity(n)
            state = .fixedBody(remaining: n)
        case .chunked:
            body = []
            state = .chunkSize
        case .none:
            resetForNextRequest()
        }
        return nil
    }

    /// Parses from `input`; returns how many bytes were consumed and the event, if any.
    /// With no event, all of `input` was consumed and more bytes are needed.
    mutating func parse(_ input: UnsafeRawBufferPointer) -> (consumed: Int, event: ParserEvent?) {
        var i = 0
        let count = input.count
        while true {
            switch state {
            case .failed, .awaitingBody:
                return (i, nil)
            case .fixedBody(let remaining):
                let take = min(remaining, count - i)
                if take > 0 {
                    body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[i..<(i + take)]))
                    i += take
                }
                if remaining - take == 0 {
                    let finished = body
                    resetForNextRequest()
                    return (i, .body(finished))
                }
                state = .fixedBody(remaining: remaining - take)
                return (i, nil)
            case .chunkData(let remaining):
                let take = min(remaining, count - i)
                if take > 0 {
                    body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[i..<(i + take)]))
                    i += take
                }
                if remaining - take == 0 {
                    state = .chunkDataEnd
                    continue
                }
                state = .chunkData(remaining: remaining - take)
                return (i, nil)
            case .requestLine, .headers, .chunkSize, .chunkDataEnd, .trailers:
                if i >= count { return (i, nil) }
                if state == .requestLine { headStarted = true }
                let rest = UnsafeRawBufferPointer(rebasing: input[i..<count])
                guard let base = rest.baseAddress,
                    let lfPointer = memchr(base, 0x0A, rest.count)
                else {
                    // No complete line yet: carry it, within the limits.
                    if let error = partialLineError(pending: carry.count + rest.count) {
                        return (count, fail(error))
                    }
                    carry.append(contentsOf: rest)
                    return (count, nil)
                }
                let lineLength = UnsafeRawPointer(lfPointer) - base
                let next = i + lineLength + 1
                let event: ParserEvent?
                if carry.isEmpty {
                    event = processLine(UnsafeRawBufferPointer(rebasing: rest[0..<lineLength]))
                } else {
                    if let error = partialLineError(pending: carry.count + lineLength) {
                        return (next, fail(error))
                    }
                    var line = carry
                    carry = []
                    line.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[0..<lineLength]))
                    event = line.withUnsafeBytes { processLine($0) }
                    line.removeAll(keepingCapacity: true)
                    carry = line
                }
                i = next
                if let event { return (i, event) }
            }
        }
    }

    // MARK: - Lines

    /// Limit check for a line of `pending` bytes whose LF has not been seen (the count may
    /// include a trailing CR).
    private func partialLineError(pending: Int) -> HTTPEngineError? {
        switch state {
        case .requestLine:
            return pending > limits.maxRequestLine + 1 ? .uriTooLong : nil
        case .headers:
            return headerBytes + pending > limits.maxHeaderSection + 1 ? .headerFieldsTooLarge : nil
        case .trailers:
            return headerBytes + pending > limits.maxHeaderSection + 1 ? .headerFieldsTooLarge : nil
        case .chunkSize:
            return pending > limits.maxChunkLine + 1 ? .badRequest(.invalidChunk) : nil
        case .chunkDataEnd:
            return pending > 1 ? .badRequest(.invalidChunk) : nil
        default:
            return nil
        }
    }

    /// Handles one line (without its LF). Returns an event when one is due.
    private mutating func processLine(_ raw: UnsafeRawBufferPointer) -> ParserEvent? {
        // Every line must end in CRLF: a bare LF is rejected (RFC 9112 §2.2).
        guard raw.count > 0, raw[raw.count - 1] == 0x0D else {
            return fail(.badRequest(.bareLineFeed))
        }
        let line = UnsafeRawBufferPointer(rebasing: raw[0..<(raw.count - 1)])
        switch state {
        case .requestLine:
            if line.isEmpty { return nil }  // RFC 9112 §2.2: ignore empty lines before the request line
            if line.count > limits.maxRequestLine { return fail(.uriTooLong) }
            if let error = parseRequestLine(line) { return fail(error) }
            state = .headers
            headerBytes = 0
            return nil
        case .headers:
            headerBytes += line.count + 2
            if headerBytes > limits.maxHeaderSection { return fail(.headerFieldsTooLarge) }
            if line.isEmpty { return finishHead() }
            if let error = parseFieldLine(line, isTrailer: false) { return fail(error) }
            return nil
        case .chunkSize:
            if line.count > limits.maxChunkLine { return fail(.badRequest(.invalidChunk)) }
            return parseChunkSize(line)
        case .chunkDataEnd:
            guard line.isEmpty else { return fail(.badRequest(.invalidChunk)) }
            state = .chunkSize
            return nil
        case .trailers:
            headerBytes += line.count + 2
            if headerBytes > limits.maxHeaderSection { return fail(.headerFieldsTooLarge) }
            if line.isEmpty {
                let finished = body
                resetForNextRequest()
                return .body(finished)
            }
            if let error = parseFieldLine(line, isTrailer: true) { return fail(error) }
            return nil
        default:
            return nil
        }
    }

    private mutating func fail(_ error: HTTPEngineError) -> ParserEvent {
        state = .failed
        carry = []
        body = []
        return .error(error)
    }

    private mutating func resetForNextRequest() {
        state = .requestLine
        headStarted = false
        headerBytes = 0
        method = ""
        target = ""
        path = ""
        query = nil
        headers = HTTPHeaders()
        contentLength = nil
        transferEncodings = []
        hostCount = 0
        hostInvalid = false
        connectionClose = false
        connectionKeepAlive = false
        expectContinue = false
        incomingRequestID = nil
        framing = .none
        body = []
        bodyLimit = 0
    }

    // MARK: - Request line (RFC 9112 §3)

    private mutating func parseRequestLine(_ line: UnsafeRawBufferPointer) -> HTTPEngineError? {
        let n = line.count
        var sp1 = 0
        while sp1 < n && line[sp1] != 0x20 {
            guard isTokenByte(line[sp1]) else { return .badRequest(.invalidRequestLine) }
            sp1 += 1
        }
        guard sp1 > 0, sp1 < n else { return .badRequest(.invalidRequestLine) }
        let targetStart = sp1 + 1
        var sp2 = targetStart
        var questionMark = -1
        while sp2 < n && line[sp2] != 0x20 {
            let b = line[sp2]
            // Visible ASCII only; '#' (a fragment) never belongs in a request target.
            guard b > 0x20, b < 0x7F, b != 0x23 else { return .badRequest(.invalidRequestLine) }
            if b == 0x3F && questionMark < 0 { questionMark = sp2 }
            sp2 += 1
        }
        guard sp2 > targetStart, sp2 < n else { return .badRequest(.invalidRequestLine) }
        // Origin form starts with "/"; absolute form (RFC 9112 §3.2.2) is "http://" or
        // "https://" authority path-abempty ["?" query]: the path and query are used, the
        // authority is checked and otherwise ignored (as is Host).
        var pathStart = targetStart
        if line[targetStart] != 0x2F {
            guard let originStart = absoluteFormPathStart(line, from: targetStart, to: sp2) else {
                return .badRequest(.invalidRequestLine)
            }
            pathStart = originStart
        }
        // HTTP-version = "HTTP/" DIGIT "." DIGIT
        let v = UnsafeRawBufferPointer(rebasing: line[(sp2 + 1)..<n])
        guard v.count == 8, v[0] == 0x48, v[1] == 0x54, v[2] == 0x54, v[3] == 0x50, v[4] == 0x2F,
            isDigit(v[5]), v[6] == 0x2E, isDigit(v[7])
        else {
            return .badRequest(.invalidRequestLine)
        }
        guard v[5] == 0x31 else { return .badRequest(.unsupportedVersion) }
        version = HTTPVersion(major: 1, minor: Int(v[7] - 0x30))
        method = makeString(line, 0, sp1)
        if pathStart == sp2 || pathStart == questionMark {
            // Absolute form with an empty path: the origin form is "/" (RFC 9112 §3.2.1).
            target = "/" + makeString(line, pathStart, sp2)
            path = "/"
            query = questionMark >= 0 ? makeString(line, questionMark + 1, sp2) : nil
            return nil
        }
        target = makeString(line, pathStart, sp2)
        if questionMark >= 0 {
            path = makeString(line, pathStart, questionMark)
            query = makeString(line, questionMark + 1, sp2)
        } else {
            path = target
            query = nil
        }
        return nil
    }

    /// For an absolute-form target in `line[from..<to]`: where its path-abempty starts
    /// (`to` when the path is empty), or nil when it is not `http`/`https` "://" followed by
    /// a valid `host [":" port]` (RFC 9110 §4.2: no userinfo, no empty host).
    private func absoluteFormPathStart(_ line: UnsafeRawBufferPointer, from: Int, to: Int) -> Int? {
        var i = from
        while i < to && line[i] != 0x3A { i += 1 }
        let scheme = UnsafeRawBufferPointer(rebasing: line[from..<i])
        guard equalsLowercase(scheme, "http") || equalsLowercase(scheme, "https") else { return nil }
        guard i + 2 < to, line[i + 1] == 0x2F, line[i + 2] == 0x2F else { return nil }
        let authorityStart = i + 3
        var end = authorityStart
        while end < to && line[end] != 0x2F && line[end] != 0x3F { end += 1 }
        let authority = UnsafeRawBufferPointer(rebasing: line[authorityStart..<end])
        guard !authority.isEmpty, authority[0] != 0x3A, isValidHostField(authority) else { return nil }
        return end
    }

    // MARK: - Field lines (RFC 9112 §5, RFC 9110 §5.5)

    private mutating func parseFieldLine(_ line: UnsafeRawBufferPointer, isTrailer: Bool) -> HTTPEngineError? {
        let n = line.count
        let first = line[0]
        if first == 0x20 || first == 0x09 { return .badRequest(.obsoleteLineFolding) }
        var colon = 0
        while colon < n && line[colon] != 0x3A {
            guard isTokenByte(line[colon]) else { return .badRequest(.invalidHeaderName) }
            colon += 1
        }
        guard colon > 0, colon < n else { return .badRequest(.invalidHeaderName) }
        var start = colon + 1
        var end = n
        while start < end && (line[start] == 0x20 || line[start] == 0x09) { start += 1 }
        while end > start && (line[end - 1] == 0x20 || line[end - 1] == 0x09) { end -= 1 }
        var k = start
        while k < end {
            let b = line[k]
            // field-vchar / SP / HTAB / obs-text; no CTLs (so no bare CR, NUL), no DEL.
            if (b < 0x20 && b != 0x09) || b == 0x7F { return .badRequest(.invalidHeaderValue) }
            k += 1
        }
        if isTrailer { return nil }  // trailers are validated and discarded
        let name = UnsafeRawBufferPointer(rebasing: line[0..<colon])
        let value = UnsafeRawBufferPointer(rebasing: line[start..<end])
        if let error = inspectSpecialField(name: name, value: value) { return error }
        headers.add(name: makeString(line, 0, colon), value: makeString(line, start, end))
        return nil
    }

    private mutating func inspectSpecialField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> HTTPEngineError? {
        switch name.count {
        case 4 where equalsLowercase(name, "host"):
            hostCount += 1
            if !isValidHostField(value) { hostInvalid = true }
        case 6 where equalsLowercase(name, "expect"):
            if equalsLowercase(value, "100-continue") { expectContinue = true }
        case 10 where equalsLowercase(name, "connection"):
            forEachListElement(value) { element in
                if equalsLowercase(element, "close") { connectionClose = true }
                if equalsLowercase(element, "keep-alive") { connectionKeepAlive = true }
            }
        case 12 where equalsLowercase(name, "x-request-id"):
            if incomingRequestID == nil && isValidRequestID(value) {
                incomingRequestID = String(decoding: value, as: UTF8.self)
            }
        case 14 where equalsLowercase(name, "content-length"):
            var invalid = false
            var sawElement = false
            forEachListElement(value) { element in
                sawElement = true
                guard let n = parseDecimal(element) else {
                    invalid = true
                    return
                }
                if let existing = contentLength, existing != n {
                    invalid = true
                    return
                }
                contentLength = n
            }
            if invalid || !sawElement { return .badRequest(.invalidContentLength) }
        case 17 where equalsLowercase(name, "transfer-encoding"):
            var any = false
            forEachListElement(value) { element in
                any = true
                transferEncodings.append(String(decoding: element, as: UTF8.self))
            }
            if !any { transferEncodings.append("") }
        default:
            break
        }
        return nil
    }

    /// Validates the finished head and decides framing (RFC 9112 §6.3).
    private mutating func finishHead() -> ParserEvent {
        if hostCount > 1 || (hostCount == 0 && version.minor >= 1) || hostInvalid {
            return fail(.badRequest(.invalidHost))
        }
        if !transferEncodings.isEmpty {
            if contentLength != nil || version.minor == 0 {
                return fail(.badRequest(.conflictingFraming))
            }
            // RFC 9112 §6.3: a final coding other than chunked leaves the length unknown
            // (400 and close); §7: chunked must not be applied twice (400). A final chunked
            // after a coding the engine does not implement is 501 (RFC 9112 §6.1).
            let chunkedCount = transferEncodings.reduce(0) { $0 + (asciiCaseInsensitiveEquals($1, "chunked") ? 1 : 0) }
            guard let last = transferEncodings.last, asciiCaseInsensitiveEquals(last, "chunked"), chunkedCount == 1 else {
                return fail(.badRequest(.invalidTransferEncoding))
            }
            guard transferEncodings.count == 1 else {
                return fail(.unsupportedTransferCoding)
            }
            framing = .chunked
        } else if let length = contentLength, length > 0 {
            framing = .length(length)
        } else {
            framing = .none
        }
        let keepAlive = version.minor >= 1 ? !connectionClose : (connectionKeepAlive && !connectionClose)
        let parsed = ParsedHead(
            head: HTTPRequestHead(
                method: method, target: target, path: path, query: query,
                version: version, headers: headers),
            framing: framing,
            keepAlive: keepAlive,
            http10KeepAlive: version.minor == 0 && keepAlive,
            expectContinue: expectContinue,
            incomingRequestID: incomingRequestID,
            isHead: method == "HEAD")
        if framing == .none {
            resetForNextRequest()
        } else {
            state = .awaitingBody
            headers = HTTPHeaders()
        }
        return .head(parsed)
    }

    // MARK: - Chunked (RFC 9112 §7.1)

    private mutating func parseChunkSize(_ line: UnsafeRawBufferPointer) -> ParserEvent? {
        var size = 0
        var i = 0
        let n = line.count
        while i < n, let digit = hexValue(line[i]) {
            if size > (Int.max >> 4) { return fail(.badRequest(.invalidChunk)) }
            size = (size << 4) | digit
            i += 1
        }
        guard i > 0 else { return fail(.badRequest(.invalidChunk)) }
        // Optional extensions: BWS ";" ... — ignored, but no control bytes.
        var j = i
        while j < n && (line[j] == 0x20 || line[j] == 0x09) { j += 1 }
        if j < n {
            guard line[j] == 0x3B else { return fail(.badRequest(.invalidChunk)) }
            while j < n {
                let b = line[j]
                if (b < 0x20 && b != 0x09) || b == 0x7F { return fail(.badRequest(.invalidChunk)) }
                j += 1
            }
        }
        if size == 0 {
            state = .trailers
            headerBytes = 0
            return nil
        }
        if size > bodyLimit - body.count { return fail(.contentTooLarge) }
        state = .chunkData(remaining: size)
        return nil
    }
}

// MARK: - Byte helpers

/// RFC 9110 §5.6.2 tchar.
@inline(__always)
func isTokenByte(_ b: UInt8) -> Bool {
    // tchar (RFC 9110 §5.6.2): DIGIT, ALPHA and !#$%&'*+-.^_`|~ — one bit per byte value
    // below 128 (bit b of the low word for 0…63, bit b − 64 of the high word for 64…127).
    if b < 64 { return (0x03ff_6cfa_0000_0000 as UInt64) >> UInt64(b) & 1 == 1 }
    if b < 128 { return (0x57ff_ffff_c7ff_fffe as UInt64) >> UInt64(b &- 64) & 1 == 1 }
    return false
}

@inline(__always)
private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

@inline(__always)
private func hexValue(_ b: UInt8) -> Int? {
    switch b {
    case 0x30...0x39: Int(b - 0x30)
    case 0x41...0x46: Int(b - 0x41 + 10)
    case 0x61...0x66: Int(b - 0x61 + 10)
    default: nil
    }
}

@inline(__always)
private func makeString(_ line: UnsafeRawBufferPointer, _ from: Int, _ to: Int) -> String {
    String(decoding: UnsafeRawBufferPointer(rebasing: line[from..<to]), as: UTF8.self)
}

/// Compares bytes with an all-lowercase ASCII literal, ignoring ASCII case.
@inline(__always)
private func equalsLowercase(_ bytes: UnsafeRawBufferPointer, _ lower: StaticString) -> Bool {
    guard bytes.count == lower.utf8CodeUnitCount else { return false }
    let l = lower.utf8Start
    for i in 0..<bytes.count {
        var b = bytes[i]
        if b >= 0x41 && b <= 0x5A { b |= 0x20 }
        if b != l[i] { return false }
    }
    return true
}

/// Calls `body` with each comma-separated element of `value`, trimmed of SP/HTAB, skipping empty ones.
@inline(__always)
private func forEachListElement(_ value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
    var start = 0
    let n = value.count
    while start <= n {
        var end = start
        while end < n && value[end] != 0x2C { end += 1 }
        var s = start
        var e = end
        while s < e && (value[s] == 0x20 || value[s] == 0x09) { s += 1 }
        while e > s && (value[e - 1] == 0x20 || value[e - 1] == 0x09) { e -= 1 }
        if e > s { body(UnsafeRawBufferPointer(rebasing: value[s..<e])) }
        start = end + 1
    }
}

/// `1*DIGIT` as a non-negative Int; nil when empty, non-digit, or overflowing.
private func parseDecimal(_ bytes: UnsafeRawBufferPointer) -> Int? {
    guard !bytes.isEmpty else { return nil }
    var n = 0
    for b in bytes {
        guard isDigit(b) else { return nil }
        let (m, o1) = n.multipliedReportingOverflow(by: 10)
        let (s, o2) = m.addingReportingOverflow(Int(b - 0x30))
        if o1 || o2 { return nil }
        n = s
    }
    return n
}

/// A `Host` field value or absolute-form authority: `uri-host [":" port]` (RFC 9112 §3.2,
/// RFC 3986 §3.2.2): an IP-literal in brackets, or a reg-name / IPv4address (unreserved,
/// pct-encoded, sub-delims), then optionally ":" and digits. Empty is valid (a reg-name may
/// be empty, RFC 9112 §3.2).
func isValidHostField(_ value: UnsafeRawBufferPointer) -> Bool {
    let n = value.count
    var i = 0
    if n > 0 && value[0] == 0x5B {
        // IP-literal: "[" IPv6address / IPvFuture "]" — checked as its character set.
        i = 1
        while i < n && value[i] != 0x5D {
            let b = value[i]
            guard isUnreservedByte(b) || isSubDelimByte(b) || b == 0x3A else { return false }
            i += 1
        }
        guard i < n, i > 1 else { return false }
        i += 1
    } else {
        while i < n && value[i] != 0x3A {
            let b = value[i]
            if b == 0x25 {
                guard i + 2 < n, hexValue(value[i + 1]) != nil, hexValue(value[i + 2]) != nil else { return false }
                i += 3
                continue
            }
            guard isUnreservedByte(b) || isSubDelimByte(b) else { return false }
            i += 1
        }
    }
    guard i < n else { return true }
    guard value[i] == 0x3A else { return false }
    i += 1
    while i < n {
        guard isDigit(value[i]) else { return false }
        i += 1
    }
    return true
}

/// RFC 3986 §2.3 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~".
@inline(__always)
private func isUnreservedByte(_ b: UInt8) -> Bool {
    switch b {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: true
    default: false
    }
}

/// RFC 3986 §2.2 sub-delims: "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "=".
@inline(__always)
private func isSubDelimByte(_ b: UInt8) -> Bool {
    switch b {
    case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: true
    default: false
    }
}

/// 1–64 bytes of `[A-Za-z0-9._-]`.
func isValidRequestID(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard bytes.count >= 1 && bytes.count <= 64 else { return false }
    for b in bytes {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2E, 0x5F, 0x2D: continue
        default: return false
        }
    }
    return true
}
