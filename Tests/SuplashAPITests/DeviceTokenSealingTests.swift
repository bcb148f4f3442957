import Foundation
import SuplashJSON
import SuplashStorage
import XCTest

/// APNs device tokens sealed at rest on SQLite (docs/apple.md, "Sealed secrets"): no token in
/// plaintext in the data dir (database file, WAL, backups) or the log; lookups by blind index
/// (a token moves to the account that registers it last); rows written before sealing are
/// sealed at start-up and vacuumed away; start-up refuses sealed tokens without their key;
/// `reseal` moves tokens and their blind indexes to a new key; without a key no token is kept.
final class DeviceTokenSealingTests: XCTestCase {
    static let bundleID = "app.suplash.ios"

    /// A random 32-byte token as hex.
    func newToken() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    func register(_ s: TestServer, _ access: String, _ device: String, _ tokens: [(String, String)]) throws -> TestResponse {
        let body: JSONValue = .object([
            ("platform", "ios"), ("bundleId", .string(Self.bundleID)), ("environment", "production"),
            ("tokens", .array(tokens.map { .object([("pushType", .string($0.0)), ("token", .string($0.1))]) })),
        ])
        return try s.request("PUT", "/v1/users/me/devices/\(device)", json: body, token: access)
    }

    func pushTypes(_ s: TestServer, _ access: String, _ device: String) throws -> [String]? {
        try s.request("GET", "/v1/users/me/devices/\(device)", token: access).json?["pushTypes"]?.arrayValue?.compactMap(\.stringValue)
    }

    /// Every file under `dir` (database, WAL, backups, logs) with its bytes.
    func files(_ dir: String) -> [(String, [UInt8])] {
        let names = FileManager.default.enumerator(atPath: dir)?.compactMap { $0 as? String } ?? []
        return names.compactMap { name in FileManager.default.contents(atPath: dir + "/" + name).map { (name, Array($0)) } }
    }

    /// The forms a token could take on disk: its hex in either case and its raw bytes.
    func needles(_ hex: String) -> [[UInt8]] {
        var raw: [UInt8] = []
        var chars = Array(hex.utf8)[...]
        while chars.count >= 2, let b = UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16) {
            raw.append(b)
            chars = chars.dropFirst(2)
        }
        return [Array(hex.lowercased().utf8), Array(hex.uppercased().utf8), raw]
    }

    func assertNoPlaintext(_ dir: String, _ tokens: [String], file: StaticString = #filePath, line: UInt = #line) {
        for (name, bytes) in files(dir) {
            for token in tokens {
                for needle in needles(token) {
                    XCTAssertNil(bytes.firstRange(of: needle), "\(name) holds a push token in plaintext", file: file, line: line)
                }
            }
        }
    }

    /// Runs `sql` on the stopped server's database (a row as an older version wrote it).
    func execute(_ dataDir: String, _ sql: String) throws {
        let db = try SQLiteDatabase(path: dataDir + "/suplash.sqlite", readers: 1)
        defer { db.close() }
        try db.write { c in try c.connection.execute(sql) }
    }

    /// Writes an `alert` token row as the version before sealing did (plaintext bytes, no blind
    /// index) into the stopped server's database; returns the token's hex.
    func insertPlaintextToken(_ dataDir: String, user: String, device: String) throws -> String {
        let token = newToken()
        try execute(
            dataDir,
            "INSERT INTO device_tokens (user_id, device_id, push_type, token, registered_at) "
                + "VALUES ('\(user)', '\(device)', 'alert', X'\(token)', 1)")
        return token
    }

    func testTokensAreSealedAtRestAndFoundByTheirBlindIndex() throws {
        let key = TestServer.makeSealingKeyFile()
        let s = try TestServer(environment: ["SUPLASH_SECURITY_SEALING_KEY_FILE": key])
        defer { s.stop() }
        let alice = try s.signUp()
        let bob = try s.signUp()
        let (phone, other) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let (app, widgets) = (newToken(), newToken())
        XCTAssertEqual(try register(s, alice.token, phone, [("alert", app), ("background", app), ("widgets", widgets)]).status, 201)
        // Bob's device registers the app token for alerts (upper case: the same token): it moves.
        XCTAssertEqual(try register(s, bob.token, other, [("alert", app.uppercased())]).status, 201)
        XCTAssertEqual(try pushTypes(s, alice.token, phone), ["background", "widgets"], "the alert token moved to bob")
        XCTAssertEqual(try pushTypes(s, bob.token, other), ["alert"])
        // A backup while the server runs; then no file holds a token in plaintext.
        try FileManager.default.createDirectory(atPath: s.dataDir + "/backups", withIntermediateDirectories: true)
        let (status, _, err) = try TestServer.runCLI(["backup", "--to", s.dataDir + "/backups/b.sqlite", "--data-dir", s.dataDir])
        XCTAssertEqual(status, 0, err)
        let all = files(s.dataDir)
        XCTAssertTrue(all.contains { $0.0.hasSuffix("suplash.sqlite-wal") }, "the WAL was read")
        XCTAssertTrue(all.contains { $0.0.hasSuffix("backups/b.sqlite") }, "the backup was read")
        XCTAssertTrue(all.contains { $0.1.firstRange(of: Array("s1.".utf8)) != nil }, "envelopes are stored")
        assertNoPlaintext(s.dataDir, [app, widgets])
        XCTAssertFalse(s.serverLog.contains("\"level\":\"error\""), s.serverLog)
    }

    func testPlaintextRowsAreSealedAtStartupAndTheKeyIsRequiredThenRotated() throws {
        let dir = TestServer.makeDataDir()
        let key = TestServer.makeSealingKeyFile()
        var environment = ["SUPLASH_SECURITY_SEALING_KEY_FILE": key]
        let first = try TestServer(dataDir: dir, environment: environment)
        let u = try first.signUp()
        let phone = UUID().uuidString.lowercased()
        let sealedToken = newToken()
        XCTAssertEqual(try register(first, u.token, phone, [("widgets", sealedToken)]).status, 201)
        XCTAssertEqual(first.stop(), 0)
        let legacy = try insertPlaintextToken(dir, user: u.id, device: phone)

        // Start-up seals it and vacuums: the device lists it, and while the server runs (before
        // any later checkpoint) neither the database file nor the WAL holds it in plaintext.
        let second = try TestServer(dataDir: dir, environment: environment)
        XCTAssertEqual(try pushTypes(second, u.token, phone), ["alert", "widgets"])
        XCTAssertTrue(second.serverLog.contains("\"sealed\":1"), second.serverLog)
        assertNoPlaintext(dir, [legacy, sealedToken])
        XCTAssertEqual(second.stop(), 0)

        // Without its key: refused (65), never a replacement key.
        environment["SUPLASH_SECURITY_SEALING_KEY_FILE"] = ""
        let (refused, _, message) = try TestServer.runCLI(["serve", "--port", "0", "--data-dir", dir], environment: environment)
        XCTAssertEqual(refused, 65, message)
        XCTAssertTrue(message.contains("security.sealingKeyFile"), message)

        // Rotation: reseal moves both tokens (and their blind indexes) to the new key.
        let newKey = TestServer.makeSealingKeyFile()
        let rotated = ["SUPLASH_SECURITY_SEALING_KEY_FILE": newKey, "SUPLASH_SECURITY_OLDER_SEALING_KEY_FILES": key]
        let (resealed, out, err) = try TestServer.runCLI(["reseal", "--data-dir", dir], environment: rotated)
        XCTAssertEqual(resealed, 0, err)
        XCTAssertEqual(out.trimmingCharacters(in: .whitespacesAndNewlines), "resealed 2 of 2 sealed values")
        let third = try TestServer(dataDir: dir, environment: ["SUPLASH_SECURITY_SEALING_KEY_FILE": newKey])
        defer { third.stop() }
        // The new key alone finds the resealed token by its blind index: registering it
        // elsewhere takes it from the phone.
        let other = try third.signUp()
        let tablet = UUID().uuidString.lowercased()
        XCTAssertEqual(try register(third, other.token, tablet, [("alert", legacy)]).status, 201)
        XCTAssertEqual(try pushTypes(third, u.token, phone), ["widgets"])
    }

    func testWithoutASealingKeyNoTokenIsKept() throws {
        let dir = TestServer.makeDataDir()
        let s = try TestServer(dataDir: dir)
        let u = try s.signUp()
        let phone = UUID().uuidString.lowercased()
        let created = try register(s, u.token, phone, [("alert", newToken())])
        XCTAssertEqual(created.status, 201, created.text)
        XCTAssertEqual(created.json?["pushTypes"]?.arrayValue, [], "registered, without tokens")
        XCTAssertEqual(s.stop(), 0)
        // A plaintext row from before sealing is deleted at start-up without a key.
        let legacy = try insertPlaintextToken(dir, user: u.id, device: phone)
        let again = try TestServer(dataDir: dir)
        XCTAssertEqual(try pushTypes(again, u.token, phone), [])
        XCTAssertTrue(again.serverLog.contains("\"dropped\":1"), again.serverLog)
        assertNoPlaintext(dir, [legacy])
        XCTAssertEqual(again.stop(), 0)
    }

    func testAPNsWithoutASealingKeyIsRefused() throws {
        let (status, _, message) = try TestServer.runCLI(
            ["serve", "--port", "0", "--data-dir", TestServer.makeDataDir()],
            environment: [
                "SUPLASH_APNS_KEY_FILE": "/nonexistent.p8", "SUPLASH_APNS_KEY_ID": "ABCDE12345", "SUPLASH_APNS_TEAM_ID": "TEAM123456",
            ])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(message.contains("security.sealingKeyFile"), message)
    }
}
