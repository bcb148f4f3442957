import Foundation
import XCTest

/// The server's log thread end to end (docs/operations.md, "The log thread"): every access
/// line queued before SIGTERM is on standard error when the process exits, and the drop
/// counter is on `/metrics`.
final class AccessLogShutdownTests: XCTestCase {
    func testEveryAccessLineIsFlushedAtSigterm() throws {
        let server = try TestServer()
        let count = 300
        // One request after the other: their lines must come out in this order, the last
        // ones still queued for the log thread when SIGTERM arrives.
        for i in 0..<count {
            let response = try server.request("GET", "/healthz", headers: [("X-Request-ID", "flush-\(i)")])
            XCTAssertEqual(response.status, 200, "request \(i)")
        }
        let metrics = try server.request("GET", "/metrics").text
        XCTAssertTrue(metrics.contains("# TYPE suplash_log_lines_dropped_total counter\nsuplash_log_lines_dropped_total 0\n"), metrics)
        XCTAssertEqual(server.stop(), 0)
        let lines = server.serverLog.split(separator: "\n")
        let ids = lines.filter { $0.contains(#""event":"request""#) && $0.contains("flush-") }.map { line in
            line.components(separatedBy: #""requestId":""#).last.map { String($0.prefix { $0 != "\"" }) } ?? ""
        }
        XCTAssertEqual(ids, (0..<count).map { "flush-\($0)" }, "every line, in the order of the requests")
        XCTAssertTrue(lines.last?.contains(#""event":"stopped""#) ?? false, "the last line is the last one logged")
        XCTAssertFalse(server.serverLog.contains("log_lines_dropped"))
    }
}
