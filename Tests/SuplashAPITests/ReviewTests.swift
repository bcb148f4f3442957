import Foundation
import SuplashJSON
import XCTest

/// Regressions found in the hostile-client review (one test per finding).
final class ReviewTests: XCTestCase {
    /// RFC 9110 §13.1.1: `If-Match` uses the strong comparison, so a weak tag never matches.
    func testWeakEntityTagNeverSatisfiesIfMatch() throws {
        let s = try TestServer()
        defer { s.stop() }
        let u = try s.signUp()
        let created = try s.request(
            "POST", "/v1/water_logs/me/entries",
            json: ["amountMl": 250, "loggedAt": .string(rfc3339(Date()))], token: u.token)
        XCTAssertEqual(created.status, 201)
        let id = try XCTUnwrap(created.json?["id"]?.stringValue)
        let etag = try XCTUnwrap(created.header("ETag"))
        let path = "/v1/water_logs/me/entries/\(id)"
        XCTAssertEqual(
            try s.request(
                "PATCH", path, json: ["amountMl": 300], token: u.token,
                headers: [("If-Match", "W/\(etag)")]
            ).status, 412)
        XCTAssertEqual(try s.request("DELETE", path, token: u.token, headers: [("If-Match", "W/\(etag)")]).status, 412)
        XCTAssertEqual(
            try s.request(
                "PATCH", "/v1/users/me", json: ["displayName": "x"], token: u.token,
                headers: [("If-Match", "W/\"1\"")]
            ).status, 412)
        // If-None-Match keeps the weak comparison: a weak tag still hits.
        XCTAssertEqual(try s.request("GET", path, token: u.token, headers: [("If-None-Match", "W/\(etag)")]).status, 304)
        XCTAssertEqual(try s.request("DELETE", path, token: u.token, headers: [("If-Match", "\"9\", \(etag)")]).status, 204)
    }

    /// Spec §7 privacy: the request method is client text; an unknown one must not be logged verbatim.
    func testUnknownMethodTokenIsNotLogged() throws {
        let s = try TestServer()
        let method = "LEAKYMETHOD" + String(repeating: "Z", count: 200)
        XCTAssertEqual(try s.request(method, "/healthz").status, 405)
        s.stop()
        XCTAssertFalse(s.serverLog.contains("LEAKYMETHOD"), "the log carries a client-chosen method token")
        XCTAssertTrue(s.serverLog.contains("\"status\":405"))
    }
}
