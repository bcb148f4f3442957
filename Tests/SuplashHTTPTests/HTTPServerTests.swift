import Foundation
import SuplashHTTP
import SuplashLogging
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

final class HTTPServerTests: XCTestCase {
    private var server: HTTPServer?
    private var responder = TestResponder()
    private var port = 0

    override func setUp() {
        super.setUp()
        signal(SIGPIPE, SIG_IGN)
    }

    override func tearDown() {
        server?.shutdown(gracePeriod: 0.5)
        server = nil
        super.tearDown()
    }

    /// Starts a server on 127.0.0.1:0 with `adjust` applied to the configuration.
    @discardableResult
    private func startServer(_ adjust: (inout HTTPServerConfiguration) -> Void = { _ in }) throws -> Int {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, loopCount: 2)
        adjust(&configuration)
        let server = HTTPServer(configuration: configuration, responder: responder, logger: Logger(minimumLevel: .error))
        port = try server.start()
        self.server = server
        XCTAssertGreaterThan(port, 0)
        return port
    }

    private func client(timeout: Double = 5) throws -> RawClient {
        try RawClient(port: port, receiveTimeout: timeout)
    }

    // MARK: Basics

    func testKeepAliveManyRequestsOnOneConnection() throws {
        try startServer()
        let c = try client()
        for i in 0..<50 {
            c.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Request-ID: req-\(i)\r\n\r\n")
            let r = try XCTUnwrap(c.readResponse(), "request \(i)")
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.bodyText, "hello")
            XCTAssertEqual(r.header("x-request-id"), "req-\(i)")
            XCTAssertNil(r.header("connection"))
            XCTAssertEqual(r.header("content-length"), "5")
            XCTAssertEqual(r.header("content-type"), "text/plain")
            XCTAssertNotNil(r.header("date"))
        }
    }

    func testDateHeaderIsIMFFixdateAndRequestIDIsGenerated() throws {
        try startServer()
        let c = try client()
        c.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Request-ID: bad id!\r\n\r\n")
        let r = try XCTUnwrap(c.readResponse())
        let id = try XCTUnwrap(r.header("x-request-id"))
        XCTAssertNotEqual(id, "bad id!")
        XCTAssertTrue((1...64).contains(id.count))
        XCTAssertTrue(id.allSatisfy { $0.isLetter || $0.isNumber || "._-".contains($0) })
        let date = try XCTUnwrap(r.header("date"))
        XCTAssertNotNil(date.range(of: #"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$"#, options: .regularExpression), date)
    }

    func testPipelinedResponsesComeBackInRequestOrder() throws {
        try startServer()
        let c = try client()
        // The first answer is the slowest; answers must still come back in order.
        c.send(
            "GET /delay/300 HTTP/1.1\r\nHost: x\r\nX-Request-ID: one\r\n\r\n"
                + "GET /no-such HTTP/1.1\r\nHost: x\r\nX-Request-ID: two\r\n\r\n"
                + "GET /delay/50 HTTP/1.1\r\nHost: x\r\nX-Request-ID: three\r\n\r\n"
                + "GET /hello HTTP/1.1\r\nHost: x\r\nX-Request-ID: four\r\nConnection: close\r\n\r\n")
        let out = String(decoding: c.readUntilClose(), as: UTF8.self)
        XCTAssertTrue(c.sawEOF)
        // Bodies are not CRLF-terminated, so split on the status-line prefix itself.
        let statuses = out.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
        XCTAssertEqual(statuses, ["200", "404", "200", "200"])
        let ids = out.components(separatedBy: "\r\n").filter { $0.lowercased().hasPrefix("x-request-id:") }
        XCTAssertEqual(ids, ["X-Request-ID: one", "X-Request-ID: two", "X-Request-ID: three", "X-Request-ID: four"])
        XCTAssertEqual(out.components(separatedBy: "Connection: close").count, 2, "only the last answer closes")
    }

    func testPipelineBackPressureStillAnswersEverything() throws {
        try startServer { $0.maxPipelined = 2 }
        let c = try client()
        var request = ""
        for i in 0..<20 { request += "GET /delay/\(i % 3) HTTP/1.1\r\nHost: x\r\nX-Request-ID: r\(i)\r\n\r\n" }
        c.send(request)
        for i in 0..<20 {
            let r = try XCTUnwrap(c.readResponse(), "response \(i)")
            XCTAssertEqual(r.header("x-request-id"), "r\(i)")
            XCTAssertEqual(r.bodyText, "\(i % 3)")
        }
    }

    func testClientThatDoesNotReadStopsBeingRead() throws {
        // Pipelined requests whose answers the client never reads must not pile up in the
        // server's memory: past a bounded backlog of unsent bytes the connection stops reading.
        try startServer()
        let c = try client(timeout: 10)
        let count = 16
        c.send(String(repeating: "GET /big HTTP/1.1\r\nHost: x\r\n\r\n", count: count))
        usleep(300_000)
        XCTAssertLessThanOrEqual(responder.bigAnswered, 6, "requests were read although their answers cannot be sent")
        for i in 0..<count {
            let r = try XCTUnwrap(c.readResponse(), "response \(i)")
            XCTAssertEqual(r.body.count, 3 << 20)
        }
        XCTAssertEqual(responder.bigAnswered, count)
    }

    func testRequestsOfAClientThatDoesNotReadDoNotStartPastTheBudget() throws {
        // Answers produced off the loop: without the budget all 16 would start at once and
        // their 48 MiB would wait in memory for a client that does not read. Once the
        // connection has seen a 3 MiB answer, a running request counts that much.
        try startServer()
        let c = try client(timeout: 10)
        c.send("GET /big-later HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.body.count, 3 << 20)
        let count = 16
        c.send(String(repeating: "GET /big-later HTTP/1.1\r\nHost: x\r\n\r\n", count: count))
        usleep(500_000)
        // Up to what the kernel's socket buffers take, plus one in flight — not all 16.
        XCTAssertLessThanOrEqual(responder.bigAnswered, 1 + 5, "requests started although the answers before them are not taken")
        for i in 0..<count {
            let r = try XCTUnwrap(c.readResponse(), "response \(i)")
            XCTAssertEqual(r.body.count, 3 << 20)
        }
        XCTAssertEqual(responder.bigAnswered, 1 + count)
    }

    func testFileBodyArrivesComplete() throws {
        try startServer()
        let c = try client(timeout: 10)
        c.send("GET /export HTTP/1.1\r\nHost: x\r\n\r\nGET /export HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in 0..<2 {
            let r = try XCTUnwrap(c.readResponse())
            XCTAssertEqual(r.body.count, 5 << 20)
            XCTAssertTrue(r.body.allSatisfy { $0 == 0x62 })
        }
        XCTAssertEqual(c.readResponse()?.bodyText, "hello")
    }

    func testHTTP10ClosesAfterTheResponse() throws {
        try startServer()
        let c = try client()
        c.send("GET /hello HTTP/1.0\r\n\r\n")
        let out = String(decoding: c.readUntilClose(), as: UTF8.self)
        XCTAssertTrue(c.sawEOF, "HTTP/1.0 without keep-alive must be closed")
        XCTAssertTrue(out.hasPrefix("HTTP/1.1 200 OK\r\n"), out)
        XCTAssertTrue(out.contains("Connection: close\r\n"))
        XCTAssertTrue(out.hasSuffix("\r\n\r\nhello"))
    }

    func testHTTP10KeepAlive() throws {
        try startServer()
        let c = try client()
        for _ in 0..<3 {
            c.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let r = try XCTUnwrap(c.readResponse())
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.header("connection"), "keep-alive")
        }
    }

    func testHeadHasHeadersButNoBody() throws {
        try startServer()
        let c = try client()
        c.send("HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try XCTUnwrap(c.readResponse(head: true))
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("content-length"), "5")
        let get = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(get.bodyText, "hello", "the HEAD answer carried no body bytes")
    }

    func testLargeResponseToASlowReaderArrivesComplete() throws {
        try startServer()
        let c = try client()
        c.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(200_000)  // let the server fill the socket buffers and wait for EPOLLOUT
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.body.count, 3 << 20)
        XCTAssertTrue(r.body.enumerated().allSatisfy { $0.element == UInt8(truncatingIfNeeded: $0.offset % 251) })
        XCTAssertEqual(c.readResponse()?.bodyText, "hello")
    }

    func testASecondSendIsIgnored() throws {
        try startServer()
        let c = try client()
        c.send("GET /twice HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.bodyText, "first")
        XCTAssertEqual(c.readResponse()?.bodyText, "hello")
    }

    func testResponderConnectionCloseClosesTheConnection() throws {
        try startServer()
        let c = try client()
        c.send("GET /close HTTP/1.1\r\nHost: x\r\n\r\n")
        let out = String(decoding: c.readUntilClose(), as: UTF8.self)
        XCTAssertTrue(c.sawEOF)
        XCTAssertTrue(out.contains("Connection: close\r\n"))
        XCTAssertTrue(out.hasSuffix("bye"))
    }

    // MARK: Bodies

    func testContentLengthAndChunkedPosts() throws {
        try startServer()
        let c = try client()
        c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world")
        var r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.bodyText, "hello world")
        XCTAssertEqual(r.header("x-method"), "POST")
        XCTAssertEqual(r.header("x-remote"), "127.0.0.1")
        let body = "{\"amountMl\": 250}"
        c.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + String(body.utf8.count, radix: 16) + ";ext=1\r\n" + body + "\r\n0\r\nX-Trailer: t\r\n\r\n")
        r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.bodyText, body)
        // The same, one byte per write.
        let slow = Array(("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").utf8)
        for byte in slow { c.send([byte]) }
        r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.bodyText, "abcde")
    }

    func testExpectContinue() throws {
        try startServer()
        let c = try client()
        c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        let interim = try XCTUnwrap(c.readExactly(25))
        XCTAssertEqual(String(decoding: interim, as: UTF8.self), "HTTP/1.1 100 Continue\r\n\r\n")
        c.send("ping")
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.bodyText, "ping")
    }

    func testExpectContinueOverTheLimitGets413Directly() throws {
        try startServer()
        let c = try client()
        c.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 413)
        XCTAssertEqual(r.header("connection"), "close")
        XCTAssertTrue(c.waitForClose())
    }

    func testOversizedBodyIs413EvenAfterTheWholeBodyWasSent() throws {
        try startServer()
        let c = try client(timeout: 10)
        // Like Python's http.client: the whole body is sent before the answer is read.
        let body = [UInt8](repeating: 0x78, count: (1 << 20) + 100)
        XCTAssertTrue(c.send(Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body))
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 413)
        XCTAssertEqual(r.header("content-type"), "application/problem+json")
        XCTAssertTrue(r.bodyText.contains("\"status\":413"), r.bodyText)
        XCTAssertEqual(r.header("connection"), "close")
    }

    func testChunkedBodyOverTheLimitIs413() throws {
        try startServer()
        let c = try client()
        c.send("POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n")
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 413)
    }

    // MARK: Errors

    func testOversizedRequestLineAndHeadersAre414And431() throws {
        try startServer()
        var c = try client()
        c.send("GET /hello?" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n")
        var r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 414)
        XCTAssertEqual(r.header("connection"), "close")
        XCTAssertEqual(r.bodyText, "{\"type\":\"about:blank\",\"title\":\"URI Too Long\",\"status\":414,\"code\":\"uri_too_long\"}")
        XCTAssertTrue(c.waitForClose())

        c = try client()
        c.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 17000) + "\r\n\r\n")
        r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 431)
        XCTAssertNotNil(r.header("x-request-id"))
        XCTAssertTrue(c.waitForClose())
    }

    func testGarbageGets400() throws {
        try startServer()
        let c = try client()
        c.send("HELLO\r\n\r\n")
        let out = String(decoding: c.readUntilClose(), as: UTF8.self)
        XCTAssertTrue(out.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), out)
        XCTAssertTrue(out.contains("application/problem+json"))
    }

    func testSmuggledRequestAfterAmbiguousFramingIsNeverAnswered() throws {
        try startServer()
        let c = try client()
        c.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                + "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        let out = String(decoding: c.readUntilClose(), as: UTF8.self)
        XCTAssertTrue(out.hasPrefix("HTTP/1.1 400"), out)
        XCTAssertEqual(out.components(separatedBy: "HTTP/1.1 ").count - 1, 1, out)
    }

    func testUnsupportedTransferCodingBeforeChunkedIs501() throws {
        try startServer()
        let c = try client()
        c.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 501)
    }

    func testFinalCodingOtherThanChunkedIs400AndCloses() throws {
        try startServer()
        for te in [
            "Transfer-Encoding: chunked, identity", "Transfer-Encoding: xchunked",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity", "Transfer-Encoding: chunked, chunked",
        ] {
            let c = try client()
            c.send("POST /echo HTTP/1.1\r\nHost: x\r\n\(te)\r\n\r\n0\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            let out = String(decoding: c.readUntilClose(), as: UTF8.self)
            XCTAssertTrue(out.hasPrefix("HTTP/1.1 400 "), "\(te): \(out)")
            XCTAssertTrue(out.contains("Connection: close\r\n"), out)
            XCTAssertEqual(out.components(separatedBy: "HTTP/1.1 ").count - 1, 1, "only one answer: \(out)")
        }
        let c = try client()
        c.send("POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        XCTAssertTrue(String(decoding: c.readUntilClose(), as: UTF8.self).hasPrefix("HTTP/1.1 400 "))
    }

    func testAbsoluteFormTargetIsAnswered() throws {
        try startServer()
        let c = try client()
        c.send("GET http://api.test/hello HTTP/1.1\r\nHost: api.test\r\n\r\nGET https://other:8443/echo?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.bodyText, "hello")
        let second = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(second.status, 200)
        XCTAssertEqual(second.header("X-Method"), "GET")
    }

    func testMissingRepeatedOrInvalidHostIs400() throws {
        try startServer()
        for host in ["", "Host: a b/c@d\r\n", "Host: a\r\nHost: a\r\n"] {
            let c = try client()
            c.send("GET /hello HTTP/1.1\r\n\(host)\r\n")
            let out = String(decoding: c.readUntilClose(), as: UTF8.self)
            XCTAssertTrue(out.hasPrefix("HTTP/1.1 400 "), "\(host.debugDescription): \(out)")
        }
        let c = try client()
        c.send("GET /hello HTTP/1.0\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.status, 200, "HTTP/1.0 may omit Host")
    }

    func testErrorAfterGoodPipelinedRequestKeepsOrder() throws {
        try startServer()
        let c = try client()
        c.send("GET /delay/100 HTTP/1.1\r\nHost: x\r\n\r\nGET /x HTTP/1.1\r\nHost : x\r\n\r\n")
        let first = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(first.status, 200)
        let second = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(second.status, 400)
        XCTAssertTrue(c.waitForClose())
    }

    func testCustomErrorResponse() throws {
        try startServer { configuration in
            configuration.errorResponse = { error, requestID in
                HTTPResponse(status: error.status, headers: ["X-Custom": requestID], body: Array(error.code.utf8))
            }
        }
        let c = try client()
        c.send("GET / HTTP/1.1\r\nX-Request-ID: abc\r\n\r\n")  // no Host
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.header("x-custom"), "abc")
        XCTAssertEqual(r.header("x-request-id"), "abc")
        XCTAssertEqual(r.bodyText, "bad_request")
    }

    // MARK: Timers

    func testSlowHeadersGet408() throws {
        try startServer { $0.headerReadTimeout = 0.3 }
        let c = try client()
        c.send("GET /hello HTTP/1.1\r\nHost: x\r\n")
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 408)
        XCTAssertEqual(r.header("connection"), "close")
        XCTAssertTrue(c.waitForClose())
    }

    func testSilentConnectionGets408FromAccept() throws {
        try startServer { $0.headerReadTimeout = 0.3 }
        let c = try client()
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 408)
    }

    func testIdleKeepAliveConnectionIsClosedSilently() throws {
        try startServer { $0.keepAliveIdleTimeout = 0.3 }
        let c = try client()
        c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.status, 200)
        let rest = c.readUntilClose()
        XCTAssertTrue(c.sawEOF)
        XCTAssertEqual(rest, [], "idle close sends nothing")
    }

    func testScheduledTimersRunAndCanBeCancelled() throws {
        try startServer()
        let loop = try XCTUnwrap(server?.eventLoops.first)
        let fired = expectation(description: "timer fired")
        let cancelledFired = expectation(description: "cancelled timer must not fire")
        cancelledFired.isInverted = true
        let id = loop.schedule(after: 0.05) { cancelledFired.fulfill() }
        loop.cancel(id)
        loop.schedule(after: 0.02) {
            XCTAssertTrue(loop.inEventLoop)
            fired.fulfill()
        }
        let ran = expectation(description: "task ran")
        loop.execute { ran.fulfill() }
        wait(for: [fired, ran, cancelledFired], timeout: 0.5)
    }

    // MARK: Connections

    func testOnCloseFiresWhenTheClientLeaves() throws {
        try startServer()
        let c = try client()
        c.send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(100_000)
        Glibc.shutdown(c.fd, Int32(SHUT_RDWR))
        let deadline = Date().addingTimeInterval(5)
        while responder.closedNotified == 0 && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(responder.closedNotified, 1)
    }

    // MARK: Half-close (RFC 9112 §9.6)

    /// Polls until the server has no open connection; false after `seconds`.
    private func waitForNoOpenConnections(_ seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while (server?.openConnections ?? 0) > 0 && Date() < deadline { usleep(10_000) }
        return server?.openConnections == 0
    }

    func testCompleteRequestThenHalfCloseIsAnswered() throws {
        try startServer()
        let c = try client()
        c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        c.shutdownWrite()
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.bodyText, "hello")
        XCTAssertTrue(c.waitForClose(), "the server closes after answering")
        // A 3 MiB answer: the whole body arrives, then EOF.
        let big = try client()
        big.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        big.shutdownWrite()
        let b = try XCTUnwrap(big.readResponse(), "the whole answer arrives after the half-close")
        XCTAssertEqual(b.status, 200)
        XCTAssertEqual(b.body.count, 3 << 20)
        XCTAssertTrue(big.waitForClose())
        XCTAssertTrue(waitForNoOpenConnections())
    }

    func testPipelinedRequestsThenHalfCloseAreAllAnsweredInOrder() throws {
        try startServer()
        let c = try client()
        c.send("GET /delay/100 HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        c.shutdownWrite()
        let first = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.bodyText, "100")
        let second = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(second.status, 200)
        XCTAssertEqual(second.bodyText, "hello")
        XCTAssertTrue(c.waitForClose())
    }

    func testSlowResponderAfterHalfCloseIsAnswered() throws {
        try startServer()
        let c = try client()
        c.send("POST /delay/200 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
        c.shutdownWrite()
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.bodyText, "200")
        XCTAssertEqual(r.header("connection"), "close", "the last answer after EOF announces the close")
        XCTAssertTrue(c.waitForClose())
        XCTAssertTrue(waitForNoOpenConnections())
    }

    func testHTTP10RequestThenHalfCloseIsAnswered() throws {
        try startServer()
        let c = try client()
        c.send("GET /delay/100 HTTP/1.0\r\n\r\n")
        c.shutdownWrite()
        let r = try XCTUnwrap(c.readResponse())
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.bodyText, "100")
        XCTAssertTrue(c.waitForClose())
    }

    func testPartialRequestAtHalfCloseIsDiscarded() throws {
        try startServer()
        let c = try client()
        c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n")
        c.shutdownWrite()
        XCTAssertEqual(c.readResponse()?.status, 200)
        XCTAssertEqual(c.readUntilClose(), [], "the unfinished request gets no answer")
        XCTAssertTrue(c.sawEOF)
        XCTAssertTrue(waitForNoOpenConnections())
    }

    func testParkedRequestThenHalfCloseFiresOnCloseAndCloses() throws {
        try startServer()
        let c = try client()
        c.send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(100_000)
        let start = Date()
        c.shutdownWrite()
        XCTAssertTrue(c.waitForClose(), "a parked long poll does not keep the half-closed connection")
        let deadline = Date().addingTimeInterval(5)
        while responder.closedNotified == 0 && Date() < deadline { usleep(5_000) }
        XCTAssertEqual(responder.closedNotified, 1)
        XCTAssertLessThan(Date().timeIntervalSince(start), 1)
        XCTAssertTrue(waitForNoOpenConnections())
    }

    func testRequestParkedAfterHalfCloseFiresOnCloseAndCloses() throws {
        try startServer()
        let c = try client()
        c.send("GET /park-later HTTP/1.1\r\nHost: x\r\n\r\n")
        c.shutdownWrite()
        let start = Date()
        XCTAssertTrue(c.waitForClose())
        let deadline = Date().addingTimeInterval(5)
        while responder.closedNotified == 0 && Date() < deadline { usleep(5_000) }
        XCTAssertEqual(responder.closedNotified, 1)
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        XCTAssertTrue(waitForNoOpenConnections())
    }

    func testFullCloseWithAnswerPendingFreesTheConnection() throws {
        try startServer()
        var c: RawClient? = try client()
        c?.send("GET /delay/200 HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(50_000)
        c = nil  // close(2): FIN now, a reset once the server writes
        XCTAssertTrue(waitForNoOpenConnections(), "the connection is closed after the answer cannot be delivered")
        // The server still works.
        let d = try client()
        d.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(d.readResponse()?.status, 200)
    }

    func testFullCloseDuringALargeAnswerFreesTheConnection() throws {
        try startServer()
        var c: RawClient? = try client()
        c?.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = c?.readExactly(1024)  // the answer has started and the rest is queued
        c = nil  // unread data: the client's kernel resets; the server's writes fail
        XCTAssertTrue(waitForNoOpenConnections(), "a write to a closed client closes the connection")
        let d = try client()
        d.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(d.readResponse()?.status, 200)
    }

    func testConnectionCapStopsAcceptingUntilAConnectionCloses() throws {
        try startServer { configuration in
            configuration.connectionCap = 2
            configuration.loopCount = 1
        }
        // Two busy connections (parked requests): nothing idle to close at the cap.
        var first: RawClient? = try client()
        let second = try client()
        for c in [first!, second] { c.send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n") }
        // The third connection completes in the kernel backlog but is not served...
        let third = try client(timeout: 0.5)
        third.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNil(third.readResponse(), "served beyond the connection cap")
        // ...until one of the others goes away.
        first = nil
        third.setReceiveTimeout(5)
        XCTAssertEqual(third.readResponse()?.status, 200)
        XCTAssertEqual(server?.openConnections, 2)
    }

    func testAtTheCapTheOldestIdleKeepAliveConnectionMakesRoom() throws {
        try startServer { configuration in
            configuration.connectionCap = 3
            configuration.loopCount = 1
        }
        let oldest = try client()
        oldest.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(oldest.readResponse()?.status, 200)
        usleep(20_000)
        let newer = try client()
        newer.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(newer.readResponse()?.status, 200)
        let busy = try client()
        busy.send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(50_000)
        // At the cap: a new client is served, the oldest idle connection closed for it.
        let fresh = try client()
        fresh.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(fresh.readResponse()?.status, 200, "a new client is served at the cap")
        XCTAssertTrue(oldest.waitForClose(), "the oldest idle keep-alive connection was closed")
        newer.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(newer.readResponse()?.status, 200, "the newer idle connection still works")
        XCTAssertEqual(server?.openConnections, 3)
    }

    func testPerAddressLimitClosesConnectionsPastIt() throws {
        try startServer { configuration in
            configuration.maxConnectionsPerAddress = 2
        }
        let a = try client()
        let b = try client()
        for c in [a, b] {
            c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(c.readResponse()?.status, 200)
        }
        let third = try client()
        third.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNil(third.readResponse(), "a third connection from one address is not served")
        b.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(b.readResponse()?.status, 200, "the admitted connections are unaffected")
    }

    func testAConnectionPastItsAddressLimitEvictsNoIdleConnectionAtTheCap() throws {
        try startServer { configuration in
            configuration.connectionCap = 3
            configuration.maxConnectionsPerAddress = 2
            configuration.loopCount = 1
        }
        let idle = try client()
        idle.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(idle.readResponse()?.status, 200)
        // Another address fills the cap (and its own limit) with busy connections.
        let busy = try (0..<2).map { _ in try RawClient(port: port, source: "127.0.0.2") }
        for c in busy { c.send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n") }
        usleep(50_000)
        let rejected = try RawClient(port: port, source: "127.0.0.2")
        XCTAssertTrue(rejected.waitForClose(), "past its address's limit")
        idle.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(idle.readResponse()?.status, 200, "a rejected connection closes no idle keep-alive one")
    }

    func testAnIPv4ClientOfADualStackListenerHasItsIPv4Address() throws {
        try startServer { configuration in
            configuration.host = "::"
            configuration.maxConnectionsPerAddress = 1
            configuration.unlimitedAddresses = ["127.0.0.1"]
        }
        let clients = try (0..<2).map { _ in try client() }
        for c in clients {
            c.send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
            let r = c.readResponse()
            XCTAssertEqual(r?.status, 200, "an exempt IPv4 address is exempt on an IPv6 listener too")
            XCTAssertEqual(r?.header("x-remote"), "127.0.0.1", "not ::ffff:127.0.0.1")
        }
    }

    func testPerAddressLimitFreesSlotsAndExemptsUnlimitedAddresses() throws {
        try startServer { configuration in
            configuration.maxConnectionsPerAddress = 1
        }
        do {
            let only = try client()
            only.send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            XCTAssertEqual(only.readResponse()?.status, 200)
            XCTAssertTrue(only.waitForClose())
        }
        usleep(50_000)
        let next = try client()
        next.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(next.readResponse()?.status, 200, "a closed connection frees its address's slot")

        server?.shutdown(gracePeriod: 0.5)
        try startServer { configuration in
            configuration.maxConnectionsPerAddress = 1
            configuration.unlimitedAddresses = ["127.0.0.1"]
        }
        let clients = try (0..<5).map { _ in try client() }
        for c in clients {
            c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(c.readResponse()?.status, 200, "a trusted proxy's address has no per-address limit")
        }
    }

    func testManyConnectionsAcrossLoops() throws {
        try startServer { $0.loopCount = 3 }
        var clients: [RawClient] = []
        for _ in 0..<40 { clients.append(try client()) }
        for c in clients { c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n") }
        for c in clients { XCTAssertEqual(c.readResponse()?.status, 200) }
    }

    // MARK: Shutdown

    func testShutdownDrainsAnInFlightRequest() throws {
        try startServer()
        let busy = try client()
        let idle = try client()
        idle.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(idle.readResponse()?.status, 200)
        busy.send("GET /delay/400 HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(100_000)
        let server = try XCTUnwrap(self.server)
        let done = expectation(description: "shutdown returned")
        Thread.detachNewThread {
            server.shutdown(gracePeriod: 5)
            done.fulfill()
        }
        XCTAssertTrue(idle.waitForClose(), "idle keep-alive connections close at once")
        let r = try XCTUnwrap(busy.readResponse())
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.bodyText, "400")
        XCTAssertEqual(r.header("connection"), "close")
        wait(for: [done], timeout: 5)
        XCTAssertThrowsError(try client(), "listeners are closed")
        self.server = nil
    }

    func testRequestArrivingWhileDrainingGets503() throws {
        try startServer { $0.loopCount = 1 }
        let busy = try client()
        let late = try client()
        busy.send("GET /delay/600 HTTP/1.1\r\nHost: x\r\n\r\n")
        late.send("GET /hello HTTP/1.1\r\nHost: x\r\n")  // head started, not finished
        usleep(100_000)
        let server = try XCTUnwrap(self.server)
        let done = expectation(description: "shutdown returned")
        Thread.detachNewThread {
            server.shutdown(gracePeriod: 5)
            done.fulfill()
        }
        usleep(150_000)
        late.send("\r\n")
        let r = try XCTUnwrap(late.readResponse())
        XCTAssertEqual(r.status, 503)
        XCTAssertEqual(r.header("retry-after"), "1")
        XCTAssertEqual(r.header("connection"), "close")
        XCTAssertEqual(busy.readResponse()?.status, 200)
        wait(for: [done], timeout: 5)
        self.server = nil
    }

    func testShutdownGracePeriodEndsLongRequests() throws {
        try startServer()
        let c = try client()
        c.send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(50_000)
        let start = Date()
        server?.shutdown(gracePeriod: 0.3)
        XCTAssertLessThan(Date().timeIntervalSince(start), 4)
        XCTAssertTrue(c.waitForClose())
        XCTAssertEqual(responder.closedNotified, 1)
        server = nil
    }

    func testPortZeroWithSeveralLoopsSharesOnePort() throws {
        try startServer { $0.loopCount = 4 }
        XCTAssertEqual(server?.eventLoops.count, 4)
        let c = try client()
        c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.status, 200)
    }

    func testBlockingPoolRejectsWhenFull() throws {
        let pool = BlockingPool(threads: 1, queueCapacity: 2)
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        XCTAssertTrue(
            pool.submit {
                started.signal()
                gate.wait()
            })
        started.wait()
        XCTAssertTrue(pool.submit {})
        XCTAssertTrue(pool.submit {})
        XCTAssertFalse(pool.submit {}, "queue of 2 is full")
        gate.signal()
        pool.shutdown()
        XCTAssertFalse(pool.submit {}, "no jobs after shutdown")
    }

    func testRaiseOpenFileLimit() {
        let limits = ResourceLimits.raiseOpenFileLimit()
        XCTAssertTrue(limits.soft == limits.hard || limits.hard == -1 || limits.soft > 0)
    }
}
