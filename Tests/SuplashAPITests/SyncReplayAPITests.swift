import Foundation
import SuplashJSON
import XCTest

/// Spec §5 over HTTP: a retried identical push is `applied` without a new version, ETag or
/// feed change, so another client's `If-Match` on the first version still holds.
final class SyncReplayAPITests: XCTestCase {
    func testRetriedPushMakesNoNewVersion() throws {
        let s = try TestServer()
        defer { s.stop() }
        let u = try s.signUp()
        let id = UUID().uuidString.lowercased()
        let at = rfc3339(Date(timeIntervalSinceNow: -60))
        let mutation: JSONValue = [
            "collection": "water_entries", "id": .string(id), "op": "upsert",
            "data": ["amountMl": 250, "loggedAt": .string(at), "note": "cold"],
            "clientUpdatedAt": .string(at),
        ]
        let first = try s.push(token: u.token, [mutation])
        XCTAssertEqual(first[0]["status"]?.stringValue, "applied")
        let stored = try s.request("GET", "/v1/water_logs/me/entries/\(id)", token: u.token)
        XCTAssertEqual(stored.json?["version"], .number(JSONNumber(1)))
        let etag = try XCTUnwrap(stored.header("ETag"))
        let (feed, token) = try s.pullAll(token: u.token)
        XCTAssertEqual(feed.filter { $0["id"]?.stringValue == id }.count, 1)

        // The retry (the phone never saw the answer): applied, nothing changes.
        let retry = try s.push(token: u.token, [mutation])
        XCTAssertEqual(retry[0]["status"]?.stringValue, "applied")
        let again = try s.request("GET", "/v1/water_logs/me/entries/\(id)", token: u.token)
        XCTAssertEqual(again.json?["version"], .number(JSONNumber(1)))
        XCTAssertEqual(again.header("ETag"), etag)
        let (changes, _) = try s.pullAll(token: u.token, since: token)
        XCTAssertEqual(changes, [], "no feed change: neither the entry nor derived documents (achievements)")
        let (snapshot, _) = try s.pullAll(token: u.token)
        XCTAssertEqual(snapshot.filter { $0["id"]?.stringValue == id }.map { $0["version"] }, [.number(JSONNumber(1))])

        // Another client that read version 1 can still write against it.
        let patched = try s.request(
            "PATCH", "/v1/water_logs/me/entries/\(id)", json: ["amountMl": 300], token: u.token,
            headers: [("If-Match", etag)])
        XCTAssertEqual(patched.status, 200, patched.text)
        XCTAssertEqual(patched.json?["version"], .number(JSONNumber(2)))
    }
}
