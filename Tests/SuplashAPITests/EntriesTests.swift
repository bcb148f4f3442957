import Foundation
import SuplashJSON
import XCTest

/// Water entries against the real server (spec §4).
final class EntriesTests: XCTestCase {
    nonisolated(unsafe) static var server: TestServer?

    override class func setUp() { server = try? TestServer() }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer { try XCTUnwrap(Self.server, "server did not start") }

    func testCreateGetPatchDeleteWithETags() throws {
        let s = try srv()
        let u = try s.signUp()
        let base = "/v1/water_logs/\(u.id)/entries"
        let created = try s.request(
            "POST", base, json: ["amountMl": 250, "loggedAt": "2026-01-15T10:30:00+03:00", "source": "watch"],
            token: u.token)
        XCTAssertEqual(created.status, 201, created.text)
        let id = try XCTUnwrap(created.json?["id"]?.stringValue)
        XCTAssertEqual(created.json?["loggedAt"]?.stringValue, "2026-01-15T07:30:00.000Z")
        XCTAssertEqual(created.header("Location"), "\(base)/\(id)")
        let etag = try XCTUnwrap(created.header("ETag"))
        XCTAssertEqual(try s.request("GET", "\(base)/\(id)", token: u.token, headers: [("If-None-Match", etag)]).status, 304)
        let patched = try s.request("PATCH", "\(base)/\(id)", json: ["amountMl": 330], token: u.token, headers: [("If-Match", etag)])
        XCTAssertEqual(patched.status, 200)
        XCTAssertEqual(patched.json?["version"]?.int64Value, 2)
        XCTAssertEqual(try s.request("PATCH", "\(base)/\(id)", json: ["amountMl": 1], token: u.token, headers: [("If-Match", etag)]).status, 412)
        XCTAssertEqual(try s.request("DELETE", "\(base)/\(id)", token: u.token, headers: [("If-Match", etag)]).status, 412)
        XCTAssertEqual(
            try s.request(
                "DELETE", "\(base)/\(id)", token: u.token,
                headers: [("If-Match", patched.header("ETag") ?? "")]
            ).status, 204)
        XCTAssertEqual(try s.request("GET", "\(base)/\(id)", token: u.token).status, 404)
        // A deleted id cannot be re-created (its tombstone stays for sync).
        XCTAssertEqual(
            try s.request(
                "POST", base, json: ["id": .string(id), "amountMl": 250, "loggedAt": "2026-01-15T10:30:00Z"],
                token: u.token
            ).status, 409)
    }

    func testClientIDsAndHealthKitUUIDsAreIdempotent() throws {
        let s = try srv()
        let u = try s.signUp()
        let base = "/v1/water_logs/me/entries"
        let id = UUID().uuidString
        let body: JSONValue = ["id": .string(id), "amountMl": 150, "loggedAt": .string(rfc3339(Date())), "source": "phone"]
        XCTAssertEqual(try s.request("POST", base, json: body, token: u.token).status, 201)
        let again = try s.request("POST", base, json: body, token: u.token)
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.json?["id"]?.stringValue, id.lowercased())
        guard case .object(var members) = body else { return XCTFail() }
        members[1] = ("amountMl", 500)
        XCTAssertEqual(try s.request("POST", base, json: .object(members), token: u.token).status, 409)

        let sample = UUID().uuidString
        let hk: JSONValue = ["amountMl": 200, "loggedAt": .string(rfc3339(Date())), "source": "healthkit", "healthKitUUID": .string(sample)]
        let first = try s.request("POST", base, json: hk, token: u.token)
        XCTAssertEqual(first.status, 201)
        let second = try s.request("POST", base, json: hk, token: u.token)
        XCTAssertEqual(second.status, 200)
        XCTAssertEqual(second.json?["id"], first.json?["id"])
        XCTAssertEqual(second.json?["healthKitUUID"]?.stringValue, sample.lowercased())
    }

    /// RFC 9112 §9.3.2 / spec §7: a request pipelined after a write sees that write.
    func testPipelinedReadAfterWriteSeesTheWrite() throws {
        let s = try srv()
        let u = try s.signUp()
        let base = "/v1/water_logs/me/entries"
        for _ in 0..<5 {
            let id = UUID().uuidString.lowercased()
            let body = Array("{\"id\":\"\(id)\",\"amountMl\":150,\"loggedAt\":\"\(rfc3339(Date()))\"}".utf8)
            let auth = "Authorization: Bearer \(u.token)\r\n"
            var wire = Array(
                "POST \(base) HTTP/1.1\r\nHost: test\r\n\(auth)Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
            wire += body
            wire += Array("GET \(base)/\(id) HTTP/1.1\r\nHost: test\r\n\(auth)\r\n".utf8)
            wire += Array("DELETE \(base)/\(id) HTTP/1.1\r\nHost: test\r\n\(auth)\r\n".utf8)
            wire += Array("GET \(base)/\(id) HTTP/1.1\r\nHost: test\r\n\(auth)Connection: close\r\n\r\n".utf8)
            let responses = HTTPTestClient.parse(try HTTPTestClient.raw(port: s.port, wire))
            XCTAssertEqual(responses.map(\.status), [201, 200, 204, 404], responses.map(\.text).joined(separator: "\n"))
        }
    }

    /// A large account export is streamed from a temporary file; it arrives complete.
    func testLargeExportArrivesComplete() throws {
        let s = try TestServer(environment: ["SUPLASH_RATELIMIT_ENABLED": "false"])
        defer { s.stop() }
        let u = try s.signUp()
        let base = "/v1/water_logs/me/entries"
        let auth = "Authorization: Bearer \(u.token)\r\n"
        var wire: [UInt8] = []
        let count = 500
        for i in 0..<count {
            let body = Array(
                "{\"amountMl\":\(100 + i),\"loggedAt\":\"\(rfc3339(Date(timeIntervalSinceNow: Double(-i * 60))))\",\"note\":\"n\(i)\"}".utf8)
            wire += Array(
                "POST \(base) HTTP/1.1\r\nHost: test\r\n\(auth)Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
            wire += body
        }
        wire += Array("GET /v1/users/me/export HTTP/1.1\r\nHost: test\r\n\(auth)Connection: close\r\n\r\n".utf8)
        let responses = HTTPTestClient.parse(try HTTPTestClient.raw(port: s.port, wire))
        XCTAssertEqual(responses.count, count + 1)
        XCTAssertEqual(Set(responses.prefix(count).map(\.status)), [201])
        let export = try XCTUnwrap(responses.last)
        XCTAssertEqual(export.status, 200)
        XCTAssertGreaterThan(export.body.count, 64 * 1024, "large enough to be file-backed")
        XCTAssertEqual(export.header("Content-Length"), String(export.body.count))
        guard case .array(let entries)? = export.json?["waterEntries"] else { return XCTFail("no waterEntries: \(export.text.prefix(200))") }
        XCTAssertEqual(entries.count, count)
    }

    func testValidationListsEveryBadField() throws {
        let s = try srv()
        let u = try s.signUp()
        let r = try s.request(
            "POST", "/v1/water_logs/me/entries",
            body: Array(#"{"amountMl": 2.5, "loggedAt": "yesterday", "source": "fridge", "color": 1}"#.utf8),
            token: u.token, headers: [("Content-Type", "application/json")])
        XCTAssertEqual(r.status, 422)
        let pointers = Set((r.json?["errors"]?.arrayValue ?? []).compactMap { $0["pointer"]?.stringValue })
        XCTAssertEqual(pointers, ["/amountMl", "/loggedAt", "/source", "/color"])
        let wrongType = try s.request(
            "POST", "/v1/water_logs/me/entries", body: Array("amountMl=1".utf8), token: u.token,
            headers: [("Content-Type", "application/x-www-form-urlencoded")])
        XCTAssertEqual(wrongType.status, 415)
        let broken = try s.request(
            "POST", "/v1/water_logs/me/entries", body: Array(#"{"amountMl": 250,"#.utf8), token: u.token,
            headers: [("Content-Type", "application/json")])
        XCTAssertEqual(broken.status, 400)
        let huge = try s.request(
            "POST", "/v1/water_logs/me/entries",
            body: Array(#"{"amountMl": 1e400, "loggedAt": "2026-01-01T00:00:00Z"}"#.utf8), token: u.token,
            headers: [("Content-Type", "application/json")])
        XCTAssertEqual(huge.status, 422)
    }

    func testKeysetPagesNeverSkipOrRepeat() throws {
        let s = try srv()
        let u = try s.signUp()
        let base = "/v1/water_logs/me/entries"
        let start = Date().addingTimeInterval(-10 * 86_400)
        var made = Set<String>()
        for i in 0..<45 {
            let r = try s.request(
                "POST", base,
                json: [
                    "amountMl": .number(JSONNumber(100 + i)),
                    "loggedAt": .string(rfc3339(start.addingTimeInterval(Double(i) * 3600))),
                ],
                token: u.token)
            made.insert(try XCTUnwrap(r.json?["id"]?.stringValue))
        }
        let same = rfc3339(start.addingTimeInterval(-86_400))
        for _ in 0..<2 {
            made.insert(
                try XCTUnwrap(
                    try s.request("POST", base, json: ["amountMl": 90, "loggedAt": .string(same)], token: u.token)
                        .json?["id"]?.stringValue))
        }
        var seen: [String] = []
        var stamps: [String] = []
        var token: String?
        var pages = 0
        repeat {
            let r = try s.request("GET", base + (token.map { "?pageToken=\($0)" } ?? ""), token: u.token)
            XCTAssertEqual(r.status, 200)
            pages += 1
            let entries = r.json?["entries"]?.arrayValue ?? []
            if pages == 1 {
                XCTAssertEqual(entries.count, 20)
                _ = try s.request("POST", base, json: ["amountMl": 999, "loggedAt": .string(rfc3339(Date()))], token: u.token)
            }
            seen += entries.compactMap { $0["id"]?.stringValue }
            stamps += entries.compactMap { $0["loggedAt"]?.stringValue }
            token = r.json?["nextPageToken"]?.stringValue
        } while token != nil
        XCTAssertEqual(pages, 3)
        XCTAssertEqual(Set(seen), made)
        XCTAssertEqual(seen.count, made.count)
        XCTAssertEqual(stamps, stamps.sorted(by: >))
    }

    func testPageTokensAreBoundToTheirQuery() throws {
        let s = try srv()
        let u = try s.signUp()
        let base = "/v1/water_logs/me/entries"
        for d in 0..<4 {
            _ = try s.request("POST", base, json: ["amountMl": 100, "loggedAt": .string("2026-03-0\(d + 1)T12:00:00Z")], token: u.token)
        }
        let first = try s.request("GET", base + "?pageSize=2&from=2026-03-01T00:00:00Z", token: u.token)
        let token = try XCTUnwrap(first.json?["nextPageToken"]?.stringValue)
        XCTAssertEqual(try s.request("GET", base + "?pageSize=2&from=2026-03-01T00:00:00Z&pageToken=\(token)", token: u.token).status, 200)
        XCTAssertEqual(try s.request("GET", base + "?pageSize=2&from=2026-03-02T00:00:00Z&pageToken=\(token)", token: u.token).status, 400)
        let other = try s.signUp()
        XCTAssertEqual(try s.request("GET", base + "?pageToken=\(token)", token: other.token).status, 400)
        for bad in ["pageSize=0", "pageSize=101", "pageSize=abc", "pageSize=+5", "pageSize=%2B5", "pageToken=garbage!!", "from=notadate"] {
            XCTAssertEqual(try s.request("GET", base + "?" + bad, token: u.token).status, 400, bad)
        }
        let ranged = try s.request("GET", base + "?from=2026-03-02T12:00:00Z&to=2026-03-04T12:00:00Z", token: u.token)
        XCTAssertEqual(ranged.json?["entries"]?.arrayValue?.count, 2)
    }
}
