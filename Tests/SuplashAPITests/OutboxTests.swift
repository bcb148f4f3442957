import Foundation
import SuplashAPI
import SuplashCrypto
import SuplashDomain
import SuplashLogging
import SuplashSQLiteStore
import SuplashStorage
import XCTest

/// A transport that fails a scripted number of times per message, then succeeds; it
/// counts successful deliveries per message id.
final class FakeTransport: MailTransport, @unchecked Sendable {
    // Guarded by `lock`.
    private var failuresLeft: Int
    private let failure: MailDeliveryError
    private var deliveredIDs: [String: Int] = [:]
    private var texts: [String] = []
    private var calls = 0
    private let lock = NSLock()

    init(failFirst: Int, with failure: MailDeliveryError = .temporary(kind: "http_503")) {
        failuresLeft = failFirst
        self.failure = failure
    }

    var deliveries: [String: Int] { lock.withLock { deliveredIDs } }
    var attempts: Int { lock.withLock { calls } }
    var deliveredTexts: [String] { lock.withLock { texts } }

    func deliver(_ message: OutboxMessage) throws(MailDeliveryError) {
        let fail: Bool = lock.withLock {
            calls += 1
            if failuresLeft > 0 {
                failuresLeft -= 1
                return true
            }
            deliveredIDs[message.id, default: 0] += 1
            texts.append(message.text)
            return false
        }
        if fail { throw failure }
    }
}

/// A settable clock (ms).
final class ManualClock: @unchecked Sendable {
    // Guarded by `lock`.
    private var value: Int64
    private let lock = NSLock()
    init(_ start: Int64) { value = start }
    var now: Int64 { lock.withLock { value } }
    func advance(_ ms: Int64) { lock.withLock { value += ms } }
}

/// Email codes and the outbox on a real SQLite store with an injected clock.
final class OutboxTests: XCTestCase {
    let t0: Int64 = 1_800_000_000_000
    let quiet = Logger(minimumLevel: .error)

    func makeStore() throws -> (SQLiteStore, SQLiteDatabase, UserProfile) {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        try Migrator.migrate(db, try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite"))
        let store = SQLiteStore(database: db)
        var profile = UserProfile(
            id: UUIDText.version7(unixMillis: t0, random: SecureRandom.bytes(10)),
            email: "user@example.test", displayName: nil, now: t0)
        profile.locale = "en-US"
        let session = NewSession(
            id: "s-1", userID: profile.id, refreshTokenHash: SHA256.hash([1]), createdAt: t0,
            refreshExpiresAt: t0 + 86_400_000)
        let stored = try store.createUser(profile, passwordHash: "$argon2id$placeholder", session: session)
        return (store, db, stored)
    }

    func codeIn(_ store: SQLiteStore, now: Int64) throws -> String {
        let due = try store.dueMessages(now: now, limit: 100)
        return try XCTUnwrap(due.last.flatMap { MailFiles.sixDigits($0.text).last })
    }

    func testCodesAreHashedCountedAndExpire() throws {
        let (store, db, user) = try makeStore()
        defer { db.close() }
        let wakes = ManualClock(0)
        let codes = EmailCodes(repository: store, key: SecureRandom.bytes(32), logger: quiet, wake: { wakes.advance(1) })

        XCTAssertEqual(try codes.issue(for: user, purpose: .verifyEmail, now: t0), .issued)
        XCTAssertEqual(wakes.now, 1, "the worker is woken after the commit")
        let code = try codeIn(store, now: t0)
        XCTAssertTrue(EmailCodes.isWellFormed(code))
        // Stored as a MAC: 32 bytes, never the digits.
        let stored = try db.read { c in try c.query("SELECT code_hash FROM email_codes", []) }
        XCTAssertEqual(stored.count, 1)
        if case .blob(let hash) = stored[0]["code_hash"] {
            XCTAssertEqual(hash, codes.hash(code: code, userID: user.id, purpose: .verifyEmail))
            XCTAssertNotEqual(hash, codes.hash(code: code, userID: user.id, purpose: .resetPassword), "bound to the purpose")
            XCTAssertFalse(hexString(hash).contains(code))
        } else {
            XCTFail("code_hash is not a blob")
        }
        // One code per minute.
        XCTAssertEqual(try codes.issue(for: user, purpose: .verifyEmail, now: t0 + 30_000), .tooSoon(retryAfterMs: 30_000))
        XCTAssertEqual(try codes.issue(for: user, purpose: .resetPassword, now: t0 + 30_000), .issued, "per purpose")

        let wrong = code == "000000" ? "000001" : "000000"
        XCTAssertEqual(
            try codes.redeem(
                userID: user.id, purpose: .verifyEmail, code: wrong, now: t0 + 1000,
                redemption: .verifyEmail), .wrong(attemptsLeft: 4))
        // Expiry at exactly 10 minutes.
        XCTAssertEqual(
            try codes.redeem(
                userID: user.id, purpose: .verifyEmail, code: code, now: t0 + 600_000,
                redemption: .verifyEmail), .expired)
        XCTAssertEqual(
            try codes.redeem(
                userID: user.id, purpose: .verifyEmail, code: code, now: t0 + 600_001,
                redemption: .verifyEmail), .noCode, "an expired code is deleted")

        // A new code: five attempts, then void.
        let t1 = t0 + 700_000
        XCTAssertEqual(try codes.issue(for: user, purpose: .verifyEmail, now: t1), .issued)
        let code2 = try codeIn(store, now: t1)
        let wrong2 = code2 == "000000" ? "000001" : "000000"
        for left in stride(from: 4, through: 0, by: -1) {
            XCTAssertEqual(
                try codes.redeem(
                    userID: user.id, purpose: .verifyEmail, code: wrong2, now: t1 + 1,
                    redemption: .verifyEmail), .wrong(attemptsLeft: left))
        }
        XCTAssertEqual(
            try codes.redeem(
                userID: user.id, purpose: .verifyEmail, code: code2, now: t1 + 2,
                redemption: .verifyEmail), .noCode)

        // A right code within its life is consumed once and marks the email verified.
        let t2 = t1 + 120_000
        XCTAssertEqual(try codes.issue(for: user, purpose: .verifyEmail, now: t2), .issued)
        let code3 = try codeIn(store, now: t2)
        XCTAssertEqual(
            try codes.redeem(
                userID: user.id, purpose: .verifyEmail, code: code3, now: t2 + 599_999,
                redemption: .verifyEmail), .redeemed(revokedSessionIDs: []))
        XCTAssertEqual(
            try codes.redeem(
                userID: user.id, purpose: .verifyEmail, code: code3, now: t2 + 599_999,
                redemption: .verifyEmail), .noCode)
        XCTAssertEqual(try store.user(id: user.id)?.profile.emailVerified, true)
    }

    func testResetRedemptionSetsThePasswordAndRevokesSessionsInOneTransaction() throws {
        let (store, db, user) = try makeStore()
        defer { db.close() }
        let codes = EmailCodes(repository: store, key: SecureRandom.bytes(32), logger: quiet, wake: {})
        XCTAssertEqual(try codes.issue(for: user, purpose: .resetPassword, now: t0), .issued)
        let code = try codeIn(store, now: t0)
        let outcome = try codes.redeem(
            userID: user.id, purpose: .resetPassword, code: code, now: t0 + 5,
            redemption: .resetPassword(newPasswordHash: "$argon2id$new"))
        XCTAssertEqual(outcome, .redeemed(revokedSessionIDs: ["s-1"]))
        XCTAssertEqual(try store.user(id: user.id)?.passwordHash, "$argon2id$new")
        XCTAssertEqual(try store.sessionsRevoked(since: t0), ["s-1"])
    }

    func testIssueByEmailFindsTheUserInsideTheTransaction() throws {
        let (store, db, user) = try makeStore()
        defer { db.close() }
        let codes = EmailCodes(repository: store, key: SecureRandom.bytes(32), logger: quiet, wake: {})
        codes.requestPasswordReset(email: "nobody@example.test", now: t0)
        codes.requestPasswordReset(email: user.email, now: t0)
        codes.drainBackgroundWork()
        let due = try store.dueMessages(now: t0, limit: 10)
        XCTAssertEqual(due.map(\.recipient), [user.email])
        XCTAssertEqual(due.first?.subject, "Your Suplash password reset code", "the profile locale is en-US")
    }

    /// The claim is written once for both engines: on SQLite too a claimed message is leased,
    /// so it is not handed out again before the lease ends (a worker that died mid-send).
    func testClaimLeasesMessagesOldestFirstUntilTheLeaseEnds() throws {
        let (store, db, user) = try makeStore()
        defer { db.close() }
        for (id, at) in [("m-2", t0 + 2), ("m-1", t0 + 1), ("m-3", t0 + 3)] {
            let code = NewEmailCode(
                userID: user.id, purpose: id == "m-1" ? .verifyEmail : .resetPassword, codeHash: [1],
                createdAt: at, expiresAt: at + 600_000)
            let message = OutboxMessage(id: id, recipient: user.email, subject: "Code", text: "123456", createdAt: at)
            _ = try store.issueCode(code, message: message, minIntervalMs: 0)
        }
        let now = t0 + 10
        XCTAssertEqual(try store.claimDueMessages(now: now, limit: 2, leaseMs: 60_000).map(\.id), ["m-1", "m-2"])
        XCTAssertEqual(try store.claimDueMessages(now: now, limit: 10, leaseMs: 60_000).map(\.id), ["m-3"])
        XCTAssertEqual(try store.claimDueMessages(now: now + 59_999, limit: 10, leaseMs: 60_000).count, 0, "leased")
        XCTAssertEqual(try store.nextAttemptTime(), now + 60_000)
        try store.markDelivered(id: "m-1", now: now + 1)
        XCTAssertEqual(try store.claimDueMessages(now: now + 60_000, limit: 10, leaseMs: 60_000).map(\.id), ["m-2", "m-3"])
    }

    func testBackoffDoublesWithJitterUpToTheCap() {
        let policy = OutboxRetryPolicy()
        XCTAssertEqual(policy.delay(afterAttempt: 1, random: { _ in 0 }), 1_000)
        XCTAssertEqual(policy.delay(afterAttempt: 1, random: { $0 }), 2_000)
        XCTAssertEqual(policy.delay(afterAttempt: 2, random: { $0 }), 4_000)
        XCTAssertEqual(policy.delay(afterAttempt: 5, random: { _ in 0 }), 16_000)
        XCTAssertEqual(policy.delay(afterAttempt: 12, random: { $0 }), 3_600_000, "capped at 1 h")
        XCTAssertEqual(policy.delay(afterAttempt: 500, random: { $0 }), 3_600_000, "no overflow")
        XCTAssertEqual(policy.delay(afterAttempt: 3, random: { _ in 10_000_000 }), 8_000, "jitter is clamped")
    }

    func testRetriesWithBackoffThenDeliversExactlyOnce() throws {
        let (store, db, user) = try makeStore()
        defer { db.close() }
        let clock = ManualClock(t0)
        let transport = FakeTransport(failFirst: 2)
        let worker = OutboxWorker(repository: store, transport: transport, logger: quiet, clock: { clock.now }, random: { $0 })
        let codes = EmailCodes(repository: store, key: SecureRandom.bytes(32), logger: quiet, wake: {})
        XCTAssertEqual(try codes.issue(for: user, purpose: .verifyEmail, now: t0), .issued)
        XCTAssertEqual(try store.pendingCount(), 1)

        XCTAssertEqual(worker.deliverDue(), 1)  // attempt 1 fails: retry after 2 s
        XCTAssertEqual(try store.nextAttemptTime(), t0 + 2_000)
        XCTAssertEqual(worker.deliverDue(), 0, "not due yet")
        clock.advance(1_999)
        XCTAssertEqual(worker.deliverDue(), 0)
        clock.advance(1)
        XCTAssertEqual(worker.deliverDue(), 1)  // attempt 2 fails: retry after 4 s
        XCTAssertEqual(try store.nextAttemptTime(), t0 + 2_000 + 4_000)
        clock.advance(4_000)
        XCTAssertEqual(worker.deliverDue(), 1)  // attempt 3 succeeds
        XCTAssertEqual(transport.attempts, 3)
        XCTAssertEqual(Array(transport.deliveries.values), [1], "exactly one delivery")
        XCTAssertEqual(try store.pendingCount(), 0)
        XCTAssertNil(try store.nextAttemptTime())
        clock.advance(86_400_000)
        XCTAssertEqual(worker.deliverDue(), 0, "a delivered message is never sent again")
        XCTAssertEqual(transport.attempts, 3)
        let row = try db.read { c in try c.query("SELECT attempts, body, delivered_at FROM outbox", []) }
        XCTAssertEqual(row.first?["attempts"], .integer(2))
        XCTAssertEqual(row.first?["body"], .text(""), "the body (with its code) is cleared once delivered")
        XCTAssertEqual(row.first?["delivered_at"], .integer(t0 + 6_000))
    }

    func testPermanentFailureAndTheLastAttemptAbandon() throws {
        let (store, db, user) = try makeStore()
        defer { db.close() }
        let clock = ManualClock(t0)
        let permanent = FakeTransport(failFirst: 1, with: .permanent(kind: "http_422"))
        let worker = OutboxWorker(repository: store, transport: permanent, logger: quiet, clock: { clock.now }, random: { $0 })
        let codes = EmailCodes(repository: store, key: SecureRandom.bytes(32), logger: quiet, wake: {})
        XCTAssertEqual(try codes.issue(for: user, purpose: .verifyEmail, now: t0), .issued)
        XCTAssertEqual(worker.deliverDue(), 1)
        XCTAssertEqual(try store.pendingCount(), 0, "a permanent error abandons the message")
        clock.advance(86_400_000)
        XCTAssertEqual(worker.deliverDue(), 0)

        var policy = OutboxRetryPolicy()
        policy.maxAttempts = 2
        let flaky = FakeTransport(failFirst: 10)
        let limited = OutboxWorker(
            repository: store, transport: flaky, policy: policy, logger: quiet, clock: { clock.now },
            random: { $0 })
        XCTAssertEqual(try codes.issue(for: user, purpose: .resetPassword, now: clock.now), .issued)
        XCTAssertEqual(limited.deliverDue(), 1)
        clock.advance(2_000)
        XCTAssertEqual(limited.deliverDue(), 1)
        XCTAssertEqual(try store.pendingCount(), 0, "abandoned after maxAttempts")
        let failed = try db.read { c in try c.query("SELECT last_error, body FROM outbox WHERE failed_at IS NOT NULL", []) }
        XCTAssertEqual(failed.count, 2)
        XCTAssertTrue(failed.allSatisfy { $0["body"] == .text("") })
    }

    func testTheWorkerThreadWakesOnCommitAndSurvivesARestart() throws {
        let (store, db, user) = try makeStore()
        defer { db.close() }
        // Messages committed while no worker runs (a crash, a restart) are delivered by the next one.
        let codes = EmailCodes(repository: store, key: SecureRandom.bytes(32), logger: quiet, wake: {})
        XCTAssertEqual(try codes.issue(for: user, purpose: .resetPassword, now: Int64(Date().timeIntervalSince1970 * 1000)), .issued)
        let transport = FakeTransport(failFirst: 0)
        var policy = OutboxRetryPolicy()
        policy.scanIntervalMs = 60_000  // so only a wake-up explains a prompt delivery below
        let worker = OutboxWorker(repository: store, transport: transport, policy: policy, logger: quiet)
        worker.start()
        defer { worker.stop() }
        let deadline = Date(timeIntervalSinceNow: 20)
        while transport.deliveries.count < 1 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        XCTAssertEqual(transport.deliveries.count, 1, "pending mail is delivered at start-up")

        let woken = EmailCodes(repository: store, key: SecureRandom.bytes(32), logger: quiet, wake: { worker.wake() })
        let started = Date()
        XCTAssertEqual(try woken.issue(for: user, purpose: .verifyEmail, now: Int64(Date().timeIntervalSince1970 * 1000)), .issued)
        let id = try XCTUnwrap(
            try db.read { c in
                try c.query("SELECT id FROM outbox ORDER BY created_at DESC, id DESC LIMIT 1", []).first?["id"]
            })
        guard case .text(let messageID) = id else { return XCTFail("no message id") }
        XCTAssertTrue(worker.waitForAttempt(id: messageID, timeoutSeconds: 20))
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "woken by the commit, not by the 60 s rescan")
        XCTAssertEqual(transport.deliveries[messageID], 1)
        XCTAssertEqual(transport.deliveries.values.reduce(0, +), 2)
    }
}
