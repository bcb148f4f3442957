import XCTest

@testable import SuplashHTTP

/// What the parser produced for one request.
private enum Outcome {
    case message(ParsedHead, [UInt8])
    case error(HTTPEngineError)

    var error: HTTPEngineError? {
        if case .error(let e) = self { return e }
        return nil
    }

    var head: ParsedHead? {
        if case .message(let h, _) = self { return h }
        return nil
    }

    var body: [UInt8]? {
        if case .message(_, let b) = self { return b }
        return nil
    }
}

/// Feeds `input` to a parser in pieces of `piece` bytes, the way a connection does.
private func parse(
    _ input: [UInt8], piece: Int = .max, bodyLimit: Int = 1 << 20,
    limits: HTTPParserLimits = HTTPParserLimits()
) -> [Outcome] {
    var parser = HTTPRequestParser(limits: limits)
    var outcomes: [Outcome] = []
    var pendingHead: ParsedHead?
    var offset = 0
    while offset < input.count {
        let end = min(input.count, offset + min(piece, input.count - offset))
        var chunk = Array(input[offset..<end])
        offset = end
        var position = 0
        while true {
            let (consumed, event) = chunk.withUnsafeBytes { raw in
                parser.parse(UnsafeRawBufferPointer(rebasing: raw[position...]))
            }
            position += consumed
            guard let event else { break }
            switch event {
            case .head(let head):
                if head.framing == .none {
                    outcomes.append(.message(head, []))
                } else if let error = parser.beginBody(limit: bodyLimit) {
                    outcomes.append(.error(error))
                    return outcomes
                } else {
                    pendingHead = head
                }
            case .body(let body):
                if let head = pendingHead { outcomes.append(.message(head, body)) }
                pendingHead = nil
            case .error(let error):
                outcomes.append(.error(error))
                return outcomes
            }
        }
        chunk.removeAll()
    }
    return outcomes
}

private func parse(
    _ text: String, piece: Int = .max, bodyLimit: Int = 1 << 20,
    limits: HTTPParserLimits = HTTPParserLimits()
) -> [Outcome] {
    parse(Array(text.utf8), piece: piece, bodyLimit: bodyLimit, limits: limits)
}

/// The single error a malformed request produces.
private func errorOf(_ text: String, bodyLimit: Int = 1 << 20, file: StaticString = #filePath, line: UInt = #line) -> HTTPEngineError? {
    let outcomes = parse(text, bodyLimit: bodyLimit)
    // The same input split byte by byte must give the same answer.
    let split = parse(text, piece: 1, bodyLimit: bodyLimit)
    XCTAssertEqual(outcomes.last?.error, split.last?.error, "byte-by-byte differs", file: file, line: line)
    return outcomes.last?.error
}

final class HTTPParserTests: XCTestCase {
    // MARK: Well-formed

    func testSimpleGet() throws {
        let out = parse("GET /v1/users/me?x=1&y=2 HTTP/1.1\r\nHost: example\r\nAccept: */*\r\nX-Empty:\r\n\r\n")
        XCTAssertEqual(out.count, 1)
        let head = try XCTUnwrap(out.first?.head)
        XCTAssertEqual(head.head.method, "GET")
        XCTAssertEqual(head.head.target, "/v1/users/me?x=1&y=2")
        XCTAssertEqual(head.head.path, "/v1/users/me")
        XCTAssertEqual(head.head.query, "x=1&y=2")
        XCTAssertEqual(head.head.version, .http1_1)
        XCTAssertEqual(head.head.headers.first(name: "host"), "example")
        XCTAssertEqual(head.head.headers.first(name: "ACCEPT"), "*/*")
        XCTAssertEqual(head.head.headers.first(name: "x-empty"), "")
        XCTAssertEqual(head.framing, .none)
        XCTAssertTrue(head.keepAlive)
        XCTAssertFalse(head.expectContinue)
        XCTAssertNil(head.incomingRequestID)
        XCTAssertEqual(out.first?.body, [])
    }

    func testValueWhitespaceIsTrimmedAndObsTextAllowed() throws {
        let out = parse("GET / HTTP/1.1\r\nHost: x\r\nX-A: \t value with  spaces \t\r\nX-B: caf\u{e9}\r\n\r\n")
        let head = try XCTUnwrap(out.first?.head)
        XCTAssertEqual(head.head.headers.first(name: "x-a"), "value with  spaces")
        XCTAssertEqual(head.head.headers.first(name: "x-b"), "caf\u{e9}")
        XCTAssertNil(head.head.query)
    }

    func testEmptyQueryAndLeadingEmptyLines() throws {
        let out = parse("\r\n\r\nGET /a? HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try XCTUnwrap(out.first?.head)
        XCTAssertEqual(head.head.path, "/a")
        XCTAssertEqual(head.head.query, "")
    }

    func testContentLengthBody() throws {
        let out = parse("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertEqual(out.count, 1)
        XCTAssertEqual(out.first?.head?.framing, .length(5))
        XCTAssertEqual(out.first?.body, Array("hello".utf8))
    }

    func testContentLengthZeroMeansNoBody() throws {
        let out = parse("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(out.count, 2)
        XCTAssertEqual(out[0].body, [])
        XCTAssertEqual(out[1].head?.head.method, "GET")
    }

    func testIdenticalDuplicateContentLengthsAreAccepted() throws {
        var out = parse("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc")
        XCTAssertEqual(out.first?.body, Array("abc".utf8))
        out = parse("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc")
        XCTAssertEqual(out.first?.body, Array("abc".utf8))
    }

    func testManyRequestsInOneBuffer() throws {
        let text =
            "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
            + "POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
            + "POST /3 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
            + "HEAD /4 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let out = parse(text)
        XCTAssertEqual(out.count, 4)
        XCTAssertEqual(out.map { $0.head?.head.path }, ["/1", "/2", "/3", "/4"])
        XCTAssertEqual(out[1].body, Array("abc".utf8))
        XCTAssertEqual(out[2].body, Array("hi".utf8))
        XCTAssertEqual(out[3].head?.isHead, true)
        XCTAssertEqual(out[3].head?.keepAlive, false)
    }

    func testSplitByteByByteGivesTheSameResult() throws {
        let text =
            "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nX-Request-ID: abc-123\r\n\r\nhello world"
            + "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\nA\r\n0123456789\r\n0\r\nTrailer-A: 1\r\nTrailer-B: 2\r\n\r\n"
            + "GET /c HTTP/1.1\r\nHost: x\r\n\r\n"
        let whole = parse(text)
        for piece in [1, 2, 3, 7, 16] {
            let split = parse(text, piece: piece)
            XCTAssertEqual(split.count, 3, "piece \(piece)")
            XCTAssertEqual(split.map { $0.head?.head.path }, whole.map { $0.head?.head.path })
            XCTAssertEqual(split.map { $0.body }, whole.map { $0.body })
        }
        XCTAssertEqual(whole[0].body, Array("hello world".utf8))
        XCTAssertEqual(whole[0].head?.incomingRequestID, "abc-123")
        XCTAssertEqual(whole[1].body, Array("hello0123456789".utf8))
        XCTAssertNil(whole[1].head?.head.headers.first(name: "trailer-a"), "trailers are discarded")
    }

    func testChunkedWithExtensionsAndTrailers() throws {
        let out = parse(
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n"
                + "3 ;ext\r\nabc\r\n1;a=\"q\";b\r\nd\r\n0;last\r\nX-Trailer: yes\r\n\r\n")
        XCTAssertEqual(out.first?.head?.framing, .chunked)
        XCTAssertEqual(out.first?.body, Array("abcd".utf8))
    }

    func testKeepAliveRules() throws {
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n").first?.head?.keepAlive, false)
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: te, close\r\n\r\n").first?.head?.keepAlive, false)
        XCTAssertEqual(parse("GET / HTTP/1.0\r\n\r\n").first?.head?.keepAlive, false)
        let keep = parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").first?.head
        XCTAssertEqual(keep?.keepAlive, true)
        XCTAssertEqual(keep?.http10KeepAlive, true)
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n").first?.head?.http10KeepAlive, false)
    }

    func testExpectContinueAndRequestID() throws {
        let head = parse("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\na").first?.head
        XCTAssertEqual(head?.expectContinue, true)
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: x\r\nX-Request-ID: A.b_c-9\r\n\r\n").first?.head?.incomingRequestID, "A.b_c-9")
        let long = String(repeating: "a", count: 65)
        XCTAssertNil(parse("GET / HTTP/1.1\r\nHost: x\r\nX-Request-ID: \(long)\r\n\r\n").first?.head?.incomingRequestID)
        XCTAssertNil(parse("GET / HTTP/1.1\r\nHost: x\r\nX-Request-ID: a b\r\n\r\n").first?.head?.incomingRequestID)
        XCTAssertNil(parse("GET / HTTP/1.1\r\nHost: x\r\nX-Request-ID: <script>\r\n\r\n").first?.head?.incomingRequestID)
        XCTAssertEqual(
            parse("GET / HTTP/1.1\r\nHost: x\r\nX-Request-ID: \(String(repeating: "z", count: 64))\r\n\r\n")
                .first?.head?.incomingRequestID?.count, 64)
    }

    func testHTTP10WithoutHostIsFine() throws {
        XCTAssertNotNil(parse("GET / HTTP/1.0\r\n\r\n").first?.head)
    }

    // MARK: Malformed request lines

    func testGarbageIs400() {
        XCTAssertEqual(errorOf("HELLO\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET /\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET  / HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET / HTTP/1.1 \r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("G@T / HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET * HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET http:/x/ HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET http:///p HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET http://u@x/ HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET http://x:8a/ HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET /a#frag HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET /\u{7f} HTTP/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET / http/1.1\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET / HTTP/1.10\r\nHost: x\r\n\r\n"), .badRequest(.invalidRequestLine))
        XCTAssertEqual(errorOf("GET / HTTP/2.0\r\nHost: x\r\n\r\n"), .badRequest(.unsupportedVersion))
    }

    func testBareLineFeedIs400() {
        XCTAssertEqual(errorOf("GET / HTTP/1.1\nHost: x\r\n\r\n"), .badRequest(.bareLineFeed))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\n\r\n"), .badRequest(.bareLineFeed))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\n\n"), .badRequest(.bareLineFeed))
    }

    func testRequestLineLimitIs414() {
        let limits = HTTPParserLimits(maxRequestLine: 64, maxHeaderSection: 1024)
        let ok = "GET /" + String(repeating: "a", count: 64 - 14) + " HTTP/1.1"
        XCTAssertEqual(ok.utf8.count, 64)
        XCTAssertNotNil(parse(ok + "\r\nHost: x\r\n\r\n", limits: limits).first?.head)
        XCTAssertNotNil(parse(ok + "\r\nHost: x\r\n\r\n", piece: 1, limits: limits).first?.head)
        let tooLong = "GET /" + String(repeating: "a", count: 64 - 13) + " HTTP/1.1"
        XCTAssertEqual(parse(tooLong + "\r\nHost: x\r\n\r\n", limits: limits).first?.error, .uriTooLong)
        XCTAssertEqual(parse(tooLong + "\r\nHost: x\r\n\r\n", piece: 1, limits: limits).first?.error, .uriTooLong)
        // Detected before the line ends: no unbounded buffering.
        let endless = "GET /" + String(repeating: "a", count: 500)
        XCTAssertEqual(parse(endless, piece: 10, limits: limits).first?.error, .uriTooLong)
        // The default limit is 8 KiB.
        XCTAssertEqual(errorOf("GET /healthz?" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n"), .uriTooLong)
    }

    func testHeaderSectionLimitIs431() {
        XCTAssertEqual(
            errorOf("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 17000) + "\r\n\r\n"),
            .headerFieldsTooLarge)
        var many = "GET / HTTP/1.1\r\nHost: x\r\n"
        for i in 0..<1000 { many += "X-H\(i): 0123456789\r\n" }
        XCTAssertEqual(errorOf(many + "\r\n"), .headerFieldsTooLarge)
        // Detected while the section is still arriving.
        let endless = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 20000)
        XCTAssertEqual(parse(endless, piece: 100).first?.error, .headerFieldsTooLarge)
        // "Host: x\r\n" (9) + "A: 12345\r\n" (10) + "\r\n" (2) = 21 bytes.
        let text = "GET / HTTP/1.1\r\nHost: x\r\nA: 12345\r\n\r\n"
        XCTAssertNotNil(parse(text, limits: HTTPParserLimits(maxRequestLine: 100, maxHeaderSection: 21)).first?.head)
        XCTAssertEqual(parse(text, limits: HTTPParserLimits(maxRequestLine: 100, maxHeaderSection: 20)).first?.error, .headerFieldsTooLarge)
        XCTAssertEqual(parse(text, piece: 1, limits: HTTPParserLimits(maxRequestLine: 100, maxHeaderSection: 20)).first?.error, .headerFieldsTooLarge)
    }

    // MARK: Malformed fields

    func testFieldNameRules() {
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost : x\r\n\r\n"), .badRequest(.invalidHeaderName))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost\t: x\r\n\r\n"), .badRequest(.invalidHeaderName))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\n: empty\r\n\r\n"), .badRequest(.invalidHeaderName))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n"), .badRequest(.invalidHeaderName))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\nBad(Name): v\r\n\r\n"), .badRequest(.invalidHeaderName))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\nN\u{e9}: v\r\n\r\n"), .badRequest(.invalidHeaderName))
    }

    func testObsFoldIs400() {
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\n\r\n"), .badRequest(.obsoleteLineFolding))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\nX-A: one\r\n\ttwo\r\n\r\n"), .badRequest(.obsoleteLineFolding))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\n Host: x\r\n\r\n"), .badRequest(.obsoleteLineFolding))
    }

    func testInvalidValueBytesAre400() {
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n"), .badRequest(.invalidHeaderValue))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n"), .badRequest(.invalidHeaderValue))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\u{1b}b\r\n\r\n"), .badRequest(.invalidHeaderValue))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\u{7f}b\r\n\r\n"), .badRequest(.invalidHeaderValue))
        XCTAssertNotNil(parse("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\tb\r\n\r\n").first?.head, "HTAB is allowed")
    }

    func testHostRules() {
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\n\r\n"), .badRequest(.invalidHost))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), .badRequest(.invalidHost))
        XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), .badRequest(.invalidHost))
    }

    func testInvalidHostValueIs400() {
        for value in ["a b/c@d", "a b", "x/y", "u@x", "x:80:81", "x:8a", "[::1", "[]", "a%zz", "a%4", "ex\"ample", "x:-1"] {
            XCTAssertEqual(errorOf("GET / HTTP/1.1\r\nHost: \(value)\r\n\r\n"), .badRequest(.invalidHost), "Host: \(value)")
        }
        // HTTP/1.0 may omit Host, but a Host it sends follows the same rules.
        XCTAssertEqual(errorOf("GET / HTTP/1.0\r\nHost: a b\r\n\r\n"), .badRequest(.invalidHost))
    }

    func testValidHostValuesAreAccepted() {
        for value in [
            "x", "api.test", "api.test:8080", "127.0.0.1", "127.0.0.1:1", "[::1]", "[::1]:443",
            "[v1.fe]", "xn--caf-dma.example", "a%41b", "a_b~c", "h:", "",
        ] {
            XCTAssertNotNil(parse("GET / HTTP/1.1\r\nHost: \(value)\r\n\r\n").first?.head, "Host: \(value)")
        }
    }

    func testAbsoluteFormTargetUsesPathAndQuery() throws {
        let head = try XCTUnwrap(parse("GET http://api.test/healthz HTTP/1.1\r\nHost: other\r\n\r\n").first?.head)
        XCTAssertEqual(head.head.path, "/healthz")
        XCTAssertEqual(head.head.target, "/healthz")
        XCTAssertNil(head.head.query)
        let withQuery = try XCTUnwrap(parse("GET HTTPS://api.test:8443/v1/x?a=1&b=/ HTTP/1.1\r\nHost: x\r\n\r\n").first?.head)
        XCTAssertEqual(withQuery.head.path, "/v1/x")
        XCTAssertEqual(withQuery.head.query, "a=1&b=/")
        XCTAssertEqual(withQuery.head.target, "/v1/x?a=1&b=/")
        let emptyPath = try XCTUnwrap(parse("OPTIONS http://[::1]:80 HTTP/1.1\r\nHost: x\r\n\r\n").first?.head)
        XCTAssertEqual(emptyPath.head.path, "/")
        XCTAssertEqual(emptyPath.head.target, "/")
        let emptyPathQuery = try XCTUnwrap(parse("GET http://h?q HTTP/1.1\r\nHost: x\r\n\r\n").first?.head)
        XCTAssertEqual(emptyPathQuery.head.path, "/")
        XCTAssertEqual(emptyPathQuery.head.query, "q")
        // Byte by byte gives the same head.
        XCTAssertEqual(parse("GET http://api.test/healthz HTTP/1.1\r\nHost: x\r\n\r\n", piece: 1).first?.head?.head.path, "/healthz")
    }

    // MARK: Framing (RFC 9112 §6.3)

    func testContentLengthAndTransferEncodingTogetherIs400() {
        XCTAssertEqual(
            errorOf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            .badRequest(.conflictingFraming))
        XCTAssertEqual(
            errorOf("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n"),
            .badRequest(.conflictingFraming))
        XCTAssertEqual(
            errorOf("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            .badRequest(.conflictingFraming))
    }

    func testInvalidContentLengthIs400() {
        for value in ["abc", "+5", "-1", "5a", "0x10", "1.0", "", " ", "5,6", "99999999999999999999999"] {
            XCTAssertEqual(
                errorOf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(value)\r\n\r\n"),
                .badRequest(.invalidContentLength), "Content-Length: \(value)")
        }
        XCTAssertEqual(
            errorOf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
            .badRequest(.invalidContentLength))
    }

    func testUnsupportedTransferCodingBeforeChunkedIs501() {
        XCTAssertEqual(errorOf("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), .unsupportedTransferCoding)
        XCTAssertEqual(
            errorOf("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"),
            .unsupportedTransferCoding)
    }

    func testFinalCodingOtherThanChunkedIs400() {
        let te = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
        for value in ["chunked, identity", "xchunked", "chunkedx", "gzip", "identity", "chunked, chunked", "chunked,gzip"] {
            XCTAssertEqual(errorOf(te + value + "\r\n\r\n"), .badRequest(.invalidTransferEncoding), "Transfer-Encoding: \(value)")
        }
        XCTAssertEqual(errorOf(te + "chunked\r\nTransfer-Encoding: identity\r\n\r\n"), .badRequest(.invalidTransferEncoding))
        XCTAssertEqual(errorOf(te + "chunked\r\nTransfer-Encoding: chunked\r\n\r\n"), .badRequest(.invalidTransferEncoding))
        XCTAssertEqual(errorOf(te + "\r\n\r\n"), .badRequest(.invalidTransferEncoding))
        // Transfer-Encoding in HTTP/1.0 is faulty framing.
        XCTAssertEqual(errorOf("POST / HTTP/1.0\r\nTransfer-Encoding: chunked, identity\r\n\r\n"), .badRequest(.conflictingFraming))
    }

    func testMalformedChunksAre400() {
        let head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        XCTAssertEqual(errorOf(head + "zz\r\nab\r\n0\r\n\r\n"), .badRequest(.invalidChunk))
        XCTAssertEqual(errorOf(head + "\r\n"), .badRequest(.invalidChunk))
        XCTAssertEqual(errorOf(head + "2\nab\r\n0\r\n\r\n"), .badRequest(.bareLineFeed))
        XCTAssertEqual(errorOf(head + "2\r\nab\n0\r\n\r\n"), .badRequest(.bareLineFeed))
        XCTAssertEqual(errorOf(head + "2\r\nabc\r\n0\r\n\r\n"), .badRequest(.invalidChunk))
        XCTAssertEqual(errorOf(head + "2 x\r\nab\r\n0\r\n\r\n"), .badRequest(.invalidChunk))
        XCTAssertEqual(errorOf(head + "0\r\nBad Trailer: x\r\n\r\n"), .badRequest(.invalidHeaderName))
        XCTAssertEqual(errorOf(head + "0\r\nX: a\r\n folded\r\n\r\n"), .badRequest(.obsoleteLineFolding))
        XCTAssertEqual(errorOf(head + "0\r\n\n"), .badRequest(.bareLineFeed))
    }

    func testChunkSizeOverflowIs400() {
        let head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        XCTAssertEqual(errorOf(head + "FFFFFFFFFFFFFFFFF\r\n"), .badRequest(.invalidChunk))
        XCTAssertEqual(errorOf(head + "10000000000000000000000\r\n"), .badRequest(.invalidChunk))
    }

    func testBodyLimit() {
        XCTAssertEqual(errorOf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n", bodyLimit: 10), .contentTooLarge)
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789", bodyLimit: 10).first?.body?.count, 10)
        let head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        XCTAssertEqual(errorOf(head + "6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n", bodyLimit: 10), .contentTooLarge)
        XCTAssertEqual(errorOf(head + "FFFFFFFF\r\n", bodyLimit: 10), .contentTooLarge)
        XCTAssertEqual(parse(head + "5\r\nabcde\r\n5\r\nabcde\r\n0\r\n\r\n", bodyLimit: 10).first?.body?.count, 10)
    }

    func testIdleAndStartedFlags() {
        var parser = HTTPRequestParser()
        XCTAssertTrue(parser.isIdle)
        let bytes = Array("GET / HT".utf8)
        let (consumed, event) = bytes.withUnsafeBytes { parser.parse($0) }
        XCTAssertEqual(consumed, bytes.count)
        XCTAssertNil(event)
        XCTAssertFalse(parser.isIdle)
        let rest = Array("TP/1.1\r\nHost: x\r\n\r\n".utf8)
        let (_, second) = rest.withUnsafeBytes { parser.parse($0) }
        if case .head = second {} else { XCTFail("expected a head") }
        XCTAssertTrue(parser.isIdle)
    }

    func testTokenBytesAreExactlyRFC9110Tchar() {
        let specials = Array("!#$%&'*+-.^_`|~".utf8)
        for value in 0...255 {
            let b = UInt8(value)
            let tchar = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || specials.contains(b)
            XCTAssertEqual(isTokenByte(b), tchar, "byte \(value)")
        }
    }
}
