import Foundation
import SuplashAPI
import SuplashCrypto
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import XCTest

/// APNs device tokens sealed at rest on PostgreSQL (docs/apple.md, "Sealed secrets"): a
/// registration stores only the envelope and the blind index; a row written before sealing
/// is sealed at start-up (`PushTokenSealing.sealStoredPlaintext`, then `VACUUM device_tokens`)
/// and found by its blind index afterwards; a plain-format `pg_dump` of the database (what a
/// logical backup holds) contains no token in plaintext; and no file of the cluster's data
/// directory (heap, indexes, WAL) holds a token registered through the sealing path.
final class DeviceTokenSealingPostgresTests: XCTestCase {
    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    static let phone = "0193d000-0000-4000-8000-0000000000a1"
    static let tablet = "0193d000-0000-4000-8000-0000000000a2"
    static let registered = [UInt8](repeating: 0x5A, count: 32)
    static let legacy = [UInt8](repeating: 0x6B, count: 32)

    func registration(_ tokens: [(PushType, [UInt8])]) -> DeviceRegistration {
        DeviceRegistration(
            platform: .ios, bundleID: "app.suplash.ios", environment: .production,
            tokens: tokens.map { PushToken(pushType: $0.0, token: $0.1) })
    }

    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// `pg_dump --format=plain` of the test database.
    func dump() throws -> [UInt8] {
        let path = NSTemporaryDirectory() + "suplash-pg-dump-" + UUID().uuidString + ".sql"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["pg_dump", "--format=plain", "--no-owner", "--file=\(path)", "--dbname=\(try PostgresTestSupport.url())"]
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "pg_dump")
        return Array(try XCTUnwrap(FileManager.default.contents(atPath: path)))
    }

    /// The cluster's data directory, from the test URL's `host` (scripts/with-postgres puts the
    /// socket in the directory that holds `data/`), or nil.
    func clusterDataDir() throws -> String? {
        let url = try PostgresTestSupport.url()
        guard let query = url.split(separator: "?", maxSplits: 1).last,
            let host = query.split(separator: "&").first(where: { $0.hasPrefix("host=") })?.dropFirst(5)
        else { return nil }
        let dir = String(host) + "/data"
        return FileManager.default.isReadableFile(atPath: dir + "/PG_VERSION") ? dir : nil
    }

    /// Tokens registered through the sealing path never reach any file of the cluster: heap
    /// files, indexes and WAL (after a checkpoint), whatever PostgreSQL keeps of old versions.
    func testNoFileOfTheClusterHoldsARegisteredToken() throws {
        let db = try PostgresTestSupport.migratedDatabase()
        fixtures.cleanups.append { db.close() }
        guard let dataDir = try clusterDataDir() else { throw XCTSkip("the cluster's data directory is not readable here") }
        let store = PostgresStore(database: db)
        try fixtures.makeUsers(store)
        let tokens = (0..<3).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255) } }
        _ = try store.registerDevice(
            userID: fixtures.alice, deviceID: Self.phone, sessionID: nil,
            registration: registration([(.alert, tokens[0]), (.background, tokens[0]), (.widgets, tokens[1])]), now: fixtures.t0)
        // The token moves to bob (a lookup by blind index), then is registered again.
        _ = try store.registerDevice(
            userID: fixtures.bob, deviceID: Self.tablet, sessionID: nil,
            registration: registration([(.alert, tokens[0]), (.complication, tokens[2])]), now: fixtures.t0 + 1)
        XCTAssertEqual(try store.device(userID: fixtures.alice, id: Self.phone)?.pushTypes, [.background, .widgets])
        try db.read { c in try c.execute("CHECKPOINT") }
        let names = FileManager.default.enumerator(atPath: dataDir)?.compactMap { $0 as? String } ?? []
        var read = 0
        for name in names {
            guard let data = FileManager.default.contents(atPath: dataDir + "/" + name) else { continue }
            read += 1
            for token in tokens {
                for needle in [Array(hex(token).utf8), Array(hex(token).uppercased().utf8), token] {
                    XCTAssertFalse(Self.contains(data, needle), "\(name) holds a push token in plaintext")
                }
            }
        }
        XCTAssertTrue(names.contains { $0.hasPrefix("pg_wal/") }, "the WAL was read")
        XCTAssertGreaterThan(read, 100)
    }

    /// Whether `data` contains `needle` (Foundation's search: the cluster's files are tens of MiB).
    static func contains(_ data: Data, _ needle: [UInt8]) -> Bool {
        data.range(of: Data(needle)) != nil
    }

    /// `suplash-server reseal` on PostgreSQL moves push tokens to a new key with their blind
    /// indexes: a registration sealed under the new key alone still finds (and takes) the token.
    func testResealMovesTokensAndTheirBlindIndexesToTheNewKey() throws {
        let db = try PostgresTestSupport.migratedDatabase()
        fixtures.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try fixtures.makeUsers(store)
        _ = try store.registerDevice(
            userID: fixtures.alice, deviceID: Self.phone, sessionID: nil,
            registration: registration([(.alert, Self.registered), (.background, Self.registered)]), now: fixtures.t0)
        let dir = NSTemporaryDirectory() + "suplash-pg-reseal-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir + "/data", withIntermediateDirectories: true)
        fixtures.cleanups.append { try? FileManager.default.removeItem(atPath: dir) }
        func keyFile(_ name: String, _ bytes: [UInt8]) -> String {
            let path = dir + "/" + name
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
            return path
        }
        let newBytes = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: PostgresStartupTests.executable)
        p.arguments = ["reseal", "--data-dir", dir + "/data"]
        p.currentDirectoryURL = URL(fileURLWithPath: PostgresTestSupport.packageRoot)
        p.environment = ProcessInfo.processInfo.environment.merging([
            "SUPLASH_STORAGE_DRIVER": "postgres", "SUPLASH_STORAGE_POSTGRES_URL": try PostgresTestSupport.url(),
            "SUPLASH_SECURITY_SEALING_KEY_FILE": keyFile("new.key", newBytes),
            "SUPLASH_SECURITY_OLDER_SEALING_KEY_FILES": keyFile("old.key", TestSealing.keyBytes),
        ]) { $1 }
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        XCTAssertEqual(printed.trimmingCharacters(in: .whitespacesAndNewlines), "resealed 2 of 2 sealed values")

        let newRing = try XCTUnwrap(SealingKey(bytes: newBytes).flatMap { SealingKeyring(current: $0) })
        XCTAssertEqual(try store.sealedKeyIDs(), [newRing.currentKeyID])
        _ = try store.registerDevice(
            userID: fixtures.bob, deviceID: Self.tablet, sessionID: nil,
            registration: registration([]),
            tokens: PushTokenSealing.seal(
                [PushToken(pushType: .alert, token: Self.registered)], userID: fixtures.bob, deviceID: Self.tablet, keyring: newRing),
            now: fixtures.t0 + 1)
        XCTAssertEqual(try store.device(userID: fixtures.alice, id: Self.phone)?.pushTypes, [.background])
        XCTAssertEqual(try store.device(userID: fixtures.bob, id: Self.tablet)?.pushTypes, [.alert])
    }

    func testStartupSealingReadsPlaintextRowsInBatches() throws {
        let db = try PostgresTestSupport.migratedDatabase()
        fixtures.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try fixtures.makeUsers(store)
        for device in [Self.phone, Self.tablet] {
            _ = try store.registerDevice(
                userID: fixtures.alice, deviceID: device, sessionID: nil, registration: registration([]), now: fixtures.t0)
        }
        // Five rows as the version before sealing wrote them; the tablet's alert token is too
        // short to be an APNs token (kept unsealed by the batches, then deleted).
        var rows: [(String, String, [UInt8])] = []
        for (i, type) in ["alert", "background", "complication", "widgets"].enumerated() {
            rows.append((Self.phone, type, [UInt8](repeating: 0x10 + UInt8(i), count: 32)))
        }
        rows.append((Self.tablet, "alert", [0x01, 0x02]))
        try db.read { c in
            for (device, type, token) in rows {
                try c.execute(
                    "INSERT INTO device_tokens (user_id, device_id, push_type, token, registered_at) "
                        + "VALUES ('\(fixtures.alice)', '\(device)', '\(type)', '\\x\(hex(token))', 1)")
            }
        }
        // Batches of two, in key order, each continuing after the last key read.
        let first = try store.plaintextDeviceTokens(after: nil, limit: 2)
        XCTAssertEqual(first.map(\.pushType), [.alert, .background])
        let second = try store.plaintextDeviceTokens(after: first.last, limit: 2)
        XCTAssertEqual(second.map(\.pushType), [.complication, .widgets])
        let third = try store.plaintextDeviceTokens(after: second.last, limit: 2)
        XCTAssertEqual(third.map(\.deviceID), [Self.tablet])

        let outcome = try PushTokenSealing.sealStoredPlaintext(keyring: TestSealing.keyring, store: store, batchSize: 2)
        XCTAssertEqual(outcome, PushTokenSealing.StartupOutcome(sealed: 4, dropped: 1))
        XCTAssertEqual(try store.plaintextDeviceTokens(after: nil, limit: 100), [])
        XCTAssertEqual(
            try store.device(userID: fixtures.alice, id: Self.phone)?.pushTypes, [.alert, .background, .complication, .widgets])
        XCTAssertEqual(try store.device(userID: fixtures.alice, id: Self.tablet)?.pushTypes, [])
    }

    func testTokensAreSealedAndPlaintextRowsSealedAtStartup() throws {
        let db = try PostgresTestSupport.migratedDatabase()
        fixtures.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        let (alice, bob, t0) = (fixtures.alice, fixtures.bob, fixtures.t0)
        try fixtures.makeUsers(store)
        _ = try store.registerDevice(
            userID: alice, deviceID: Self.phone, sessionID: nil, registration: registration([(.widgets, Self.registered)]), now: t0)
        // A row as the version before sealing wrote it: plaintext bytes, no blind index.
        try db.read { c in
            try c.execute(
                "INSERT INTO device_tokens (user_id, device_id, push_type, token, registered_at) "
                    + "VALUES ('\(alice)', '\(Self.phone)', 'alert', '\\x\(hex(Self.legacy))', 1)")
        }
        XCTAssertEqual(try store.plaintextDeviceTokens(after: nil, limit: 100).map(\.token), [Self.legacy])

        let outcome = try PushTokenSealing.sealStoredPlaintext(keyring: TestSealing.keyring, store: store)
        XCTAssertEqual(outcome, PushTokenSealing.StartupOutcome(sealed: 1, dropped: 0))
        XCTAssertEqual(try store.plaintextDeviceTokens(after: nil, limit: 100), [])
        XCTAssertEqual(try store.sealedKeyIDs(), [TestSealing.keyring.currentKeyID])
        XCTAssertEqual(try store.device(userID: alice, id: Self.phone)?.pushTypes, [.alert, .widgets])

        // The sealed legacy token is found by its blind index: bob's tablet takes it.
        _ = try store.registerDevice(
            userID: bob, deviceID: Self.tablet, sessionID: nil, registration: registration([(.alert, Self.legacy)]), now: t0 + 1)
        XCTAssertEqual(try store.device(userID: alice, id: Self.phone)?.pushTypes, [.widgets])

        let bytes = try dump()
        XCTAssertNotNil(bytes.firstRange(of: Array("s1.".utf8)), "the dump holds the envelopes")
        for token in [Self.registered, Self.legacy] {
            for needle in [Array(hex(token).utf8), Array(hex(token).uppercased().utf8), token] {
                XCTAssertNil(bytes.firstRange(of: needle), "the dump holds a push token in plaintext")
            }
        }
    }
}
