import Foundation
import SuplashHTTP
import SuplashLogging
import Synchronization
import XCTest

/// Access lines handed to the connection's loop with `HTTPResponseSink.send(_:log:)`: a
/// stuck log never holds up a response, and one connection's lines keep its order.
final class AccessLogTests: XCTestCase {
    /// A sink whose next write can be held until `release()`; keeps the bytes.
    final class HeldSink: LogSink {
        private let state = Mutex<(bytes: [UInt8], holdNext: Bool, blocked: Bool)>(([], false, false))
        private let entered = DispatchSemaphore(value: 0)
        private let gate = DispatchSemaphore(value: 0)

        func write(_ bytes: UnsafeRawBufferPointer) {
            let hold = state.withLock { s -> Bool in
                guard s.holdNext else { return false }
                s.holdNext = false
                s.blocked = true
                return true
            }
            if hold {
                entered.signal()
                gate.wait()
            }
            state.withLock { $0.bytes.append(contentsOf: bytes) }
        }

        func holdNextWrite() { state.withLock { $0.holdNext = true } }
        func waitUntilBlocked() { entered.wait() }
        func release() {
            state.withLock { $0.blocked = false }
            gate.signal()
        }
        var isBlocked: Bool { state.withLock { $0.blocked } }
        var lines: [String] {
            String(decoding: state.withLock { $0.bytes }, as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }

    /// Answers every request from a worker thread and hands its access line to the sink,
    /// as the API layer does.
    final class LoggingResponder: HTTPResponder {
        let pool = BlockingPool(threads: 4, queueCapacity: 256)
        let logger: Logger

        init(logger: Logger) { self.logger = logger }

        func bodyLimit(for head: HTTPRequestHead) -> Int { 1 << 16 }

        func respond(to request: HTTPRequest, sink: HTTPResponseSink) {
            let logger = self.logger
            let delayMs = request.path.hasPrefix("/slow/") ? Int(request.path.dropFirst(6)) ?? 0 : 0
            let accepted = pool.submit {
                if delayMs > 0 { usleep(UInt32(delayMs) * 1000) }
                let line = logger.record(.info, "request", .requestID(request.requestID), .status(200))
                sink.send(HTTPResponse(status: 200, body: Array("ok".utf8)), log: line)
            }
            if !accepted { sink.send(HTTPResponse(status: 503)) }
        }

        deinit { pool.shutdown() }
    }

    private func start(_ responder: LoggingResponder, logger: Logger) throws -> (HTTPServer, Int) {
        signal(SIGPIPE, SIG_IGN)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, loopCount: 2), responder: responder,
            logger: logger)
        return (server, try server.start())
    }

    func testABlockedLogSinkNeverBlocksARequest() throws {
        let sink = HeldSink()
        // Room for a few lines only: most of the access lines below are dropped, and counted.
        let writer = LogWriter(sink: sink, bufferCapacity: 256, dropWarningInterval: 3600)
        let logger = Logger(minimumLevel: .info, writer: writer)
        let responder = LoggingResponder(logger: logger)
        let (server, port) = try start(responder, logger: logger)
        sink.holdNextWrite()
        logger.info("stuck")
        sink.waitUntilBlocked()
        // The logging thread is stuck in the sink; every request is still answered.
        let client = try RawClient(port: port, receiveTimeout: 30)
        for i in 0..<100 {
            client.send("GET /x HTTP/1.1\r\nHost: x\r\nX-Request-ID: r\(i)\r\n\r\n")
            XCTAssertEqual(client.readResponse()?.status, 200, "request \(i)")
        }
        XCTAssertTrue(sink.isBlocked, "all answers came while the log sink was blocked")
        XCTAssertGreaterThan(writer.droppedLineCount, 0, "lines beyond the buffers were dropped and counted")
        sink.release()
        server.shutdown(gracePeriod: 1)
        writer.shutdown()
        let requestLines = sink.lines.filter { $0.contains(#""event":"request""#) }
        XCTAssertEqual(requestLines.count + writer.droppedLineCount, 100, "each line was either written or counted")
    }

    func testOneConnectionsAccessLinesKeepItsOrder() throws {
        let sink = HeldSink()
        let writer = LogWriter(sink: sink)
        let logger = Logger(minimumLevel: .info, writer: writer)
        let responder = LoggingResponder(logger: logger)
        let (server, port) = try start(responder, logger: logger)
        let client = try RawClient(port: port, receiveTimeout: 30)
        // Pipelined, the later requests finishing first: the loop answers (and logs) in order.
        var burst = ""
        for i in 0..<16 { burst += "GET /slow/\(2 * (16 - i)) HTTP/1.1\r\nHost: x\r\nX-Request-ID: p\(i)\r\n\r\n" }
        for round in 0..<5 {
            client.send(burst)
            for i in 0..<16 { XCTAssertEqual(client.readResponse()?.status, 200, "round \(round) request \(i)") }
        }
        server.shutdown(gracePeriod: 1)
        writer.shutdown()
        XCTAssertEqual(writer.droppedLineCount, 0)
        let ids = sink.lines.filter { $0.contains(#""event":"request""#) }.compactMap { line -> String? in
            guard let range = line.range(of: #""requestId":""#) else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "\"" })
        }
        XCTAssertEqual(ids, Array(repeating: (0..<16).map { "p\($0)" }, count: 5).flatMap { $0 })
    }
}
