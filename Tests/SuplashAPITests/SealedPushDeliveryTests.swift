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
    func testAnEnvelopeCopiedToAnotherRowIsDroppedNotSent() throws {
        guard let dir = ProcessInfo.processInfo.environment["SUPLASH_TEST_APNS_MOCK"], !dir.isEmpty else {
            throw XCTSkip("SUPLASH_TEST_APNS_MOCK is not set (run under scripts/with-apns-mock)")
        }
        let info = try JSONParser.parse(Array(try XCTUnwrap(FileManager.default.contents(atPath: dir + "/mock.json"))))
        let bundle = try XCTUnwrap(info["bundleIds"]?.arrayValue?.first?.stringValue)
        let requestLog = try XCTUnwrap(info["requestLog"]?.stringValue)
        let environment = [
            "SUPLASH_APNS_KEY_FILE": try XCTUnwrap(info["keyFile"]?.stringValue),
            "SUPLASH_APNS_KEY_ID": try XCTUnwrap(info["keyID"]?.stringValue ?? info["keyId"]?.stringValue),
            "SUPLASH_APNS_TEAM_ID": try XCTUnwrap(info["teamId"]?.stringValue),
            "SUPLASH_APNS_PRODUCTION_URL": "https://127.0.0.1:\(try XCTUnwrap(info["productionPort"]?.int64Value))",
            "SUPLASH_APNS_SANDBOX_URL": "https://localhost:\(try XCTUnwrap(info["sandboxPort"]?.int64Value))",
            "SUPLASH_APNS_CA_FILE": try XCTUnwrap(info["caFile"]?.stringValue), "SUPLASH_APNS_BUNDLE_IDS": bundle,
            "SUPLASH_APNS_POLL_INTERVAL_MS": "50", "SUPLASH_SECURITY_SEALING_KEY_FILE": TestServer.makeSealingKeyFile(),
        ]
        let dataDir = TestServer.makeDataDir()
        let first = try TestServer(dataDir: dataDir, environment: environment)
        let u = try first.signUp()
        let (phone, watch, tablet) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        func token() -> String { "f" + (0..<31).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() + "f" }
        let (watchToken, tabletToken) = (token(), token())
        for (device, t) in [(phone, token()), (watch, watchToken), (tablet, tabletToken)] {
            let body: JSONValue = .object([
                ("platform", "ios"), ("bundleId", .string(bundle)), ("environment", "production"),
                ("tokens", .array([.object([("pushType", "background"), ("token", .string(t))])])),
            ])
            let r = try first.request("PUT", "/v1/users/me/devices/\(device)", json: body, token: u.token)
            XCTAssertEqual(r.status, 201, r.text)
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
        let now = rfc3339(Date())
        _ = try s.push(
            token: u.token,
            [
                [
                    "collection": "water_entries", "id": .string(UUID().uuidString.lowercased()), "op": "upsert",
                    "data": ["amountMl": 250, "loggedAt": .string(now)], "clientUpdatedAt": .string(now),
                ]
            ], device: phone)
        func requests(_ t: String) -> Int {
            let text = (try? String(contentsOfFile: requestLog, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").filter { $0.contains("\"request\"") && $0.contains(t) }.count
        }
        func tabletTypes() throws -> [JSONValue]? {
            try s.request("GET", "/v1/users/me/devices/\(tablet)", token: u.token).json?["pushTypes"]?.arrayValue
        }
        let deadline = Date(timeIntervalSinceNow: 120)
        while try requests(watchToken) == 0 || tabletTypes() != [], Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(requests(watchToken), 1, "the watch got its push, once (the copied envelope did not open as the tablet's)")
        XCTAssertEqual(try tabletTypes(), [], "the tablet's unopenable token was dropped")
        XCTAssertEqual(requests(tabletToken), 0)
        XCTAssertTrue(s.serverLog.contains("TokenUnopenable"), s.serverLog)
        XCTAssertFalse(s.serverLog.contains(watchToken) || s.serverLog.contains(tabletToken), "no token in the log")
    }
}
