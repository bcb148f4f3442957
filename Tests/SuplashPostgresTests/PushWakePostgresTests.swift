import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import XCTest

/// The sender's wake-up across instances on PostgreSQL (docs/push.md, "Sender"): a server whose
/// sender polls once an hour still sends at once a push that another instance (here a store
/// object of the test, on the same database) queued — the commit's `NOTIFY suplash_pushes`
/// reaches the server's cluster listener. Needs both `scripts/with-postgres` and
/// `scripts/with-apns-mock`; skipped otherwise. Waits on the mock's request log, never on a time.
final class PushWakePostgresTests: XCTestCase {
    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    func testAPushQueuedByAnotherInstanceWakesTheSender() throws {
        guard let mock = ProcessInfo.processInfo.environment["SUPLASH_TEST_APNS_MOCK"], !mock.isEmpty else {
            throw XCTSkip("SUPLASH_TEST_APNS_MOCK is not set (run under scripts/with-apns-mock)")
        }
        let url = try PostgresTestSupport.url()
        try PostgresTestSupport.freshDatabase(poolSize: 1).close()
        let data = try XCTUnwrap(FileManager.default.contents(atPath: mock + "/mock.json"))
        let info = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        func text(_ key: String) throws -> String { try XCTUnwrap(info[key].map { "\($0)" }, key) }
        let bundle = try XCTUnwrap((info["bundleIds"] as? [Any])?.first.map { "\($0)" })
        let requestLog = try text("requestLog")
        let dataDir = NSTemporaryDirectory() + "suplash-pg-wake-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        fixtures.cleanups.append { try? FileManager.default.removeItem(atPath: dataDir) }

        let server = Process()
        server.executableURL = URL(fileURLWithPath: PostgresStartupTests.executable)
        server.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir]
        server.currentDirectoryURL = URL(fileURLWithPath: PostgresTestSupport.packageRoot)
        var env = ProcessInfo.processInfo.environment
        env["SUPLASH_STORAGE_DRIVER"] = "postgres"
        env["SUPLASH_STORAGE_POSTGRES_URL"] = url
        env["SUPLASH_STORAGE_POSTGRES_POOL_SIZE"] = "2"
        env["SUPLASH_APNS_KEY_FILE"] = try text("keyFile")
        env["SUPLASH_APNS_KEY_ID"] = try (try? text("keyId")) ?? text("keyID")
        env["SUPLASH_APNS_TEAM_ID"] = try text("teamId")
        env["SUPLASH_APNS_PRODUCTION_URL"] = "https://127.0.0.1:\(try text("productionPort"))"
        env["SUPLASH_APNS_SANDBOX_URL"] = "https://localhost:\(try text("sandboxPort"))"
        env["SUPLASH_APNS_CA_FILE"] = try text("caFile")
        env["SUPLASH_APNS_BUNDLE_IDS"] = bundle
        env["SUPLASH_APNS_POLL_INTERVAL_MS"] = "3600000"  // only a wake-up can send within the test
        // The key the test's store seals tokens with (`TestSealing`), so the server opens them.
        let sealingKey = dataDir + ".sealing-key"
        XCTAssertTrue(
            FileManager.default.createFile(
                atPath: sealingKey, contents: Data(TestSealing.keyBytes), attributes: [.posixPermissions: 0o600]))
        fixtures.cleanups.append { try? FileManager.default.removeItem(atPath: sealingKey) }
        env["SUPLASH_SECURITY_SEALING_KEY_FILE"] = sealingKey
        server.environment = env
        let out = Pipe()
        server.standardOutput = out
        server.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try server.run()
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        XCTAssertTrue(String(decoding: line, as: UTF8.self).contains("listening on"), "the server did not start")

        // Another instance: a store object of this process on the same (now migrated) database.
        let db = try PostgresDatabase(url: url, poolSize: 2)
        fixtures.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try fixtures.makeUsers(store)
        let watch = "0193d000-0000-4000-8000-0000000000a2"
        let token = [UInt8](repeating: 0xF7, count: 32)
        _ = try store.registerDevice(
            userID: fixtures.alice, deviceID: watch, sessionID: nil,
            registration: DeviceRegistration(
                platform: .watchos, bundleID: bundle, environment: .production, locale: nil, appVersion: nil,
                tokens: [PushToken(pushType: .background, token: token)]),
            now: fixtures.t0)
        _ = try store.createBill(
            userID: fixtures.alice, id: "b1",
            content: BillContent(
                provider: "ISKI", subscriberNo: "1", period: YearMonth(parsing: "2026-01") ?? LocalDate(dayNumber: 0).yearMonth,
                consumptionMilliM3: 12_000, amountMinor: 50_000,
                dueDate: LocalDate(parsing: "2026-02-10") ?? LocalDate(dayNumber: 0)),
            deviceID: nil, now: fixtures.t0)

        let hex = token.map { String(format: "%02x", $0) }.joined()
        let deadline = Date(timeIntervalSinceNow: 120)  // a bound against a hang only
        var sent = false
        while !sent && Date() < deadline {
            let log = (try? String(contentsOfFile: requestLog, encoding: .utf8)) ?? ""
            sent = log.contains("\"token\":\"\(hex)\"")
            if !sent { Thread.sleep(forTimeInterval: 0.05) }
        }
        XCTAssertTrue(sent, "the push queued by another instance never reached the mock")
    }
}
