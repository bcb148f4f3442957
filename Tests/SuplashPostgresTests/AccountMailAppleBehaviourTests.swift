import Foundation
import SuplashDomain
import SuplashPostgresStore
import SuplashSQLiteStore
import XCTest

/// Email codes, the outbox, Sign in with Apple, account export and erasure behave alike on
/// SQLite and PostgreSQL: one scenario, the same transcript.
final class AccountMailAppleBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & EmailCodeRepository & OutboxRepository & AppleIdentityRepository
        & AccountDataRepository & SyncRepository

    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    func scenario(_ store: Store) throws -> [String] {
        let alice = fixtures.alice
        let bob = fixtures.bob
        let t0 = fixtures.t0
        try fixtures.makeUsers(store)
        var transcript: [String] = []
        func record(_ label: String, _ body: () throws -> Any) {
            do {
                transcript.append("\(label): \(try body())")
            } catch {
                transcript.append("\(label): threw \(error)")
            }
        }
        func code(_ user: String, _ purpose: EmailCodePurpose, _ hash: UInt8, at: Int64) -> NewEmailCode {
            NewEmailCode(userID: user, purpose: purpose, codeHash: [hash], createdAt: at, expiresAt: at + 600_000)
        }
        func message(_ id: String, at: Int64) -> OutboxMessage {
            OutboxMessage(id: id, recipient: "alice@example.test", subject: "Your code", text: "123456", createdAt: at)
        }
        // Email codes and the outbox.
        record("issue") { try store.issueCode(code(alice, .verifyEmail, 1, at: t0), message: message("m1", at: t0), minIntervalMs: 60_000) }
        record("too soon") {
            try store.issueCode(code(alice, .verifyEmail, 2, at: t0 + 1_000), message: message("m2", at: t0 + 1_000), minIntervalMs: 60_000)
        }
        record("no user") { try store.issueCode(code("nobody", .verifyEmail, 1, at: t0), message: message("m3", at: t0), minIntervalMs: 0) }
        record("reissue") {
            try store.issueCode(
                code(alice, .verifyEmail, 3, at: t0 + 70_000), message: message("m4", at: t0 + 70_000),
                minIntervalMs: 60_000)
        }
        record("issue by email") {
            try store.issueCode(email: "bob@example.test", purpose: .resetPassword, now: t0, minIntervalMs: 60_000) { user in
                (
                    NewEmailCode(userID: user.profile.id, purpose: .resetPassword, codeHash: [7], createdAt: t0, expiresAt: t0 + 600_000),
                    OutboxMessage(id: "m5", recipient: user.profile.email, subject: "Reset", text: "654321", createdAt: t0)
                )
            }
        }
        record("issue by unknown email") {
            try store.issueCode(email: "nobody@example.test", purpose: .resetPassword, now: t0, minIntervalMs: 0) { _ in
                (
                    NewEmailCode(userID: "x", purpose: .resetPassword, codeHash: [], createdAt: t0, expiresAt: t0),
                    OutboxMessage(id: "m6", recipient: "", subject: "", text: "", createdAt: t0)
                )
            }
        }
        record("wrong") {
            try store.redeemCode(
                userID: alice, purpose: .verifyEmail, now: t0 + 80_000, maxAttempts: 3, matches: { $0 == [9] },
                redemption: .verifyEmail)
        }
        record("right") {
            try store.redeemCode(
                userID: alice, purpose: .verifyEmail, now: t0 + 80_000, maxAttempts: 3, matches: { $0 == [3] },
                redemption: .verifyEmail)
        }
        record("spent") {
            try store.redeemCode(
                userID: alice, purpose: .verifyEmail, now: t0 + 80_000, maxAttempts: 3, matches: { _ in true },
                redemption: .verifyEmail)
        }
        record("alice verified") { try store.user(id: alice)?.profile.emailVerified as Any }
        record("reset") {
            try store.redeemCode(
                userID: bob, purpose: .resetPassword, now: t0 + 5, maxAttempts: 3, matches: { $0 == [7] },
                redemption: .resetPassword(newPasswordHash: "$argon2id$new"))
        }
        record("bob password") { try store.user(id: bob)?.passwordHash as Any }
        record("due") { try store.dueMessages(now: t0 + 100_000, limit: 10).map(\.id) }
        record("next attempt") { try store.nextAttemptTime() as Any }
        try store.markDelivered(id: "m1", now: t0 + 100_001)
        try store.markAttemptFailed(
            id: "m4", attempts: 1, nextAttemptAt: t0 + 200_000, abandon: false, errorKind: "timeout",
            now: t0 + 100_001)
        try store.markAttemptFailed(id: "m5", attempts: 5, nextAttemptAt: 0, abandon: true, errorKind: "rejected", now: t0 + 100_001)
        record("due after") { try store.dueMessages(now: t0 + 100_002, limit: 10).map(\.id) }
        record("pending") { try store.pendingCount() }
        record("next attempt after") { try store.nextAttemptTime() as Any }

        // Sign in with Apple.
        func apple(_ sub: String, _ email: String, verified: Bool, id: String) throws -> String {
            let result = try store.signInWithApple(
                sub: sub, email: email, emailVerified: verified,
                newProfile: UserProfile(id: id, email: "", displayName: nil, now: t0 + 300),
                session:
                    NewSession(
                        id: "apple-\(sub)-\(id)", userID: "", refreshTokenHash: Array("\(sub)\(id)".utf8), createdAt: t0 + 300,
                        refreshExpiresAt: t0 + 9_000_000), now: t0 + 300)
            return
                "user=\(result.user.id) created=\(result.created) verified=\(result.user.emailVerified) v=\(result.user.version) revoked=\(result.revokedSessionIDs)"
        }
        record("apple new") { try apple("sub-1", "carol@example.test", verified: true, id: "01930000-0000-7000-8000-0000000000c1") }
        record("apple again") { try apple("sub-1", "carol@example.test", verified: true, id: "01930000-0000-7000-8000-0000000000c2") }
        record("apple unverified onto taken email") {
            try apple("sub-2", "alice@example.test", verified: false, id: "01930000-0000-7000-8000-0000000000c3")
        }
        _ = try store.createUser(
            UserProfile(
                id: "01930000-0000-7000-8000-0000000000d1", email: "dave@example.test", displayName: nil,
                now: t0), passwordHash: "$argon2id$squatter",
            session: fixtures.session("sd", "01930000-0000-7000-8000-0000000000d1", hash: 44))
        record("apple takes over an unverified account") {
            try apple("sub-3", "dave@example.test", verified: true, id: "01930000-0000-7000-8000-0000000000c4")
        }
        record("squatter password gone") { try store.user(id: "01930000-0000-7000-8000-0000000000d1")?.passwordHash as Any }

        // Export and erasure.
        _ = try store.createEntry(
            userID: alice, id: "e1",
            content: WaterEntryContent(
                amountMl: 250, loggedAt: t0, source: .phone,
                healthKitUUID: nil, note: nil),
            deviceID: nil, now: t0)
        record("export") {
            guard let e = try store.exportAccount(userID: alice) else { return "nil" }
            return "\(e.profile.email) entries=\(e.entries.map(\.id)) days=\(e.days.count) bills=\(e.bills.count) total=\(e.achievements.totalMl)"
        }
        record("export unknown") { try store.exportAccount(userID: "nobody") as Any }
        record("erase") { try store.eraseAccount(userID: alice, now: t0 + 400) }
        record("erase again") { try store.eraseAccount(userID: alice, now: t0 + 401) }
        record("erased since") { try store.accountsErased(since: t0 + 400) }
        record("gone") { try store.user(id: alice) as Any }
        record("feed of the erased") { try store.changes(userID: alice, after: 0, limit: 10, includeTombstones: true).changes.count }
        return transcript
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try fixtures.sqliteStore().0)
        XCTAssertTrue(sqlite.contains("too soon: tooSoon(retryAfterMs: 59000)"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("erase: true"), "\(sqlite)")
        XCTAssertFalse(sqlite.contains { $0.contains("threw") && !$0.hasPrefix("apple unverified") }, "\(sqlite)")
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try fixtures.postgresStore().0)
        XCTAssertEqual(postgres.count, sqlite.count)
        for (s, p) in zip(sqlite, postgres) { XCTAssertEqual(p, s) }
    }

    /// An Apple takeover changes the profile (verified, no password, new change position): the
    /// user's long polls are woken, as for every other profile write.
    func testAppleTakeoverWakesTheUsersLongPolls() throws {
        let dave = "01930000-0000-7000-8000-0000000000d1"
        let t0 = fixtures.t0
        func wakes(_ store: Store, _ changed: Locked<[String]>) throws -> [String] {
            _ = try store.createUser(
                UserProfile(id: dave, email: "dave@example.test", displayName: nil, now: t0),
                passwordHash: "$argon2id$squatter", session: fixtures.session("sd", dave, hash: 44))
            _ = fixtures.settled(changed) { $0.contains(dave) }
            changed.withLock { $0 = [] }
            let result = try store.signInWithApple(
                sub: "sub-3", email: "dave@example.test", emailVerified: true,
                newProfile: UserProfile(id: "01930000-0000-7000-8000-0000000000c4", email: "", displayName: nil, now: t0),
                session: fixtures.session("apple", "", hash: 45), now: t0 + 300)
            XCTAssertEqual(result.revokedSessionIDs, ["sd"], "a takeover")
            return fixtures.settled(changed) { $0.contains(dave) }
        }
        let (sqlite, sqliteWakes) = try fixtures.sqliteStore()
        XCTAssertEqual(try wakes(sqlite, sqliteWakes), [dave])
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let (postgres, postgresWakes) = try fixtures.postgresStore()
        XCTAssertEqual(try wakes(postgres, postgresWakes), [dave])
    }
}

/// Admin counts agree on both stores (except the database size, which is engine-specific).
final class OperationsBehaviourTests: XCTestCase {
    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    func counts(_ store: AccountAndEntryStore & OperationsRepository) throws -> String {
        try fixtures.makeUsers(store)
        let t0 = fixtures.t0
        for (i, user) in [fixtures.alice, fixtures.alice, fixtures.bob].enumerated() {
            _ = try store.createEntry(
                userID: user, id: "e\(i)",
                content: WaterEntryContent(
                    amountMl: 100, loggedAt: t0, source: .phone,
                    healthKitUUID: nil, note: nil),
                deviceID: nil, now: t0 + Int64(i) * 100_000_000)
        }
        let stats = try store.adminStats(dayStart: t0 + 150_000_000, thirtyDaysAgo: t0 - 1)
        XCTAssertGreaterThan(stats.databaseBytes, 0)
        return "users=\(stats.users) today=\(stats.activeUsersToday) 30d=\(stats.activeUsers30d) entriesToday=\(stats.entriesToday)"
    }

    func testSameCountsOnSQLiteAndPostgres() throws {
        let sqlite = try counts(try fixtures.sqliteStore().0)
        XCTAssertEqual(sqlite, "users=2 today=1 30d=2 entriesToday=1")
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let store = try fixtures.postgresStore().0
        XCTAssertEqual(try counts(store), sqlite)
        let path = NSTemporaryDirectory() + "suplash-pg-backup-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertGreaterThan(try store.backup(to: path), 0)
        XCTAssertThrowsError(try store.backup(to: path), "an existing file is not overwritten") {
            XCTAssertEqual($0 as? RepositoryError, .unavailable)
        }
    }
}
