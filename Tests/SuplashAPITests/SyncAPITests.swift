import Foundation
import SuplashJSON
import XCTest

/// Offline sync against the real server (spec §4 batch, §5, §7).
final class SyncAPITests: XCTestCase {
    nonisolated(unsafe) static var server: TestServer?

    override class func setUp() { server = try? TestServer() }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer { try XCTUnwrap(Self.server, "server did not start") }

    func testPushNeedsDeviceIDAndRejectsPerMutation() throws {
        let s = try srv()
        let u = try s.signUp()
        let body: JSONValue = .object([("mutations", .array([]))])
        XCTAssertEqual(try s.request("POST", "/v1/sync", json: body, token: u.token).status, 400)
        XCTAssertEqual(try s.request("POST", "/v1/sync", json: body, token: u.token, headers: [("X-Device-ID", TestServer.syncDevice)]).status, 422)
        let now = rfc3339(Date())
        let results = try s.push(
            token: u.token,
            [
                ["collection": "achievements", "id": .string(u.id), "op": "upsert", "data": [:], "clientUpdatedAt": .string(now)],
                ["collection": "nope", "id": .string(UUID().uuidString), "op": "delete", "clientUpdatedAt": .string(now)],
                [
                    "collection": "profile", "id": .string(UUID().uuidString), "op": "upsert", "data": ["displayName": "X"],
                    "clientUpdatedAt": .string(now),
                ],
                [
                    "collection": "profile", "id": .string(u.id), "op": "upsert", "data": ["dailyGoalMl": 20],
                    "clientUpdatedAt": .string(now),
                ],
                [
                    "collection": "profile", "id": .string(u.id), "op": "upsert", "data": ["displayName": "Sync"],
                    "clientUpdatedAt": .string(now),
                ],
                ["collection": "water_entries", "id": "not-a-uuid", "op": "delete", "clientUpdatedAt": .string(now)],
            ])
        XCTAssertEqual(
            results.map { $0["status"]?.stringValue ?? "" },
            ["rejected", "rejected", "rejected", "rejected", "applied", "rejected"])
        XCTAssertEqual(
            results.map { $0["error"]?["code"]?.stringValue ?? "" },
            ["read_only_collection", "unknown_collection", "permission_denied", "validation_failed", "", "validation_failed"])
        guard case .array(let fieldErrors)? = results[3]["error"]?["errors"] else { return XCTFail("errors[]") }
        XCTAssertEqual(fieldErrors.first?["pointer"]?.stringValue, "/dailyGoalMl")
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: u.token).json?["displayName"]?.stringValue, "Sync")
        // An older profile write loses and gets the current profile.
        let old = try s.push(
            token: u.token,
            [
                [
                    "collection": "profile", "id": .string(u.id), "op": "upsert",
                    "data": ["displayName": "Old"], "clientUpdatedAt": "2026-01-01T00:00:00Z",
                ]
            ])
        XCTAssertEqual(old[0]["status"]?.stringValue, "superseded")
        XCTAssertEqual(old[0]["current"]?["displayName"]?.stringValue, "Sync")
    }

    func testDeleteOfUnknownIdLeavesATombstoneThatWinsLWW() throws {
        let s = try srv()
        let u = try s.signUp()
        let id = UUID().uuidString.lowercased()
        let t1 = rfc3339(Date(timeIntervalSinceNow: -60))
        let t0 = rfc3339(Date(timeIntervalSinceNow: -120))
        XCTAssertEqual(
            try s.push(
                token: u.token,
                [
                    [
                        "collection": "water_entries", "id": .string(id), "op": "delete",
                        "clientUpdatedAt": .string(t1),
                    ]
                ])[0]["status"]?.stringValue, "applied")
        let late = try s.push(
            token: u.token,
            [
                [
                    "collection": "water_entries", "id": .string(id), "op": "upsert",
                    "data": ["amountMl": 200, "loggedAt": .string(t0)], "clientUpdatedAt": .string(t0),
                ]
            ],
            device: UUID().uuidString)
        XCTAssertEqual(late[0]["status"]?.stringValue, "superseded")
        XCTAssertEqual(late[0]["current"], .null)
        XCTAssertEqual(try s.request("GET", "/v1/water_logs/me/entries/\(id)", token: u.token).status, 404)
    }

    func testTokensAreValidatedAndLongPollTimesOutWithTheSameToken() throws {
        let s = try srv()
        let u = try s.signUp()
        let (changes, token) = try s.pullAll(token: u.token)
        XCTAssertEqual(changes.first?["collection"]?.stringValue, "profile")
        XCTAssertEqual(changes.first?["data"]?["id"]?.stringValue, u.id)
        // A flipped byte breaks the MAC → 400.
        var bytes = Array(token.utf8)
        bytes[10] = bytes[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let r = try s.request("GET", "/v1/sync?since=\(String(decoding: bytes, as: UTF8.self))", token: u.token)
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json?["code"]?.stringValue, "invalid_sync_token")
        for q in ["limit=abc", "limit=-1", "waitSeconds=1.5", "waitSeconds=-1"] {
            XCTAssertEqual(try s.request("GET", "/v1/sync?\(q)", token: u.token).status, 400, q)
        }
        let start = Date()
        let waited = try s.request("GET", "/v1/sync?since=\(token)&waitSeconds=1", token: u.token)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.9)
        XCTAssertEqual(waited.json?["nextToken"]?.stringValue, token)
        XCTAssertEqual(waited.json?["changes"], .array([]))
    }

    func testBatchDedupesAndGzipBodies() throws {
        let s = try srv()
        let u = try s.signUp()
        let hk = UUID().uuidString
        let item: JSONValue = [
            "amountMl": 200, "loggedAt": .string(rfc3339(Date())), "source": "healthkit",
            "healthKitUUID": .string(hk),
        ]
        let body: JSONValue = .object([("entries", .array([item, item, ["amountMl": 0]]))])
        let gz = try gzip(body.serialized())
        let r = try s.request(
            "POST", "/v1/water_logs/me/entries:batch", body: gz, token: u.token,
            headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")])
        XCTAssertEqual(r.status, 200, r.text)
        guard case .array(let results)? = r.json?["results"] else { return XCTFail(r.text) }
        XCTAssertEqual(results.map { $0["status"]?.stringValue ?? "" }, ["created", "existing", "rejected"])
        XCTAssertEqual(results[1]["id"], results[0]["id"])
        XCTAssertEqual(results[2]["index"]?.int64Value, 2)
        XCTAssertEqual(results[2]["error"]?["code"]?.stringValue, "validation_failed")
        // Corrupt gzip → 400; other codings → 415; a bomb past the 1 MiB route limit → 413.
        XCTAssertEqual(
            try s.request(
                "POST", "/v1/water_logs/me/entries", body: Array(gz.prefix(12)), token: u.token,
                headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]
            ).status, 400)
        XCTAssertEqual(
            try s.request(
                "POST", "/v1/water_logs/me/entries", body: [1, 2, 3], token: u.token,
                headers: [("Content-Type", "application/json"), ("Content-Encoding", "br")]
            ).status, 415)
        let bomb = try gzip([UInt8](repeating: 0x20, count: 2 << 20))
        let big = try s.request(
            "POST", "/v1/water_logs/me/entries", body: bomb, token: u.token,
            headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")])
        XCTAssertEqual(big.status, 413)
        XCTAssertEqual(big.json?["code"]?.stringValue, "payload_too_large")
    }

    func testIdempotencyKeysOnAuthAndValidation() throws {
        let s = try srv()
        let email = "i\(UUID().uuidString.prefix(8).lowercased())@example.test"
        let body: JSONValue = ["email": .string(email), "password": "correct horse battery"]
        let key = UUID().uuidString
        let first = try s.request("POST", "/v1/auth/signup", json: body, headers: [("Idempotency-Key", key)])
        XCTAssertEqual(first.status, 201)
        let again = try s.request("POST", "/v1/auth/signup", json: body, headers: [("Idempotency-Key", key)])
        XCTAssertEqual(again.status, 201)
        XCTAssertEqual(again.header("Idempotent-Replayed"), "true")
        XCTAssertEqual(again.body, first.body)
        XCTAssertEqual(try s.request("POST", "/v1/auth/signup", json: body).status, 409)
        XCTAssertEqual(try s.request("POST", "/v1/auth/signup", json: body, headers: [("Idempotency-Key", "bad key")]).status, 400)
        XCTAssertEqual(
            try s.request(
                "POST", "/v1/auth/signup", json: body,
                headers: [("Idempotency-Key", String(repeating: "k", count: 256))]
            ).status, 400)
        let token = try XCTUnwrap(first.json?["session"]?["accessToken"]?.stringValue)
        let entryKey = UUID().uuidString
        let entry: JSONValue = ["amountMl": 250, "loggedAt": .string(rfc3339(Date()))]
        let e1 = try s.request("POST", "/v1/water_logs/me/entries", json: entry, token: token, headers: [("Idempotency-Key", entryKey)])
        let e2 = try s.request("POST", "/v1/water_logs/me/entries", json: entry, token: token, headers: [("Idempotency-Key", entryKey)])
        XCTAssertEqual(e2.header("Location"), e1.header("Location"))
        XCTAssertEqual(e2.header("ETag"), e1.header("ETag"))
        let other = try s.request(
            "PATCH", "/v1/users/me", json: ["displayName": "x"], token: token,
            headers: [("Idempotency-Key", entryKey)])
        XCTAssertEqual(other.status, 422)
        XCTAssertEqual(other.json?["code"]?.stringValue, "idempotency_key_mismatch")
    }
}

/// Tokens across databases and restarts, and the tombstone purge horizon (own servers).
final class SyncLifecycleTests: XCTestCase {
    func testTokenFromAnotherDatabaseAndPurgedHorizonAre410AndReplaySurvivesRestart() throws {
        let secret = [
            "SUPLASH_AUTH_JWT_SECRET": String(repeating: "s", count: 64),
            "SUPLASH_SYNC_TOMBSTONE_RETENTION_DAYS": "0", "SUPLASH_SYNC_MAINTENANCE_INTERVAL_SECONDS": "1",
        ]
        let a = try TestServer(environment: secret)
        defer { a.stop() }
        let b = try TestServer(environment: secret)
        defer { b.stop() }
        let ua = try a.signUp()
        let ub = try b.signUp()
        let tokenA = try XCTUnwrap(try a.request("GET", "/v1/sync", token: ua.token).json?["nextToken"]?.stringValue)
        let wrongDB = try b.request("GET", "/v1/sync?since=\(tokenA)", token: ub.token)
        XCTAssertEqual(wrongDB.status, 410)
        XCTAssertEqual(wrongDB.json?["code"]?.stringValue, "sync_history_changed")

        // A delete, then the purge (retention 0 days, job every second): the old token expires.
        let created = try a.request(
            "POST", "/v1/water_logs/me/entries", json: ["amountMl": 100, "loggedAt": .string(rfc3339(Date()))],
            token: ua.token)
        let id = try XCTUnwrap(created.json?["id"]?.stringValue)
        let before = try XCTUnwrap(try a.request("GET", "/v1/sync?since=\(tokenA)", token: ua.token).json?["nextToken"]?.stringValue)
        XCTAssertEqual(try a.request("DELETE", "/v1/water_logs/me/entries/\(id)", token: ua.token).status, 204)
        var expired = false
        for _ in 0..<40 where !expired {
            Thread.sleep(forTimeInterval: 0.25)
            expired = try a.request("GET", "/v1/sync?since=\(before)", token: ua.token).status == 410
        }
        XCTAssertTrue(expired, "a token from before the purge horizon must be 410")
        XCTAssertEqual(
            try a.request("GET", "/v1/sync?since=\(before)", token: ua.token).json?["code"]?.stringValue,
            "sync_token_expired")
        let fresh = try a.request("GET", "/v1/sync", token: ua.token)
        XCTAssertEqual(fresh.status, 200)
        let after = try XCTUnwrap(fresh.json?["nextToken"]?.stringValue)
        XCTAssertEqual(try a.request("GET", "/v1/sync?since=\(after)", token: ua.token).status, 200)

        // A stored Idempotency-Key response survives a restart.
        let key = UUID().uuidString
        let body: JSONValue = ["amountMl": 300, "loggedAt": .string(rfc3339(Date()))]
        let r1 = try b.request("POST", "/v1/water_logs/me/entries", json: body, token: ub.token, headers: [("Idempotency-Key", key)])
        XCTAssertEqual(r1.status, 201)
        XCTAssertEqual(b.stop(), 0)
        let b2 = try TestServer(dataDir: b.dataDir, environment: secret)
        defer { b2.stop() }
        let r2 = try b2.request("POST", "/v1/water_logs/me/entries", json: body, token: ub.token, headers: [("Idempotency-Key", key)])
        XCTAssertEqual(r2.status, 201)
        XCTAssertEqual(r2.header("Idempotent-Replayed"), "true")
        XCTAssertEqual(r2.body, r1.body)
    }
}

/// gzip via `/bin/gzip` (test helper; the server inflates with zlib).
func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
    let path = NSTemporaryDirectory() + "suplash-gz-" + UUID().uuidString
    _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/gzip")
    p.arguments = ["-c", path]
    let output = Pipe()
    p.standardOutput = output
    try p.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return Array(data)
}
