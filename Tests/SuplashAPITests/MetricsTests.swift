import XCTest

@testable import SuplashAPI

/// The request counters and latency histogram of `GET /metrics` (Prometheus text 0.0.4).
final class MetricsTests: XCTestCase {
    func testRequestsByRouteMethodStatusAndCumulativeBuckets() {
        let metrics = Metrics()
        metrics.record(route: "/b", method: "GET", status: 200, seconds: 0.0005)
        metrics.record(route: "/b", method: "GET", status: 200, seconds: 0.02)
        metrics.record(route: "/b", method: "POST", status: 201, seconds: 3)
        metrics.record(route: "/a", method: "GET", status: 404, seconds: 11)
        metrics.record(route: "/b", method: "GET", status: 304, seconds: 0.001)
        let lines = metrics.render().split(separator: "\n").map(String.init)
        let requests = lines.filter { $0.hasPrefix("suplash_http_requests_total{") }
        XCTAssertEqual(
            requests,
            [
                #"suplash_http_requests_total{route="/a",method="GET",status="404"} 1"#,
                #"suplash_http_requests_total{route="/b",method="GET",status="200"} 2"#,
                #"suplash_http_requests_total{route="/b",method="GET",status="304"} 1"#,
                #"suplash_http_requests_total{route="/b",method="POST",status="201"} 1"#,
            ])
        func bucket(_ route: String, _ le: String) -> String? {
            let prefix = "suplash_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(le)\"} "
            return lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        }
        // Cumulative: a bucket counts every observation at or below its bound (0.001 is inclusive).
        XCTAssertEqual(bucket("/b", "0.001"), "2")
        XCTAssertEqual(bucket("/b", "0.025"), "3")
        XCTAssertEqual(bucket("/b", "2.5"), "3")
        XCTAssertEqual(bucket("/b", "5.0"), "4")
        XCTAssertEqual(bucket("/b", "+Inf"), "4")
        XCTAssertEqual(bucket("/a", "10.0"), "0")
        XCTAssertEqual(bucket("/a", "+Inf"), "1")
        XCTAssertTrue(lines.contains("suplash_http_request_duration_seconds_count{route=\"/b\"} 4"))
        XCTAssertTrue(lines.contains("suplash_http_request_duration_seconds_sum{route=\"/a\"} 11.0"))
    }
}
