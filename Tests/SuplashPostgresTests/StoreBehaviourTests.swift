import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQLiteStore
import SuplashStorage
import XCTest

/// The repositories the PostgreSQL adapter implements so far.
typealias AccountAndEntryStore = UserRepository & SessionRepository & AdminKeyRepository & WaterEntryRepository

/// One set of behavioural checks, run against SQLite (always) and PostgreSQL (when
/// `SUPLASH_TEST_POSTGRES_URL` is set): the two adapters must answer alike.
/// Stores for the behavioural checks, and the data they share.
final class StoreFixtures {
    var cleanups: [() -> Void] = []

    /// Closes what the stores opened.
    func close() {
        cleanups.forEach { $0() }
        cleanups = []
    }

    func sqliteStore() throws -> (SQLiteStore, changedUsers: Locked<[String]>) {
        let dir = NSTemporaryDirectory() + "suplash-pg-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        cleanups.append {
            db.close()
            try? FileManager.default.removeItem(atPath: dir)
        }
        try Migrator.migrate(db, try Migrator.load(directory: PostgresTestSupport.packageRoot + "/Migrations/sqlite"))
        let store = SQLiteStore(database: db)
        let changed = Locked([String]())
        store.changeNotifier.subscribe { user in changed.withLock { $0.append(user) } }
        return (store, changed)
    }

    func postgresStore() throws -> (PostgresStore, changedUsers: Locked<[String]>) {
        let db = try PostgresTestSupport.migratedDatabase()
        cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        let changed = Locked([String]())
        store.changeNotifier.subscribe { user in changed.withLock { $0.append(user) } }
        return (store, changed)
    }

    /// The wake-ups once `done` holds (waits up to 2 s for post-commit callbacks).
    func settled(_ wakes: Locked<[String]>, _ done: ([String]) -> Bool) -> [String] {
        let deadline = Date(timeIntervalSinceNow: 2)
        while !done(wakes.current) && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        Thread.sleep(forTimeInterval: 0.02)
        return wakes.current
    }

    let t0: Int64 = 1_790_000_000_000
    let alice = "01930000-0000-7000-8000-00000000000a"
    let bob = "01930000-0000-7000-8000-00000000000b"

    func session(_ id: String, _ user: String, hash: UInt8, expires: Int64 = 1_800_000_000_000) -> NewSession {
        NewSession(
            id: id, userID: user, refreshTokenHash: [UInt8](repeating: hash, count: 32), createdAt: t0,
            refreshExpiresAt: expires)
    }

    func makeUsers(_ store: AccountAndEntryStore) throws {
        _ = try store.createUser(
            UserProfile(id: alice, email: "alice@example.test", displayName: "Alice", now: t0),
            passwordHash: "$argon2id$a", session: session("sa", alice, hash: 1))
        _ = try store.createUser(
            UserProfile(id: bob, email: "bob@example.test", displayName: nil, now: t0),
            passwordHash: "$argon2id$b", session: session("sb", bob, hash: 2))
    }

}

final class StoreBehaviourTests: XCTestCase {
    let fixtures = StoreFixtures()
    var t0: Int64 { fixtures.t0 }
    var alice: String { fixtures.alice }
    var bob: String { fixtures.bob }
    func session(_ id: String, _ user: String, hash: UInt8, expires: Int64 = 1_800_000_000_000) -> NewSession {
        fixtures.session(id, user, hash: hash, expires: expires)
    }
    func makeUsers(_ store: AccountAndEntryStore) throws { try fixtures.makeUsers(store) }
    func settled(_ wakes: Locked<[String]>, _ done: ([String]) -> Bool) -> [String] { fixtures.settled(wakes, done) }
    func sqliteStore() throws -> (AccountAndEntryStore, changedUsers: Locked<[String]>) {
        let (store, changed) = try fixtures.sqliteStore()
        return (store, changed)
    }
    func postgresStore() throws -> (AccountAndEntryStore, changedUsers: Locked<[String]>) {
        let (store, changed) = try fixtures.postgresStore()
        return (store, changed)
    }

    override func tearDown() {
        fixtures.close()
    }

    // MARK: - The same checks on both stores

    func testAccountsOnSQLite() throws { try checkAccounts(try sqliteStore()) }
    func testAccountsOnPostgres() throws { try checkAccounts(try postgresStore()) }
    func testSessionsOnSQLite() throws { try checkSessions(try sqliteStore().0) }
    func testSessionsOnPostgres() throws { try checkSessions(try postgresStore().0) }
    func testAdminKeysOnSQLite() throws { try checkAdminKeys(try sqliteStore().0) }
    func testAdminKeysOnPostgres() throws { try checkAdminKeys(try postgresStore().0) }
    func testEntriesOnSQLite() throws { try checkEntries(try sqliteStore()) }
    func testEntriesOnPostgres() throws { try checkEntries(try postgresStore()) }

    func checkAccounts(_ subject: (AccountAndEntryStore, changedUsers: Locked<[String]>)) throws {
        let store = subject.0
        try makeUsers(store)
        XCTAssertEqual(settled(subject.changedUsers) { $0.count >= 2 }, [alice, bob])
        XCTAssertThrowsError(
            try store.createUser(
                UserProfile(
                    id: "01930000-0000-7000-8000-0000000000cc",
                    email: "alice@example.test", displayName: nil, now: t0),
                passwordHash: "x", session: session("sc", "x", hash: 3))
        ) {
            XCTAssertEqual($0 as? RepositoryError, .emailTaken)
        }
        let a = try XCTUnwrap(try store.user(id: alice))
        XCTAssertEqual(a.passwordHash, "$argon2id$a")
        XCTAssertEqual(a.profile.displayName, "Alice")
        XCTAssertEqual(a.profile.version, 1)
        XCTAssertEqual(try store.user(email: "bob@example.test")?.profile.id, bob)
        XCTAssertNil(try store.user(email: "carol@example.test"))
        XCTAssertNil(try store.user(id: "nobody"))

        let updated = try store.updateProfile(userID: alice, now: t0 + 5) { p in
            var p = p
            p.weightKg = 61.5
            p.cupSizesMl = [200, 330]
            p.email = "ignored@example.test"
            return p
        }
        XCTAssertEqual(updated.version, 2)
        XCTAssertEqual(updated.updatedAt, t0 + 5)
        XCTAssertEqual(updated.email, "alice@example.test")
        let reread = try XCTUnwrap(try store.user(id: alice)).profile
        XCTAssertEqual(reread.weightKg, 61.5)
        XCTAssertEqual(reread.cupSizesMl, [200, 330])
        XCTAssertEqual(reread.version, 2)
        XCTAssertThrowsError(try store.updateProfile(userID: "nobody", now: t0) { $0 }) {
            XCTAssertEqual($0 as? RepositoryError, .notFound)
        }
        struct Refused: Error {}
        XCTAssertThrowsError(try store.updateProfile(userID: alice, now: t0 + 6) { _ in throw Refused() })
        XCTAssertEqual(try store.user(id: alice)?.profile.version, 2)

        XCTAssertEqual(try store.listUsers(email: nil, afterID: nil, limit: 10).map(\.id), [alice, bob])
        XCTAssertEqual(try store.listUsers(email: nil, afterID: alice, limit: 10).map(\.id), [bob])
        XCTAssertEqual(try store.listUsers(email: nil, afterID: nil, limit: 1).map(\.id), [alice])
        XCTAssertEqual(try store.listUsers(email: "bob@example.test", afterID: nil, limit: 10).map(\.id), [bob])
        XCTAssertEqual(try store.listUsers(email: "carol@example.test", afterID: nil, limit: 10).map(\.id), [])
    }

    func checkSessions(_ store: AccountAndEntryStore) throws {
        try makeUsers(store)
        let h1 = [UInt8](repeating: 1, count: 32)
        let h1b = [UInt8](repeating: 11, count: 32)
        let h1c = [UInt8](repeating: 12, count: 32)
        XCTAssertEqual(
            try store.rotateRefreshToken(hash: h1, newHash: h1b, now: t0 + 1, newExpiresAt: t0 + 100),
            .rotated(sessionID: "sa", userID: alice))
        XCTAssertEqual(
            try store.rotateRefreshToken(hash: h1b, newHash: h1c, now: t0 + 2, newExpiresAt: t0 + 100),
            .rotated(sessionID: "sa", userID: alice))
        // The spent token again: the family is revoked, and its newest token is dead too.
        XCTAssertEqual(
            try store.rotateRefreshToken(hash: h1, newHash: [9], now: t0 + 3, newExpiresAt: t0 + 100),
            .reused(sessionID: "sa", userID: alice))
        XCTAssertEqual(try store.rotateRefreshToken(hash: h1c, newHash: [8], now: t0 + 4, newExpiresAt: t0 + 100), .revoked)
        XCTAssertEqual(try store.rotateRefreshToken(hash: [7, 7], newHash: [6], now: t0, newExpiresAt: t0), .unknown)
        XCTAssertEqual(try store.sessionsRevoked(since: t0 + 3), ["sa"])
        XCTAssertEqual(try store.sessionsRevoked(since: t0 + 4), [])

        try store.createSession(session("sx", bob, hash: 40, expires: t0 + 10))
        XCTAssertEqual(
            try store.rotateRefreshToken(
                hash: [UInt8](repeating: 40, count: 32), newHash: [41], now: t0 + 10,
                newExpiresAt: t0 + 20), .expired)
        XCTAssertEqual(try store.revokeSession(refreshTokenHash: [UInt8](repeating: 2, count: 32), now: t0 + 7), "sb")
        XCTAssertNil(try store.revokeSession(refreshTokenHash: [5], now: t0 + 7))
        XCTAssertFalse(try store.revokeSession(id: "sx", userID: alice, now: t0 + 8))
        XCTAssertTrue(try store.revokeSession(id: "sx", userID: bob, now: t0 + 8))
        XCTAssertEqual(Set(try store.sessionsRevoked(since: t0 + 7)), ["sb", "sx"])
    }

    func checkAdminKeys(_ store: AccountAndEntryStore) throws {
        try store.createAdminKey(name: "ops", keyHash: [1, 2, 3], now: t0)
        try store.createAdminKey(name: "ci", keyHash: [4, 5, 6], now: t0 + 1)
        XCTAssertThrowsError(try store.createAdminKey(name: "ops", keyHash: [9], now: t0 + 2)) {
            XCTAssertEqual($0 as? RepositoryError, .conflict(code: "admin_key_exists"))
        }
        XCTAssertEqual(
            try store.adminKeys(),
            [
                AdminKeyRecord(name: "ops", createdAt: t0, revokedAt: nil),
                AdminKeyRecord(name: "ci", createdAt: t0 + 1, revokedAt: nil),
            ])
        XCTAssertTrue(try store.revokeAdminKey(name: "ops", now: t0 + 3))
        XCTAssertFalse(try store.revokeAdminKey(name: "ops", now: t0 + 4))
        XCTAssertFalse(try store.revokeAdminKey(name: "none", now: t0 + 4))
        XCTAssertEqual(try store.adminKeys().first?.revokedAt, t0 + 3)
        let active = try store.activeAdminKeyHashes()
        XCTAssertEqual(active.map(\.name), ["ci"])
        XCTAssertEqual(active.map(\.hash), [[4, 5, 6]])
    }

    func content(_ ml: Int, at: Int64, hk: String? = nil, note: String? = nil, source: EntrySource = .phone) -> WaterEntryContent {
        WaterEntryContent(amountMl: ml, loggedAt: at, source: source, healthKitUUID: hk, note: note)
    }

    func checkEntries(_ subject: (AccountAndEntryStore, changedUsers: Locked<[String]>)) throws {
        let store = subject.0
        try makeUsers(store)
        let e1 = content(250, at: t0, note: "it's \"quoted\" 💧")
        guard
            case .created(let created) = try store.createEntry(
                userID: alice, id: "e1", content: e1, deviceID: "phone",
                now: t0 + 1)
        else { return XCTFail("not created") }
        XCTAssertEqual(created.version, 1)
        XCTAssertEqual(
            try store.createEntry(userID: alice, id: "e1", content: e1, deviceID: "phone", now: t0 + 2),
            .existing(created))
        XCTAssertThrowsError(
            try store.createEntry(
                userID: alice, id: "e1", content: content(300, at: t0), deviceID: nil,
                now: t0 + 2)
        ) {
            XCTAssertEqual($0 as? RepositoryError, .conflict(code: "entry_exists"))
        }
        // HealthKit dedupe: another id with the same live sample → the existing entry.
        guard
            case .created(let hkEntry) = try store.createEntry(
                userID: alice, id: "hk1",
                content: content(100, at: t0 + 10, hk: "HK-1", source: .watch),
                deviceID: "watch", now: t0 + 3)
        else { return XCTFail() }
        XCTAssertEqual(
            try store.createEntry(
                userID: alice, id: "hk2", content: content(100, at: t0 + 10, hk: "HK-1"),
                deviceID: "phone", now: t0 + 4), .existing(hkEntry))
        XCTAssertNil(try store.entry(userID: alice, id: "hk2"))
        // The same sample for another user is independent.
        guard
            case .created = try store.createEntry(
                userID: bob, id: "hk1", content: content(100, at: t0 + 10, hk: "HK-1"),
                deviceID: nil, now: t0 + 4)
        else { return XCTFail() }
        XCTAssertThrowsError(try store.createEntry(userID: "nobody", id: "x", content: e1, deviceID: nil, now: t0)) {
            XCTAssertEqual($0 as? RepositoryError, .notFound)
        }

        XCTAssertEqual(try store.entry(userID: alice, id: "e1"), created)
        XCTAssertNil(try store.entry(userID: bob, id: "e1"))

        // Update: precondition, version, HealthKit uniqueness.
        XCTAssertThrowsError(
            try store.updateEntry(
                userID: alice, id: "e1", deviceID: nil, now: t0 + 5,
                precondition: { $0.version == 7 }, { $0 })
        ) {
            XCTAssertEqual($0 as? RepositoryError, .preconditionFailed)
        }
        XCTAssertThrowsError(
            try store.updateEntry(
                userID: alice, id: "e1", deviceID: nil, now: t0 + 5,
                precondition: { _ in true },
                { c in
                    var c = c
                    c.healthKitUUID = "HK-1"
                    return c
                })
        ) {
            XCTAssertEqual($0 as? RepositoryError, .conflict(code: "health_kit_uuid_exists"))
        }
        let updated = try store.updateEntry(
            userID: alice, id: "e1", deviceID: "phone", now: t0 + 6,
            precondition: { $0.version == 1 },
            { c in
                var c = c
                c.amountMl = 330
                return c
            })
        XCTAssertEqual(updated.version, 2)
        XCTAssertEqual(updated.updatedAt, t0 + 6)
        XCTAssertEqual(try store.entry(userID: alice, id: "e1")?.content.amountMl, 330)
        XCTAssertThrowsError(
            try store.updateEntry(
                userID: alice, id: "nope", deviceID: nil, now: t0,
                precondition: { _ in true }, { $0 })
        ) {
            XCTAssertEqual($0 as? RepositoryError, .notFound)
        }

        // Delete → tombstone: invisible, not re-creatable, not deletable twice.
        XCTAssertThrowsError(
            try store.deleteEntry(
                userID: alice, id: "hk1", deviceID: nil, now: t0 + 7,
                precondition: { _ in false })
        ) {
            XCTAssertEqual($0 as? RepositoryError, .preconditionFailed)
        }
        try store.deleteEntry(userID: alice, id: "hk1", deviceID: "watch", now: t0 + 7, precondition: { _ in true })
        XCTAssertNil(try store.entry(userID: alice, id: "hk1"))
        XCTAssertThrowsError(
            try store.deleteEntry(
                userID: alice, id: "hk1", deviceID: nil, now: t0 + 8,
                precondition: { _ in true })
        ) {
            XCTAssertEqual($0 as? RepositoryError, .notFound)
        }
        XCTAssertThrowsError(
            try store.createEntry(
                userID: alice, id: "hk1", content: content(100, at: t0 + 10, hk: "HK-1"),
                deviceID: nil, now: t0 + 9)
        ) {
            XCTAssertEqual($0 as? RepositoryError, .conflict(code: "entry_deleted"))
        }
        // The sample is free again once its entry is a tombstone.
        guard
            case .created = try store.createEntry(
                userID: alice, id: "hk3", content: content(100, at: t0 + 10, hk: "HK-1"),
                deviceID: nil, now: t0 + 9)
        else { return XCTFail() }

        // Keyset list, newest first (loggedAt desc, id desc), with range and cursor.
        for (i, id) in ["k1", "k2", "k3", "k4", "k5"].enumerated() {
            _ = try store.createEntry(
                userID: alice, id: id, content: content(100 + i, at: t0 + 1_000 + Int64(i / 2)),
                deviceID: nil, now: t0 + 20)
        }
        let all = try store.listEntries(userID: alice, from: nil, to: nil, after: nil, limit: 100).map(\.id)
        XCTAssertEqual(all, ["k5", "k4", "k3", "k2", "k1", "hk3", "e1"])
        var pages: [[String]] = []
        var cursor: EntryCursor?
        repeat {
            let page = try store.listEntries(userID: alice, from: nil, to: nil, after: cursor, limit: 2)
            pages.append(page.map(\.id))
            cursor = page.count == 2 ? page.last.map { EntryCursor(loggedAt: $0.content.loggedAt, id: $0.id) } : nil
        } while cursor != nil
        XCTAssertEqual(pages, [["k5", "k4"], ["k3", "k2"], ["k1", "hk3"], ["e1"]])
        XCTAssertEqual(
            try store.listEntries(userID: alice, from: t0 + 10, to: t0 + 1_001, after: nil, limit: 10).map(\.id),
            ["k2", "k1", "hk3"])
        XCTAssertEqual(try store.listEntries(userID: bob, from: nil, to: nil, after: nil, limit: 10).map(\.id), ["hk1"])

        // Every synced write woke the owner's long polls, after its commit.
        // (SQLite runs the callbacks on its writer thread just after the write returns.)
        let wakes = settled(subject.changedUsers) { $0.count >= 13 }
        XCTAssertEqual(wakes.filter { $0 == bob }.count, 2)  // account + one entry
        XCTAssertEqual(wakes.filter { $0 == alice }.count, 1 + 1 + 1 + 1 + 1 + 1 + 5)
    }
}
