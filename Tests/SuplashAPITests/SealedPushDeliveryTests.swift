import Foundation
import SuplashJSON
import SuplashStorage
import XCTest

/// The push sender opens each sealed device token just before sending (docs/apple.md,
/// "Sealed secrets"): an envelope copied onto another device's row does not open there (its
/// associated data names the row), so that push is never sent and the row's token is dropped;
/// the other device still gets its push. Against the mock APNs server (scripts/with-apns-mock;
/// skipped without it).
final class SealedPushDeliveryTests: XCTestCase {
    /// The mock's `mock.json` and the server environment pointing `apns.*` at the mock with
    /// sealing key `keyFile`; throws `XCTSkip` without the mock.
    func mockEnvironment(keyFile: String) throws -> (info: JSONValue, environment: [String: String]) {
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_APNS_MOCK"] != nil else {
            throw XCTSkip("SUPLASH_TEST_APNS_MOCK is not set (run under scripts/with-apns-mock)")
        }
        let mock = try XCTUnwrap(MockAPNs.running(), "the mock's mock.json is unreadable")
        let info = mock.info
        let environment = mock.environment.merging(["SUPLASH_SECURITY_SEALING_KEY_FILE": keyFile]) { $1 }
        return (info, environment)
    }

    /// A random 32-byte token as hex starting and ending with `f` (the mock answers 200).
    func newToken() -> String { "f" + (0..<31).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() + "f" }

    /// Registers `device` of the caller with a background token.
    func register(_ s: TestServer, _ access: String, _ device: String, _ token: String, bundle: String) throws {
        let body: JSONValue = .object([
            ("platform", "ios"), ("bundleId", .string(bundle)), ("environment", "production"),
            ("tokens", .array([.object([("pushType", "background"), ("token", .string(token))])])),
        ])
        let r = try s.request("PUT", "/v1/users/me/devices/\(device)", json: body, token: access)
        XCTAssertEqual(r.status, 201, r.text)
    }

    /// One water entry pushed through `POST /v1/sync` by `device`: a background push for the others.
    func postEntry(_ s: TestServer, _ access: String, device: String) throws {
        let now = rfc3339(Date())
        _ = try s.push(
            token: access,
            [
                [
                    "collection": "water_entries", "id": .string(UUID().uuidString.lowercased()), "op": "upsert",
                    "data": ["amountMl": 250, "loggedAt": .string(now)], "clientUpdatedAt": .string(now),
                ]
            ], device: device)
    }

    /// The mock's requests to `token`.
    func requests(_ info: JSONValue, _ token: String) -> Int {
        let text = (try? String(contentsOfFile: info["requestLog"]?.stringValue ?? "", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains("\"request\"") && $0.contains(token) }.count
    }

    func pushTypes(_ s: TestServer, _ access: String, _ device: String) throws -> [JSONValue]? {
        try s.request("GET", "/v1/users/me/devices/\(device)", token: access).json?["pushTypes"]?.arrayValue
    }

    /// Waits until `condition` holds (a bound only against a hang; nothing is timed).
    func eventually(_ condition: () throws -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: 120)
        while try !condition(), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    }

    func testAnEnvelopeCopiedToAnotherRowIsDroppedNotSent() throws {
        let (info, environment) = try mockEnvironment(keyFile: TestServer.makeSealingKeyFile())
        let bundle = environment["SUPLASH_APNS_BUNDLE_IDS"] ?? ""
        let dataDir = TestServer.makeDataDir()
        let first = try TestServer(dataDir: dataDir, environment: environment)
        let u = try first.signUp()
        let (phone, watch, tablet) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let (watchToken, tabletToken) = (newToken(), newToken())
        for (device, t) in [(phone, newToken()), (watch, watchToken), (tablet, tabletToken)] {
            try register(first, u.token, device, t, bundle: bundle)
        }
        XCTAssertEqual(first.stop(), 0)
        // Someone with write access to the database copies the watch's envelope onto the tablet.
        let db = try SQLiteDatabase(path: dataDir + "/suplash.sqlite", readers: 1)
        try db.write { c in
            try c.connection.execute(
                """
                UPDATE device_tokens SET sealed_token = (SELECT sealed_token FROM device_tokens WHERE device_id = '\(watch)')
                WHERE device_id = '\(tablet)'
                """)
        }
        db.close()

        let s = try TestServer(dataDir: dataDir, environment: environment)
        defer { s.stop() }
        try postEntry(s, u.token, device: phone)
        try eventually { try requests(info, watchToken) > 0 && pushTypes(s, u.token, tablet) == [] }
        XCTAssertEqual(requests(info, watchToken), 1, "the watch got its push, once (the copied envelope did not open as the tablet's)")
        XCTAssertEqual(try pushTypes(s, u.token, tablet), [], "the tablet's unopenable token was dropped")
        XCTAssertEqual(requests(info, tabletToken), 0)
        XCTAssertTrue(s.serverLog.contains("TokenUnopenable"), s.serverLog)
        XCTAssertFalse(s.serverLog.contains(watchToken) || s.serverLog.contains(tabletToken), "no token in the log")
    }

    /// A rolling key rotation: another process reseals with a new key this running instance
    /// does not have yet. Its sender cannot open the token, keeps it and retries later
    /// (`SealingKeyMissing`); restarted with the new key, it sends.
    func testATokenUnderAKeyThisInstanceLacksWaitsAndIsKept() throws {
        let oldKey = TestServer.makeSealingKeyFile()
        let (info, environment) = try mockEnvironment(keyFile: oldKey)
        let bundle = environment["SUPLASH_APNS_BUNDLE_IDS"] ?? ""
        let dataDir = TestServer.makeDataDir()
        let s = try TestServer(dataDir: dataDir, environment: environment)
        let u = try s.signUp()
        let (phone, watch) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let watchToken = newToken()
        try register(s, u.token, phone, newToken(), bundle: bundle)
        try register(s, u.token, watch, watchToken, bundle: bundle)
        var rotated = environment
        rotated["SUPLASH_SECURITY_SEALING_KEY_FILE"] = TestServer.makeSealingKeyFile()
        rotated["SUPLASH_SECURITY_OLDER_SEALING_KEY_FILES"] = oldKey
        let (status, out, err) = try TestServer.runCLI(["reseal", "--data-dir", dataDir], environment: rotated)
        XCTAssertEqual(status, 0, err)
        XCTAssertEqual(out.trimmingCharacters(in: .whitespacesAndNewlines), "resealed 2 of 2 sealed values")

        try postEntry(s, u.token, device: phone)
        try eventually { s.serverLog.contains("push_token_unopenable") }
        XCTAssertTrue(s.serverLog.contains("push_token_unopenable"), s.serverLog)
        XCTAssertEqual(requests(info, watchToken), 0, "not sent")
        XCTAssertEqual(try pushTypes(s, u.token, watch), ["background"], "the token is kept")
        XCTAssertTrue(try s.request("GET", "/metrics").text.contains("suplash_push_retried_total{reason=\"SealingKeyMissing\"}"))
        XCTAssertEqual(s.stop(), 0)

        // With the new key the instance opens it: the waiting push goes out (its retry time,
        // a minute on, is moved to now: time passing, not measured).
        let db = try SQLiteDatabase(path: dataDir + "/suplash.sqlite", readers: 1)
        try db.write { c in try c.connection.execute("UPDATE push_outbox SET next_attempt_at = 0 WHERE state = 'pending'") }
        db.close()
        let restarted = try TestServer(dataDir: dataDir, environment: rotated)
        defer { restarted.stop() }
        try eventually { requests(info, watchToken) > 0 }
        XCTAssertGreaterThan(requests(info, watchToken), 0, "sent once the instance has the key")
    }
}
