import Foundation
import SuplashDomain
import SuplashPostgresStore
import SuplashSQLiteStore
import XCTest

/// Sign in with Apple's lifecycle in the store (docs/apple.md): sealed refresh tokens, revoke
/// jobs queued by the erasure and claimed like an outbox, Apple's account events applied once,
/// mail held for a relay address — the same transcript on SQLite and PostgreSQL, and on
/// PostgreSQL two concurrent claims never get one job.
final class AppleLifecycleBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & AppleIdentityRepository & AccountDataRepository & AppleRevokeJobRepository
        & SealedValueRepository & AppleAccountEventRepository & EmailCodeRepository & OutboxRepository

    let fixtures = StoreFixtures()
    let carol = "01930000-0000-7000-8000-0000000000c1"
    let dan = "01930000-0000-7000-8000-0000000000c2"

    override func tearDown() {
        fixtures.close()
    }

    func scenario(_ store: Store) throws -> [String] {
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
        var sessions = 0
        func signIn(_ sub: String, _ id: String, _ email: String, sealed: String?) throws -> String {
            sessions += 1
            let r = try store.signInWithApple(
                sub: sub, email: email, emailVerified: true,
                newProfile: UserProfile(id: id, email: "", displayName: nil, now: t0),
                session: fixtures.session("s-\(sub)-\(sessions)", "", hash: UInt8(100 + sessions)),
                appleToken: sealed.map { AppleRefreshToken(clientID: "app.suplash.ios", sealed: $0) }, now: t0)
            return "user=\(r.user.id) created=\(r.created)"
        }
        let old = "s1.0123456789abcdef.AAAA"
        let new = "s1.fedcba9876543210.BBBB"
        record("sign in with a token") { try signIn("sub-c", carol, "carol@privaterelay.appleid.com", sealed: old) }
        record("key ids") { try store.sealedKeyIDs().sorted() }
        let values = try store.sealedValues()
        record("values") { values.map { "\($0.table)/\($0.rowKey) \($0.contextTable).\($0.contextColumn)#\($0.contextRowID) \($0.envelope)" } }
        record("reseal") { try store.replaceSealedValue(values[0], with: new, blindIndex: nil) }
        record("reseal a changed row") { try store.replaceSealedValue(values[0], with: old, blindIndex: nil) }
        record("key ids after") { try store.sealedKeyIDs().sorted() }

        // Erasure queues a revoke job holding the sealed token; the account is gone.
        record("erase") { try store.eraseAccount(userID: carol, now: t0 + 100) }
        record("counts") { try store.revokeJobCounts() }
        record("job values") { try store.sealedValues().map { "\($0.table)/\($0.rowKey)#\($0.contextRowID) \($0.envelope)" } }
        record("next") { try store.nextRevokeAttemptTime() as Any }
        let jobs = try store.claimDueRevokeJobs(now: t0 + 100, limit: 10, leaseMs: 60_000)
        record("claim") { jobs.map { "\($0.id) \($0.sub) \($0.clientID) \($0.sealedRefreshToken) \($0.attempts)" } }
        record("leased") { try store.claimDueRevokeJobs(now: t0 + 101, limit: 10, leaseMs: 60_000).count }
        try store.recordRevokeAttempt(id: jobs[0].id, attempts: 1, outcome: .retry(nextAttemptAt: t0 + 5_000, errorCode: "other"), now: t0)
        record("not yet") { try store.claimDueRevokeJobs(now: t0 + 4_999, limit: 10, leaseMs: 60_000).count }
        record("retried") { try store.claimDueRevokeJobs(now: t0 + 5_000, limit: 10, leaseMs: 60_000).map(\.attempts) }
        try store.recordRevokeAttempt(id: jobs[0].id, attempts: 2, outcome: .done, now: t0 + 5_001)
        record("done counts") { try store.revokeJobCounts() }
        record("token blanked") { try store.sealedValues().count }

        // Account events, each once by jti.
        record("dan") { try signIn("sub-d", dan, "dan@privaterelay.appleid.com", sealed: old) }
        record("consent revoked") { try store.applyAppleEvent(jti: "j1", event: .consentRevoked(sub: "sub-d"), now: t0 + 200) }
        record("duplicate") { try store.applyAppleEvent(jti: "j1", event: .consentRevoked(sub: "sub-d"), now: t0 + 201) }
        record("unknown") { try store.applyAppleEvent(jti: "j2", event: .consentRevoked(sub: "nobody"), now: t0 + 202) }
        record("token forgotten") { try store.sealedValues().count }
        record("sign in again") { try signIn("sub-d", "01930000-0000-7000-8000-0000000000c9", "", sealed: old) }
        let relay = "dan@privaterelay.appleid.com"
        record("disable") {
            try store.applyAppleEvent(jti: "j3", event: .emailDisabled(sub: "sub-d", email: relay, eventTime: t0 + 300), now: t0 + 300)
        }
        record("queue mail") {
            try store.issueCode(
                NewEmailCode(userID: dan, purpose: .verifyEmail, codeHash: [1], createdAt: t0 + 301, expiresAt: t0 + 900_000),
                message: OutboxMessage(id: "m-held", recipient: relay, subject: "Code", text: "123456", createdAt: t0 + 301),
                minIntervalMs: 0)
        }
        record("held") { try store.claimDueMessages(now: t0 + 400, limit: 10, leaseMs: 1_000).map(\.id) }
        record("enable") {
            try store.applyAppleEvent(jti: "j4", event: .emailEnabled(sub: "sub-d", email: relay, eventTime: t0 + 500), now: t0 + 500)
        }
        record("released") { try store.claimDueMessages(now: t0 + 500, limit: 10, leaseMs: 1_000).map(\.id) }
        // Apple's retry of an older `email-disabled` arrives after the `email-enabled`: no hold.
        record("stale disable") {
            try store.applyAppleEvent(jti: "j4b", event: .emailDisabled(sub: "sub-d", email: relay, eventTime: t0 + 450), now: t0 + 510)
        }
        record("queue after stale") {
            try store.issueCode(
                NewEmailCode(userID: dan, purpose: .verifyEmail, codeHash: [2], createdAt: t0 + 511, expiresAt: t0 + 900_000),
                message: OutboxMessage(id: "m-after", recipient: relay, subject: "Code", text: "654321", createdAt: t0 + 511),
                minIntervalMs: 0)
        }
        record("not held") { try store.claimDueMessages(now: t0 + 520, limit: 10, leaseMs: 1_000).map(\.id) }
        record("account delete") { try store.applyAppleEvent(jti: "j5", event: .accountDelete(sub: "sub-d"), now: t0 + 600) }
        record("gone") { try store.user(id: dan) as Any }
        record("no revoke job") { try store.revokeJobCounts() }

        // Retention: ended revoke jobs, old jtis, code mail past its code's expiry (held or not).
        let (eve, frank) = ("01930000-0000-7000-8000-0000000000c3", "01930000-0000-7000-8000-0000000000c4")
        record("eve") { try signIn("sub-e", eve, "eve@privaterelay.appleid.com", sealed: old) }
        record("erase eve") { try store.eraseAccount(userID: eve, now: t0 + 700) }
        record("purge before the end") { try store.purgeRevokeJobs(endedBefore: t0 + 5_001) }
        record("purge ended") { try store.purgeRevokeJobs(endedBefore: t0 + 10_000_000) }
        record("pending stays") { try store.revokeJobCounts() }
        record("forget events") { try store.forgetAppleEvents(receivedBefore: t0 + 500) }
        record("forgotten jti applies") { try store.applyAppleEvent(jti: "j1", event: .consentRevoked(sub: "nobody"), now: t0 + 800) }
        let frankRelay = "frank@privaterelay.appleid.com"
        record("frank") { try signIn("sub-f", frank, frankRelay, sealed: nil) }
        record("frank disabled") {
            try store.applyAppleEvent(
                jti: "j6", event: .emailDisabled(sub: "sub-f", email: frankRelay, eventTime: t0 + 900), now: t0 + 900)
        }
        record("queue held code") {
            try store.issueCode(
                NewEmailCode(userID: frank, purpose: .verifyEmail, codeHash: [3], createdAt: t0 + 901, expiresAt: t0 + 1_000),
                message: OutboxMessage(id: "m-expiring", recipient: frankRelay, subject: "Code", text: "111111", createdAt: t0 + 901),
                minIntervalMs: 0)
        }
        record("held before expiry") { try store.claimDueMessages(now: t0 + 950, limit: 10, leaseMs: 1_000).map(\.id) }
        record("drop before expiry") { try store.dropExpiredMessages(now: t0 + 999) }
        record("drop expired held") { try store.dropExpiredMessages(now: t0 + 1_000) }
        record("frank enabled") {
            try store.applyAppleEvent(
                jti: "j7", event: .emailEnabled(sub: "sub-f", email: frankRelay, eventTime: t0 + 1_100), now: t0 + 1_100)
        }
        record("nothing released") { try store.claimDueMessages(now: t0 + 1_100, limit: 10, leaseMs: 1_000).map(\.id) }
        let pendingBefore = try store.pendingCount()
        record("queue short code") {
            try store.issueCode(
                NewEmailCode(userID: frank, purpose: .verifyEmail, codeHash: [4], createdAt: t0 + 1_101, expiresAt: t0 + 1_200),
                message: OutboxMessage(id: "m-short", recipient: frankRelay, subject: "Code", text: "222222", createdAt: t0 + 1_101),
                minIntervalMs: 0)
        }
        record("claim drops expired") { try store.claimDueMessages(now: t0 + 1_200, limit: 10, leaseMs: 1_000).map(\.id) }
        record("short code deleted") { try store.pendingCount() == pendingBefore }
        return transcript
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try fixtures.sqliteStore().0)
        XCTAssertFalse(sqlite.contains { $0.contains("threw") }, "\(sqlite)")
        XCTAssertTrue(sqlite.contains("key ids: [\"0123456789abcdef\"]"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("reseal: true") && sqlite.contains("reseal a changed row: false"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("counts: (pending: 1, failed: 0)"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("claim: [\"\(fixtures.t0 + 100).sub-c sub-c app.suplash.ios s1.fedcba9876543210.BBBB 0\"]"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("leased: 0") && sqlite.contains("retried: [1]"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("done counts: (pending: 0, failed: 0)") && sqlite.contains("token blanked: 0"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains { $0.hasPrefix("consent revoked: sessionsRevoked(userID: \"\(dan)\"") }, "\(sqlite)")
        XCTAssertTrue(sqlite.contains("duplicate: duplicate") && sqlite.contains("unknown: unknownAccount"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("sign in again: user=\(dan) created=false"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("held: []") && sqlite.contains("released: [\"m-held\"]"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("stale disable: mailHold(held: false)") && sqlite.contains("not held: [\"m-after\"]"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("account delete: accountErased(userID: \"\(dan)\")"), "\(sqlite)")
        XCTAssertTrue(sqlite.contains("gone: nil") && sqlite.contains("no revoke job: (pending: 0, failed: 0)"), "\(sqlite)")
        for line in [
            "purge before the end: 0", "purge ended: 1", "pending stays: (pending: 1, failed: 0)", "forget events: 3",
            "forgotten jti applies: unknownAccount", "frank disabled: mailHold(held: true)", "held before expiry: []",
            "drop before expiry: 0", "drop expired held: 1", "nothing released: []", "claim drops expired: []", "short code deleted: true",
        ] {
            XCTAssertTrue(sqlite.contains(line), "\(line) in \(sqlite)")
        }
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try fixtures.postgresStore().0)
        XCTAssertEqual(postgres.count, sqlite.count)
        for (s, p) in zip(sqlite, postgres) { XCTAssertEqual(p, s) }
    }

    /// Two instances claiming at once get disjoint jobs (`FOR UPDATE SKIP LOCKED`).
    func testConcurrentClaimsNeverShareAJobOnPostgres() throws {
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set")
        }
        let (store, _) = try fixtures.postgresStore()
        let t0 = fixtures.t0
        for i in 0..<20 {
            let id = String(format: "01930000-0000-7000-8000-0000000001%02d", i)
            _ = try store.signInWithApple(
                sub: "sub-\(i)", email: "u\(i)@example.test", emailVerified: true,
                newProfile: UserProfile(id: id, email: "", displayName: nil, now: t0),
                session: fixtures.session("s\(i)", "", hash: UInt8(i + 1)),
                appleToken: AppleRefreshToken(clientID: "app", sealed: "s1.0123456789abcdef.T\(i)"), now: t0)
            XCTAssertTrue(try store.eraseAccount(userID: id, now: t0 + Int64(i)))
        }
        let claimed = Locked([[String]]())
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let ids = (try? store.claimDueRevokeJobs(now: t0 + 100, limit: 8, leaseMs: 60_000).map(\.id)) ?? []
            claimed.withLock { $0.append(ids) }
        }
        let all = claimed.withLock { $0 }.flatMap { $0 }
        XCTAssertEqual(all.count, Set(all).count, "no job was claimed twice: \(claimed.withLock { $0 })")
        XCTAssertEqual(all.count, 20, "every due job was claimed once")
    }
}
