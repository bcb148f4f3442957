import Foundation
import SuplashLogging
import Synchronization
import XCTest

@testable import SuplashHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// A loop that stops with work still queued: a response's delivery that never runs still
/// emits its access line (`HTTPResponseSink.send(_:log:)` hands `record.emit` as the task's
/// discard handler), and a task offered after the stop is refused, not queued.
final class EventLoopShutdownTests: XCTestCase {
    struct NoResponder: HTTPResponder {
        func bodyLimit(for head: HTTPRequestHead) -> Int { 0 }
        func respond(to request: HTTPRequest, sink: HTTPResponseSink) {}
    }

    func testATaskTheLoopStopsBeforeRunningRunsItsDiscardHandlerInstead() throws {
        let context = ServerContext(configuration: HTTPServerConfiguration(), responder: NoResponder(), logger: Logger())
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        let loop = try EventLoop(index: 0, context: context, listenerFD: listener)
        let outcomes = Mutex<[String]>([])
        XCTAssertTrue(
            loop.submit({ outcomes.withLock { $0.append("first ran") } }, ifDiscarded: { outcomes.withLock { $0.append("first discarded") } }))
        XCTAssertTrue(loop.submit { outcomes.withLock { $0.append("second ran") } })
        loop.stopUnstarted()
        XCTAssertEqual(outcomes.withLock { $0 }, ["first discarded"])
        XCTAssertFalse(
            loop.submit({ outcomes.withLock { $0.append("late ran") } }, ifDiscarded: { outcomes.withLock { $0.append("late discarded") } }))
        XCTAssertEqual(outcomes.withLock { $0 }, ["first discarded"], "a refused task is the caller's to handle")
    }
}
