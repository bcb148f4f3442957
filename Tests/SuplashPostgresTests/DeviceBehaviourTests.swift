import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQL
import SuplashSQLiteStore
import XCTest

/// The device registry (spec §9 "Devices") behaves alike on SQLite and PostgreSQL, keeps its
/// rules under concurrent registrations on PostgreSQL, and costs the round trips it promises.
final class DeviceBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & DeviceRepository & AccountDataRepository

    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    static let phone = "0193d000-0000-4000-8000-000000000001"
    static let watch = "0193d000-0000-4000-8000-000000000002"
    static let tablet = "0193d000-0000-4000-8000-000000000003"
    static let app = [UInt8](repeating: 0xA1, count: 32)
    static let widget = [UInt8](repeating: 0xB2, count: 32)
    static let complication = [UInt8](repeating: 0xC3, count: 32)

    func registration(
        _ platform: DevicePlatform = .ios, _ tokens: [(PushType, [UInt8])], locale: String? = "tr-TR"
    ) -> DeviceRegistration {
        DeviceRegistration(
            platform: platform, bundleID: platform == .watchos ? "app.suplash.ios.watchkitapp" : "app.suplash.ios",
            environment: .production, locale: locale, appVersion: "1.4.2",
            tokens: tokens.map { PushToken(pushType: $0.0, token: $0.1) })
    }

    func describe(_ d: Device?) -> String {
        guard let d else { return "none" }
        return "\(d.id.suffix(2)) \(d.platform) \(d.bundleID) \(d.environment) \(d.locale ?? "-") \(d.appVersion ?? "-") "
            + "\(d.pushTypes.map(\.rawValue)) c=\(d.createdAt - fixtures.t0) u=\(d.updatedAt - fixtures.t0) "
            + "seen=\(d.lastSeenAt - fixtures.t0)"
    }

    func describe(_ o: DeviceRegisterOutcome) -> String {
        switch o {
        case .created(let d): "created " + describe(d)
        case .replaced(let d): "replaced " + describe(d)
        }
    }

    func scenario(_ store: Store) throws -> [String] {
        let (alice, bob, t0) = (fixtures.alice, fixtures.bob, fixtures.t0)
        try fixtures.makeUsers(store)
        var transcript: [String] = []
        func record(_ label: String, _ body: () throws -> String) {
            do {
                transcript.append("\(label): \(try body())")
            } catch {
                transcript.append("\(label): threw \(error)")
            }
        }
        func list(_ user: String) throws -> String { try store.devices(userID: user).map(describe).joined(separator: " | ") }
        func register(_ user: String, _ device: String, _ session: String?, _ r: DeviceRegistration, at: Int64) throws -> String {
            describe(try store.registerDevice(userID: user, deviceID: device, sessionID: session, registration: r, now: t0 + at))
        }

        record("phone") {
            try register(alice, Self.phone, "sa", registration(.ios, [(.alert, Self.app), (.background, Self.app), (.widgets, Self.widget)]), at: 0)
        }
        record("phone again") { try register(alice, Self.phone, "sa", registration(.ios, [(.alert, Self.app)], locale: nil), at: 10) }
        record("watch") { try register(alice, Self.watch, "sa", registration(.watchos, [(.complication, Self.complication)]), at: 20) }
        record("alice") { try list(alice) }
        record("unknown user") { try register("nobody", Self.phone, nil, registration(.ios, []), at: 30) }
        // The phone signs in to Bob's account: the app token moves.
        record("bob phone") { try register(bob, Self.phone, "sb", registration(.ios, [(.alert, Self.app), (.background, Self.app)]), at: 40) }
        record("alice after move") { try list(alice) }
        record("bob") { describe(try store.device(userID: bob, id: Self.phone)) }
        record("no such device") { describe(try store.device(userID: bob, id: Self.watch)) }
        // Bob's session logs out: its devices lose their tokens; registering with it again
        // stores none; an admin registration (no session) keeps them.
        record("bob logout") { "\(try store.revokeSession(id: "sb", userID: bob, now: t0 + 50))" }
        record("bob after logout") { try list(bob) }
        record("revoked session registers") {
            try register(bob, Self.phone, "sb", registration(.ios, [(.alert, Self.app)]), at: 60)
        }
        record("admin registers") { try register(bob, Self.tablet, nil, registration(.ipados, [(.alert, Self.widget)]), at: 70) }
        record("alice logout by refresh token") {
            "\(try store.revokeSession(refreshTokenHash: [UInt8](repeating: 1, count: 32), now: t0 + 80) ?? "nil")"
        }
        record("alice after logout") { try list(alice) }
        record("bob keeps the admin's") { try list(bob) }
        // Twenty more devices for Alice: the two oldest go.
        for i in 0..<20 {
            let id = String(format: "0193e000-0000-4000-8000-%012d", i)
            record("extra \(i)") {
                try register(alice, id, nil, registration(.ios, [(.widgets, [UInt8(i), 1, 2, 3, 4, 5, 6, 7])]), at: 100 + Int64(i))
            }
        }
        record("alice has 20") { "\(try store.devices(userID: alice).count) phone=\(describe(try store.device(userID: alice, id: Self.phone)))" }
        record("watch evicted") { describe(try store.device(userID: alice, id: Self.watch)) }
        record("delete") { "\(try store.deleteDevice(userID: alice, id: "0193e000-0000-4000-8000-000000000019"))" }
        record("delete again") { "\(try store.deleteDevice(userID: alice, id: "0193e000-0000-4000-8000-000000000019"))" }
        record("export") { "\(try store.exportAccount(userID: alice) != nil)" }
        record("erase") { "\(try store.eraseAccount(userID: alice, now: t0 + 200))" }
        record("alice erased") { try list(alice) }
        // The widget token Alice's extra device 0 held is free for Bob now.
        record("bob after erasure") { try list(bob) }
        return transcript
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try fixtures.sqliteStore().0)
        let expected = [
            "phone: created 01 ios app.suplash.ios production tr-TR 1.4.2 [\"alert\", \"background\", \"widgets\"] c=0 u=0 seen=0",
            "phone again: replaced 01 ios app.suplash.ios production - 1.4.2 [\"alert\"] c=0 u=10 seen=10",
            "unknown user: threw notFound",
            "bob phone: created 01 ios app.suplash.ios production tr-TR 1.4.2 [\"alert\", \"background\"] c=40 u=40 seen=40",
            "bob logout: true",
            "bob after logout: 01 ios app.suplash.ios production tr-TR 1.4.2 [] c=40 u=40 seen=40",
            "revoked session registers: replaced 01 ios app.suplash.ios production tr-TR 1.4.2 [] c=40 u=60 seen=60",
            "alice logout by refresh token: sa",
            "watch evicted: none",
            "delete: true",
            "delete again: false",
            "erase: true",
            "alice erased: ",
        ]
        for line in expected { XCTAssertTrue(sqlite.contains(line), "\(line)\n\(sqlite.joined(separator: "\n"))") }
        XCTAssertTrue(sqlite.contains { $0.hasPrefix("alice after move: ") && $0.contains("01 ios app.suplash.ios production - 1.4.2 [] ") })
        XCTAssertTrue(sqlite.contains { $0.hasPrefix("alice after logout: ") && !$0.contains("complication") })
        XCTAssertTrue(sqlite.contains("alice has 20: 20 phone=none"), sqlite.joined(separator: "\n"))
        XCTAssertTrue(sqlite.contains { $0.hasPrefix("bob after erasure: ") && $0.contains("03 ipados") && $0.contains("[\"alert\"]") })
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try fixtures.postgresStore().0)
        XCTAssertEqual(postgres.count, sqlite.count)
        for (s, p) in zip(sqlite, postgres) { XCTAssertEqual(p, s) }
    }

    /// Thirty new devices of one account registered at once: the user lock orders them, and
    /// exactly twenty remain.
    func testConcurrentRegistrationsKeepTwentyDevices() throws {
        let store = try fixtures.postgresStore().0
        try fixtures.makeUsers(store)
        let failures = Locked(0)
        let (alice, t0) = (fixtures.alice, fixtures.t0)
        let registrations = (0..<30).map { registration(.ios, [(.alert, [UInt8($0), 9, 9, 9, 9, 9, 9, 9])]) }
        DispatchQueue.concurrentPerform(iterations: 30) { i in
            do {
                _ = try store.registerDevice(
                    userID: alice, deviceID: String(format: "0193f000-0000-4000-8000-%012d", i), sessionID: "sa",
                    registration: registrations[i], now: t0 + Int64(i))
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        XCTAssertEqual(failures.current, 0)
        XCTAssertEqual(try store.devices(userID: fixtures.alice).count, DeviceRules.maxDevicesPerUser)
        XCTAssertEqual(try count(store, "SELECT count(*) FROM device_tokens WHERE user_id = $1", [.text(fixtures.alice)]), 20)
    }

    /// One token registered by several accounts at once ends on exactly one device.
    func testConcurrentRegistrationsOfOneTokenLeaveItOnOneDevice() throws {
        let store = try fixtures.postgresStore().0
        try fixtures.makeUsers(store)
        let users = (0..<8).map { String(format: "0193a000-0000-7000-8000-%012d", $0) }
        for (i, user) in users.enumerated() {
            _ = try store.createUser(
                UserProfile(id: user, email: "u\(i)@example.test", displayName: nil, now: fixtures.t0),
                passwordHash: "$argon2id$x", session: fixtures.session("s\(i)", user, hash: UInt8(10 + i)))
        }
        let failures = Locked(0)
        let (shared, now) = (registration(.ios, [(.alert, Self.app), (.background, Self.app)]), fixtures.t0 + 1)
        DispatchQueue.concurrentPerform(iterations: users.count) { i in
            do {
                _ = try store.registerDevice(
                    userID: users[i], deviceID: Self.phone, sessionID: "s\(i)", registration: shared, now: now)
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        XCTAssertEqual(failures.current, 0)
        XCTAssertEqual(try count(store, "SELECT count(*) FROM devices", []), Int64(users.count))
        XCTAssertEqual(try count(store, "SELECT count(DISTINCT user_id) FROM device_tokens", []), 1)
        XCTAssertEqual(try count(store, "SELECT count(*) FROM device_tokens", []), 2)
    }

    /// A registration is one round trip before its commit (the user lock, the device and the
    /// session read in one pipeline; the writes queued with the commit); a logout costs the same
    /// with devices registered as without (the token removal is queued).
    func testRoundTrips() throws {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        fixtures.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try fixtures.makeUsers(store)
        func roundTrips(_ body: () throws -> Void) throws -> Int {
            let before = try db.read { $0.roundTrips }
            try body()
            return try db.read { $0.roundTrips } - before
        }
        func register(_ device: String, _ session: String, _ tokens: [(PushType, [UInt8])], at: Int64) throws {
            _ = try store.registerDevice(
                userID: fixtures.alice, deviceID: device, sessionID: session, registration: registration(.ios, tokens),
                now: fixtures.t0 + at)
        }
        for id in ["sc", "sd", "se"] { try store.createSession(fixtures.session(id, fixtures.alice, hash: UInt8(id.utf8.last ?? 0))) }
        // Warm-up: every statement prepared once (a first use prepares, one round trip more).
        try register(Self.tablet, "sc", [(.alert, Self.widget)], at: 0)
        try register(Self.tablet, "sc", [(.alert, Self.widget)], at: 1)
        try store.revokeSession(id: "sc", userID: fixtures.alice, now: fixtures.t0 + 2)

        let new = try roundTrips { try register(Self.phone, "sd", [(.alert, Self.app), (.background, Self.app), (.widgets, Self.widget)], at: 3) }
        let again = try roundTrips { try register(Self.phone, "sd", [], at: 4) }
        XCTAssertEqual(
            new, 3,
            "the pipeline (with BEGIN), the reminder plan's reads (an alert token can receive reminders), then the queued writes with COMMIT")
        XCTAssertEqual(again, 2, "no alert token: no plan; the number of tokens and eviction cost no round trip")
        try register(Self.phone, "sd", [(.alert, Self.app)], at: 5)
        let withDevices = try roundTrips { try store.revokeSession(id: "sd", userID: fixtures.alice, now: fixtures.t0 + 6) }
        let withoutDevices = try roundTrips { try store.revokeSession(id: "se", userID: fixtures.alice, now: fixtures.t0 + 6) }
        XCTAssertEqual(withDevices, withoutDevices, "the token removal travels with the logout's commit")
        XCTAssertEqual(try store.device(userID: fixtures.alice, id: Self.phone)?.pushTypes, [])
    }

    func count(_ store: PostgresStore, _ sql: String, _ args: [SQLValue]) throws -> Int64? {
        try store.database.read { c in try c.query(sql, args).first?[0].int64 }
    }
}
