import Foundation
import XCTest

@testable import SuplashHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// A fake clock and id source: time moves only when a test says so.
private final class FakeEnvironment: ConnectionEnvironment {
    var now: UInt64 = 1_000_000_000
    private var ids = 0
    var bodyLimit = 1 << 20

    func dateLine() -> [UInt8] { Array("Date: Tue, 01 Dec 2026 00:00:00 GMT\r\n".utf8) }
    func makeRequestID() -> String {
        ids += 1
        return "id\(ids)"
    }
    func bodyLimit(for head: HTTPRequestHead) -> Int { bodyLimit }
    func advance(seconds: Double) { now += nanoseconds(seconds) }
}

/// Drives a `ConnectionStateMachine` the way `Connection` does, but with no socket: the
/// "kernel" takes every byte written unless `socketFull` is set.
private struct Harness {
    var machine: ConnectionStateMachine
    let env = FakeEnvironment()
    /// Everything written to the "socket".
    var sent: [UInt8] = []
    var socketFull = false
    /// Requests handed to the responder, in order.
    var dispatched: [(sequence: UInt64, request: HTTPRequest)] = []
    var reading = true
    var armed: [UInt64] = []
    var shutdownWrite = false
    var closed = false
    var abandoned = 0
    var peerFinishedNotified = false

    init(_ adjust: (inout HTTPServerConfiguration) -> Void = { _ in }) {
        var server = HTTPServerConfiguration()
        adjust(&server)
        machine = ConnectionStateMachine(configuration: .init(server), remoteAddress: "192.0.2.1")
        run(machine.start(env))
    }

    mutating func run(_ actions: [ConnectionAction]) {
        for action in actions {
            guard !closed else { return }
            switch action {
            case .dispatch(let request, let sequence):
                dispatched.append((sequence, request))
                run(machine.requestStarted(env))
            case .write: flush()
            case .stopReading: reading = false
            case .resumeReading: reading = true
            case .armTimer(let deadline): armed.append(deadline)
            case .notifyPeerFinished: peerFinishedNotified = true
            case .abandonRequests: abandoned += 1
            case .shutdownWrite: shutdownWrite = true
            case .close: closed = true
            case .rejected: break
            }
        }
    }

    mutating func flush() {
        while !machine.output.isEmpty {
            if socketFull {
                run(machine.writeWouldBlock(env))
                return
            }
            var bytes: [UInt8]
            if let (file, offset) = machine.output.frontFile {
                bytes = [UInt8](repeating: 0, count: file.count - offset)
                let n = bytes.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, $0.count, off_t(offset)) }
                bytes = Array(bytes[0..<max(0, n)])
            } else {
                bytes = machine.output.withFront { a, b in Array(a) + Array(b) }
            }
            sent += bytes
            run(machine.bytesWritten(bytes.count, env))
        }
    }

    mutating func receive(_ text: String) {
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes { run(machine.bytesRead($0, env)) }
    }

    mutating func answer(_ sequence: UInt64, status: Int = 200, body: String = "ok", headers: HTTPHeaders = HTTPHeaders()) {
        run(machine.responseReady(sequence: sequence, response: HTTPResponse(status: status, headers: headers, body: Array(body.utf8)), env))
    }

    mutating func fireTimers() {
        let due = armed.filter { $0 <= env.now }
        armed.removeAll { $0 <= env.now }
        for deadline in due { run(machine.timerFired(deadline: deadline, env)) }
    }

    /// Takes the text written so far.
    mutating func takeSent() -> String {
        defer { sent = [] }
        return String(decoding: sent, as: UTF8.self)
    }
}

/// The status lines in `text` (bodies here never contain "HTTP/1.1 ").
private func statusLines(_ text: String) -> [String] {
    text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { "HTTP/1.1 " + ($0.components(separatedBy: "\r\n").first ?? "") }
}

final class ConnectionStateMachineTests: XCTestCase {
    // MARK: Keep-alive

    func testKeepAliveAnswersRequestsOneAfterAnother() {
        var h = Harness()
        h.receive("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/a"])
        XCTAssertEqual(h.dispatched.first?.request.remoteAddress, "192.0.2.1")
        h.answer(0, body: "first")
        let first = h.takeSent()
        XCTAssertTrue(first.hasPrefix("HTTP/1.1 200 OK\r\n"), first)
        XCTAssertTrue(first.contains("Content-Length: 5\r\n") && first.hasSuffix("\r\n\r\nfirst"), first)
        XCTAssertFalse(first.contains("Connection: close"))
        h.receive("GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        h.answer(1, body: "second")
        XCTAssertTrue(h.takeSent().hasSuffix("second"))
        XCTAssertEqual(h.machine.phase, .open)
        XCTAssertFalse(h.closed)
        XCTAssertTrue(h.reading)
    }

    func testConnectionCloseRequestIsAnsweredThenLingers() {
        var h = Harness()
        h.receive("GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.count, 1, "nothing after Connection: close is read")
        h.answer(0)
        XCTAssertTrue(h.takeSent().contains("Connection: close\r\n"))
        XCTAssertTrue(h.shutdownWrite)
        XCTAssertFalse(h.closed, "lingering until EOF or the linger deadline")
        h.run(h.machine.peerHalfClosed(h.env))
        XCTAssertTrue(h.closed)
    }

    // MARK: Pipelining

    func testPipelinedAnswersAreWrittenInRequestOrder() {
        var h = Harness()
        h.receive("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/1", "/2", "/3"], "safe requests run in parallel")
        h.answer(2, body: "three")
        h.answer(1, body: "two")
        XCTAssertTrue(h.sent.isEmpty, "nothing is written before the first answer")
        h.answer(0, body: "one")
        let text = h.takeSent()
        let one = text.range(of: "one")!.lowerBound
        let two = text.range(of: "two")!.lowerBound
        let three = text.range(of: "three")!.lowerBound
        XCTAssertTrue(one < two && two < three, text)
        XCTAssertEqual(statusLines(text).count, 3)
    }

    func testUnsafeRequestStartsOnlyAfterEveryEarlierRequestIsAnswered() {
        var h = Harness()
        h.receive(
            "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nHEAD /2 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "POST /3 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\na"
                + "GET /4 HTTP/1.1\r\nHost: x\r\n\r\nOPTIONS /5 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/1", "/2"], "the POST waits for both earlier answers")
        h.answer(1)
        XCTAssertEqual(h.dispatched.count, 2, "an answer out of order is not enough")
        h.answer(0)
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/1", "/2", "/3"], "safe requests after the POST wait for it")
        h.answer(2, status: 201)
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/1", "/2", "/3", "/4", "/5"], "then run in parallel")
        h.answer(4)
        h.answer(3)
        XCTAssertEqual(
            statusLines(h.takeSent()),
            ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 201 Created", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK"])
    }

    func testOnceAnswerSizesAreKnownSeveralSafeRequestsStartTogether() {
        var h = Harness()
        h.receive("GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
        h.answer(0, body: "small")
        var actions: [ConnectionAction] = []
        let bytes = Array(String(repeating: "GET /p HTTP/1.1\r\nHost: x\r\n\r\n", count: 4).utf8)
        bytes.withUnsafeBytes { actions = h.machine.bytesRead($0, h.env) }
        let dispatches = actions.filter { if case .dispatch = $0 { true } else { false } }
        XCTAssertEqual(dispatches.count, 4, "small answers: the whole batch starts in one step")
    }

    /// Requests read one at a time behind started ones (answer sizes known, so nothing holds
    /// the next start back) follow the order rule too: the decision made from the counters.
    func testRequestsReadBehindStartedOnesFollowTheOrderRule() {
        var h = Harness()
        h.receive("GET /0 HTTP/1.1\r\nHost: x\r\n\r\n")
        h.answer(0, body: "small")
        h.receive("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/0", "/1"], "nothing earlier is unanswered")
        h.receive("GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.count, 2, "a safe request waits for a running unsafe one")
        h.answer(1, status: 201)
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/0", "/1", "/2"])
        h.receive("HEAD /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.count, 4, "safe behind safe starts at once")
        h.receive("DELETE /4 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.count, 4, "an unsafe request waits for running safe ones")
        h.answer(3)
        XCTAssertEqual(h.dispatched.count, 4, "and for every earlier one")
        h.answer(2)
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/0", "/1", "/2", "/3", "/4"])
        h.answer(4, status: 204, body: "")
        XCTAssertEqual(
            statusLines(h.takeSent()),
            ["HTTP/1.1 200 OK", "HTTP/1.1 201 Created", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 204 No Content"])
    }

    func testEveryUnsafeMethodWaits() {
        for method in ["POST", "PUT", "PATCH", "DELETE", "PROPFIND"] {
            var h = Harness()
            h.receive("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n\(method) /2 HTTP/1.1\r\nHost: x\r\n\r\nDELETE /3 HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(h.dispatched.count, 1, method)
            h.answer(0)
            XCTAssertEqual(h.dispatched.count, 2, method)
            h.answer(1)
            XCTAssertEqual(h.dispatched.count, 3, "an unsafe request after an unsafe one waits too (\(method))")
        }
    }

    func testRequestStartedAfterHalfCloseIsToldThePeerFinished() {
        var h = Harness()
        h.receive("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
        h.run(h.machine.peerHalfClosed(h.env))
        h.peerFinishedNotified = false
        h.answer(0, status: 201)
        XCTAssertEqual(h.dispatched.count, 2)
        XCTAssertTrue(h.peerFinishedNotified, "a long poll started now must not keep a half-closed connection open")
        h.answer(1)
        XCTAssertEqual(statusLines(h.takeSent()).count, 2)
        XCTAssertTrue(h.closed)
    }

    func testPipelineLimitStopsReadingUntilAnswersDrain() {
        var h = Harness { $0.maxPipelined = 2 }
        h.receive(String(repeating: "GET /p HTTP/1.1\r\nHost: x\r\n\r\n", count: 5))
        XCTAssertEqual(h.dispatched.count, 2)
        XCTAssertFalse(h.reading)
        h.answer(0)
        h.answer(1)
        XCTAssertEqual(h.dispatched.count, 4, "buffered requests are parsed once answers drain")
        h.answer(2)
        h.answer(3)
        XCTAssertEqual(h.dispatched.count, 5)
        h.answer(4)
        XCTAssertEqual(statusLines(h.takeSent()).count, 5)
        XCTAssertTrue(h.reading)
    }

    func testClientThatDoesNotReadStopsBeingRead() {
        var h = Harness()
        h.socketFull = true
        let big = String(repeating: "x", count: 300 * 1024)
        h.receive("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        h.answer(0, body: big)
        XCTAssertFalse(h.reading, "over the unsent-bytes limit: no more reading")
        h.receive("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.count, 1)
        h.socketFull = false
        h.run(h.machine.socketWritable(h.env))
        XCTAssertEqual(h.dispatched.count, 2, "the buffered request is parsed once the answer drained")
        XCTAssertFalse(h.reading, "a running request counts as large as the largest answer so far")
        h.answer(1, body: "small")
        XCTAssertTrue(h.reading)
    }

    // MARK: Memory budget

    func testNoRequestStartsWhileOverTheBudget() {
        var h = Harness { $0.connectionMemoryBudget = 1500 }
        h.socketFull = true
        h.receive(
            "POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\na"
                + "GET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.count, 1)
        h.answer(0, status: 201, body: String(repeating: "b", count: 2000))
        XCTAssertGreaterThan(h.machine.queuedBytes, 1500)
        XCTAssertEqual(h.dispatched.count, 1, "the client has not taken the answer: nothing new starts")
        XCTAssertFalse(h.reading)
        h.socketFull = false
        h.run(h.machine.socketWritable(h.env))
        XCTAssertEqual(
            h.dispatched.map(\.request.path), ["/1", "/2"],
            "one at a time: a running request counts as large as the 2000-byte answer")
        h.answer(1)
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/1", "/2", "/3"])
        h.answer(2)
        XCTAssertTrue(h.reading)
    }

    func testRequestBytesCountAgainstTheBudget() {
        var h = Harness { $0.connectionMemoryBudget = 2000 }
        let body = String(repeating: "p", count: 600)
        let post = "POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 600\r\n\r\n" + body
        h.receive("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n" + post + post + post + post)
        XCTAssertFalse(h.reading, "requests read and not answered fill the budget: reading stops")
        XCTAssertLessThan(h.machine.slots.count, 5, "parsing stopped at the budget")
        h.answer(0)
        var answered: UInt64 = 1
        while let next = h.dispatched.last, next.sequence == answered {
            h.answer(answered, status: 201)
            answered += 1
        }
        XCTAssertEqual(h.dispatched.count, 5)
        XCTAssertEqual(statusLines(h.takeSent()).count, 5)
        XCTAssertTrue(h.reading)
    }

    func testBufferedInputLargerThanTheBudgetIsStillParsed() {
        var h = Harness {
            $0.connectionMemoryBudget = 1000
            $0.maxPipelined = 2
        }
        // One read of pipelined requests: what is left after the pipeline limit exceeds the
        // budget on its own.
        h.receive(String(repeating: "GET /p HTTP/1.1\r\nHost: x\r\n\r\n", count: 40))
        XCTAssertFalse(h.reading)
        XCTAssertGreaterThan(h.machine.queuedBytes, 1000)
        var answered: UInt64 = 0
        while answered < UInt64(h.dispatched.count) {
            h.answer(answered)
            answered += 1
        }
        XCTAssertEqual(h.dispatched.count, 40, "every request read is parsed and answered")
        XCTAssertEqual(statusLines(h.takeSent()).count, 40)
        XCTAssertTrue(h.reading)
    }

    func testOneLargeRequestOverTheBudgetStillRuns() {
        var h = Harness { $0.connectionMemoryBudget = 100 }
        h.receive("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n" + String(repeating: "z", count: 500))
        XCTAssertEqual(h.dispatched.count, 1)
        h.answer(0, body: String(repeating: "r", count: 1000))
        XCTAssertTrue(h.takeSent().hasSuffix(String(repeating: "r", count: 1000)))
        XCTAssertTrue(h.reading)
    }

    func testFileBodyIsSentFromTheFileAndHeldOutsideTheBudget() throws {
        var h = Harness { $0.connectionMemoryBudget = 1000 }
        let content = Array(String(repeating: "0123456789", count: 10_000).utf8)
        let file = try HTTPFileBody.temporary(in: NSTemporaryDirectory()) { try $0.write(content) }
        XCTAssertEqual(file.count, 100_000)
        h.socketFull = true
        h.receive("GET /export HTTP/1.1\r\nHost: x\r\n\r\n")
        h.run(h.machine.responseReady(sequence: 0, response: HTTPResponse(status: 200, bodyFile: file), h.env))
        XCTAssertLessThan(h.machine.queuedBytes, 1000, "a file body costs no memory budget")
        XCTAssertTrue(h.reading)
        h.socketFull = false
        h.run(h.machine.socketWritable(h.env))
        let text = h.takeSent()
        XCTAssertTrue(text.contains("Content-Length: 100000\r\n"), text.prefix(300).description)
        XCTAssertTrue(text.hasSuffix("\r\n\r\n" + String(decoding: content, as: UTF8.self)))
    }

    func testHeadAnswerWithAFileBodyHasItsLengthButNoBody() throws {
        var h = Harness()
        let file = try HTTPFileBody.temporary(in: NSTemporaryDirectory()) { try $0.write(Array("abc".utf8)) }
        h.receive("HEAD /export HTTP/1.1\r\nHost: x\r\n\r\n")
        h.run(h.machine.responseReady(sequence: 0, response: HTTPResponse(status: 200, bodyFile: file), h.env))
        let text = h.takeSent()
        XCTAssertTrue(text.contains("Content-Length: 3\r\n") && text.hasSuffix("\r\n\r\n"), text)
    }

    // MARK: Fairness

    func testOnlyAnIdleKeepAliveConnectionCanBeEvicted() {
        var h = Harness()
        XCTAssertFalse(h.machine.isIdleKeepAlive, "a fresh connection has not been kept alive")
        h.receive("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertFalse(h.machine.isIdleKeepAlive, "busy")
        h.run(h.machine.evictIfIdle())
        XCTAssertFalse(h.closed)
        h.env.advance(seconds: 3)
        h.answer(0)
        XCTAssertTrue(h.machine.isIdleKeepAlive)
        XCTAssertEqual(h.machine.idleSince, h.env.now)
        h.receive("GET /next HT")
        XCTAssertFalse(h.machine.isIdleKeepAlive, "a next request has begun")
        h.receive("TP/1.1\r\nHost: x\r\n\r\n")
        h.answer(1)
        h.run(h.machine.evictIfIdle())
        XCTAssertTrue(h.closed)
        XCTAssertTrue(h.sent.count > 0 && statusLines(h.takeSent()).count == 2, "eviction writes nothing")
    }

    func testAddressLimiterCountsPerAddressAndExemptsTrustedOnes() {
        var limiter = AddressLimiter(limit: 2, exempt: ["10.0.0.1"])
        XCTAssertTrue(limiter.admit("192.0.2.7"))
        XCTAssertTrue(limiter.admit("192.0.2.7"))
        XCTAssertFalse(limiter.admit("192.0.2.7"))
        XCTAssertTrue(limiter.admit("192.0.2.8"), "another address has its own count")
        for _ in 0..<10 { XCTAssertTrue(limiter.admit("10.0.0.1")) }
        limiter.release("192.0.2.7")
        XCTAssertTrue(limiter.admit("192.0.2.7"))
        limiter.release("192.0.2.7")
        limiter.release("192.0.2.7")
        limiter.release("192.0.2.8")
        XCTAssertTrue(limiter.counts.isEmpty, "released addresses leave no entry: \(limiter.counts)")
    }

    // MARK: Timeouts (fake clock)

    func testHeaderReadTimeoutAnswers408AndCloses() {
        var h = Harness { $0.headerReadTimeout = 10 }
        h.receive("GET / HT")
        h.env.advance(seconds: 9.9)
        h.fireTimers()
        XCTAssertTrue(h.sent.isEmpty)
        h.env.advance(seconds: 0.2)
        h.fireTimers()
        let text = h.takeSent()
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 408 "), text)
        XCTAssertTrue(text.contains("Connection: close\r\n"))
        XCTAssertTrue(h.shutdownWrite)
    }

    func testHeaderTimerRunsFromAccept() {
        var h = Harness { $0.headerReadTimeout = 10 }
        h.env.advance(seconds: 10)
        h.fireTimers()
        XCTAssertTrue(h.takeSent().hasPrefix("HTTP/1.1 408 "))
    }

    func testIdleKeepAliveConnectionClosesSilentlyAfterTheIdleTimeout() {
        var h = Harness { $0.keepAliveIdleTimeout = 60 }
        h.receive("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        h.answer(0)
        _ = h.takeSent()
        h.env.advance(seconds: 59)
        h.fireTimers()
        XCTAssertFalse(h.closed)
        h.env.advance(seconds: 1)
        h.fireTimers()
        XCTAssertTrue(h.closed)
        XCTAssertTrue(h.sent.isEmpty, "no answer on an idle close")
    }

    func testIdleTimerDoesNotRunWhileAnAnswerIsOutstanding() {
        var h = Harness {
            $0.keepAliveIdleTimeout = 60
            $0.headerReadTimeout = 10
        }
        h.receive("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        h.env.advance(seconds: 600)
        h.fireTimers()
        XCTAssertFalse(h.closed)
        h.answer(0)
        XCTAssertEqual(statusLines(h.takeSent()), ["HTTP/1.1 200 OK"])
    }

    func testABusyKeepAliveConnectionKeepsOneTimerEntry() {
        var h = Harness()
        for i in 0..<100 {
            h.receive("GET /\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            h.env.advance(seconds: 0.01)
            h.answer(UInt64(i))
        }
        XCTAssertEqual(statusLines(h.takeSent()).count, 100)
        XCTAssertLessThanOrEqual(h.armed.count, 2, "a timer entry per request would flood the loop's heap")
        // The header deadline (from accept) fires with nothing due: the idle one is armed next.
        h.env.advance(seconds: 10)
        h.fireTimers()
        XCTAssertFalse(h.closed)
        XCTAssertEqual(h.armed, [h.machine.idleSince + nanoseconds(60)])
    }

    func testStalledWriteClosesAfterTheIdleTimeout() {
        var h = Harness { $0.keepAliveIdleTimeout = 60 }
        h.socketFull = true
        h.receive("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        h.answer(0)
        h.env.advance(seconds: 61)
        h.fireTimers()
        XCTAssertTrue(h.closed)
    }

    // MARK: Half-close

    func testHalfCloseAnswersWhatWasReceivedThenCloses() {
        var h = Harness()
        h.receive("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /partial HT")
        h.run(h.machine.peerHalfClosed(h.env))
        XCTAssertTrue(h.peerFinishedNotified)
        XCTAssertFalse(h.reading, "EOF stays readable: stop asking")
        XCTAssertFalse(h.closed)
        h.answer(1)
        h.answer(0)
        let text = h.takeSent()
        XCTAssertEqual(statusLines(text).count, 2, "the partial request is dropped: \(text)")
        XCTAssertTrue(text.contains("Connection: close\r\n"))
        XCTAssertTrue(h.closed, "after EOF there is nothing to linger for")
        XCTAssertFalse(h.shutdownWrite)
    }

    func testParkedRequestAtHalfCloseClosesAtOnce() {
        var h = Harness()
        h.receive("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
        h.run(h.machine.peerHalfClosed(h.env))
        h.run(h.machine.requestParked(sequence: 0, h.env))
        XCTAssertTrue(h.closed)
    }

    func testParkedRequestAtHalfCloseStillDeliversEarlierAnswers() {
        var h = Harness()
        h.receive("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nGET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
        h.run(h.machine.peerHalfClosed(h.env))
        // The kernel takes nothing yet: the POST's answer is still queued when the long poll
        // it unblocked parks (as in the event loop, where the send comes after the dispatch).
        h.socketFull = true
        h.answer(0, status: 201)
        XCTAssertEqual(h.dispatched.map(\.request.path), ["/1", "/wait"])
        h.run(h.machine.requestParked(sequence: 1, h.env))
        XCTAssertFalse(h.closed, "the answer to the POST is written first")
        XCTAssertEqual(h.abandoned, 1, "the parked request is abandoned (its onClose runs)")
        h.socketFull = false
        h.flush()
        XCTAssertEqual(statusLines(h.takeSent()), ["HTTP/1.1 201 Created"])
        XCTAssertTrue(h.closed)
    }

    func testParkedRequestAtHalfCloseWaitsForAnEarlierRunningRequest() {
        var h = Harness()
        h.receive("GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.count, 2)
        h.run(h.machine.peerHalfClosed(h.env))
        h.run(h.machine.requestParked(sequence: 1, h.env))
        XCTAssertFalse(h.closed, "the request received before the parked one is still answered")
        h.answer(0, body: "slow")
        let text = h.takeSent()
        XCTAssertEqual(statusLines(text), ["HTTP/1.1 200 OK"])
        XCTAssertTrue(text.hasSuffix("slow"))
        XCTAssertTrue(h.closed)
    }

    // MARK: Drain

    func testDrainClosesAnIdleConnectionAtOnce() {
        var h = Harness()
        h.receive("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        h.answer(0)
        h.run(h.machine.drainStarted(h.env))
        XCTAssertTrue(h.closed)
    }

    func testDrainLetsABusyConnectionFinishWithConnectionClose() {
        var h = Harness()
        h.receive("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        h.run(h.machine.drainStarted(h.env))
        XCTAssertFalse(h.closed)
        h.answer(0)
        XCTAssertTrue(h.takeSent().contains("Connection: close\r\n"))
    }

    func testRequestArrivingWhileDrainingGets503() {
        var h = Harness()
        h.receive("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
        h.run(h.machine.drainStarted(h.env))
        h.receive("GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(h.dispatched.count, 1)
        h.answer(0)
        XCTAssertEqual(statusLines(h.takeSent()), ["HTTP/1.1 200 OK", "HTTP/1.1 503 Service Unavailable"])
    }

    // MARK: Errors

    func testMalformedRequestAfterAGoodOneKeepsOrderAndCloses() {
        var h = Harness()
        h.receive("GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET /bad HTTP/1.1\r\nHost : x\r\n\r\n")
        XCTAssertTrue(h.sent.isEmpty)
        h.answer(0)
        XCTAssertEqual(statusLines(h.takeSent()), ["HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request"])
        XCTAssertTrue(h.shutdownWrite)
    }

    func testExpectContinueSendsAnInterimAnswer() {
        var h = Harness()
        h.receive("POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        XCTAssertEqual(h.takeSent(), "HTTP/1.1 100 Continue\r\n\r\n")
        h.receive("hi")
        XCTAssertEqual(h.dispatched.first?.request.body, Array("hi".utf8))
    }

    func testLingeringInputOverTheCapCloses() {
        var h = Harness { $0.lingerMaxBytes = 10 }
        h.receive("BAD\r\n\r\n")
        XCTAssertTrue(h.shutdownWrite)
        h.receive(String(repeating: "z", count: 11))
        XCTAssertTrue(h.closed)
    }
}
