import Foundation
import XCTest

/// The server's log thread end to end (docs/operations.md, "The log thread"): every access
/// line queued before SIGTERM is on standard error when the process exits, and the drop
/// counter is on `/metrics`.
final class AccessLogShutdownTests: XCTestCase {
    func testEveryAccessLineIsFlushedAtSigterm() throws {
        let server = try TestServer()
        let count = 300
        // One request after the other, each on its own connection (so on either loop): every
        // line must be there; the last ones are still queued for the log thread at SIGTERM.
        for i in 0..<count {
            let response = try server.request("GET", "/healthz", headers: [("X-Request-ID", "flush-\(i)")])
            XCTAssertEqual(response.status, 200, "request \(i)")
        }
        // Pipelined on one connection: those lines keep the connection's order.
        var pipelined = ""
        for i in 0..<100 {
            let close = i == 99 ? "Connection: close\r\n" : ""
            pipelined += "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-ID: pipe-\(i)\r\n\(close)\r\n"
        }
        let answers = HTTPTestClient.parse(try HTTPTestClient.raw(port: server.port, Array(pipelined.utf8)))
        XCTAssertEqual(answers.map(\.status), Array(repeating: 200, count: 100))
        let metrics = try server.request("GET", "/metrics").text
        XCTAssertTrue(
            metrics.contains("# TYPE suplash_log_lines_dropped_total counter\nsuplash_log_lines_dropped_total 0\n"), metrics)
        XCTAssertEqual(server.stop(), 0)
        let lines = server.serverLog.split(separator: "\n")
        let ids = lines.filter { $0.contains(#""event":"request""#) }.map { line in
            line.components(separatedBy: #""requestId":""#).last.map { String($0.prefix { $0 != "\"" }) } ?? ""
        }
        XCTAssertEqual(
            Set(ids.filter { $0.hasPrefix("flush-") }), Set((0..<count).map { "flush-\($0)" }), "every line was written")
        XCTAssertEqual(ids.filter { $0.hasPrefix("flush-") }.count, count, "once")
        XCTAssertEqual(ids.filter { $0.hasPrefix("pipe-") }, (0..<100).map { "pipe-\($0)" }, "in the connection's order")
        XCTAssertTrue(lines.last?.contains(#""event":"stopped""#) ?? false, "the last line is the last one logged")
        XCTAssertFalse(server.serverLog.contains("log_lines_dropped"))
    }
}
