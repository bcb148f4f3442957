import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import XCTest

/// Email codes, the outbox and Idempotency-Key claims, written once over both engines, send
/// PostgreSQL the statements of the tuned path (each `query`/`execute` one round trip, queued
/// writes none, `BEGIN` with the first statement, `COMMIT` with the position stamp), and the
/// admin figures take two: round trips counted on a pool of one connection.
final class MailRoundTripTests: XCTestCase {
    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    func testEmailCodeOutboxAndIdempotencyRoundTrips() throws {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        fixtures.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try fixtures.makeUsers(store)
        let t0 = fixtures.t0
        for (id, email) in [("01930000-0000-7000-8000-00000000000c", "carol"), ("01930000-0000-7000-8000-00000000000d", "dave")] {
            _ = try store.createUser(
                UserProfile(id: id, email: email + "@example.test", displayName: nil, now: t0), passwordHash: "$argon2id$x",
                session: fixtures.session("s" + email, id, hash: email == "carol" ? 3 : 4))
        }
        // The first pass prepares each statement on the connection (a round trip each); the
        // second, on other users and keys, counts the statements alone.
        _ = try pass(store, db, fixtures.alice, fixtures.bob, "bob", tag: "1")
        let counted = try pass(
            store, db, "01930000-0000-7000-8000-00000000000c", "01930000-0000-7000-8000-00000000000d", "dave", tag: "2")
        // BEGIN travels with the first statement; COMMIT (with the position stamp) is one more.
        XCTAssertEqual(
            counted,
            [
                "issue": 5, "too soon": 3, "issue by email": 5, "verify": 5, "reset": 7, "claim": 2, "delivered": 2,
                "failed": 2, "idempotency claim": 1, "idempotency running": 2, "idempotency complete": 1,
                "idempotency abandon": 1, "idempotency save": 2, "idempotency record": 1, "admin stats": 2,
            ])
    }

    /// Round trips of each use case for users `a` and `b` (`b`'s email is `bName@example.test`),
    /// with message ids and idempotency callers marked `tag`.
    func pass(_ store: PostgresStore, _ db: PostgresDatabase, _ a: String, _ b: String, _ bName: String, tag: String) throws
        -> [String: Int]
    {
        let t0 = fixtures.t0
        func trips(_ body: () throws -> Void) throws -> Int {
            let before = try db.read { $0.roundTrips }
            try body()
            return try db.read { $0.roundTrips } - before
        }
        @Sendable func code(_ user: String, _ purpose: EmailCodePurpose, at: Int64) -> NewEmailCode {
            NewEmailCode(userID: user, purpose: purpose, codeHash: [1], createdAt: at, expiresAt: at + 600_000)
        }
        @Sendable func message(_ id: String, at: Int64) -> OutboxMessage {
            OutboxMessage(id: id + tag, recipient: "a@example.test", subject: "Code", text: "123456", createdAt: at)
        }
        let record = IdempotencyRecord(fingerprint: [1], status: 201, headers: [["ETag", "\"1\""]], body: [2], expiresAt: t0 + 9)
        let caller = "u:" + tag
        var counted: [String: Int] = [:]
        counted["issue"] = try trips {
            _ = try store.issueCode(code(a, .verifyEmail, at: t0), message: message("m1", at: t0), minIntervalMs: 60_000)
        }
        counted["too soon"] = try trips {
            _ = try store.issueCode(code(a, .verifyEmail, at: t0 + 1), message: message("m2", at: t0 + 1), minIntervalMs: 60_000)
        }
        counted["issue by email"] = try trips {
            _ = try store.issueCode(email: bName + "@example.test", purpose: .resetPassword, now: t0, minIntervalMs: 0) { user in
                (code(user.profile.id, .resetPassword, at: t0), message("m3", at: t0))
            }
        }
        counted["verify"] = try trips {
            _ = try store.redeemCode(
                userID: a, purpose: .verifyEmail, now: t0 + 2, maxAttempts: 3, matches: { _ in true }, redemption: .verifyEmail)
        }
        counted["reset"] = try trips {
            _ = try store.redeemCode(
                userID: b, purpose: .resetPassword, now: t0 + 2, maxAttempts: 3, matches: { _ in true },
                redemption: .resetPassword(newPasswordHash: "$argon2id$c"))
        }
        counted["claim"] = try trips { _ = try store.claimDueMessages(now: t0 + 5, limit: 10, leaseMs: 60_000) }
        counted["delivered"] = try trips { try store.markDelivered(id: "m1" + tag, now: t0 + 6) }
        counted["failed"] = try trips {
            try store.markAttemptFailed(
                id: "m3" + tag, attempts: 1, nextAttemptAt: t0 + 9, abandon: false, errorKind: "timeout", now: t0 + 6)
        }
        counted["idempotency claim"] = try trips {
            _ = try store.claimIdempotencyKey(caller: caller, key: "k", fingerprint: [1], now: t0, leaseUntil: t0 + 60_000)
        }
        counted["idempotency running"] = try trips {
            _ = try store.claimIdempotencyKey(caller: caller, key: "k", fingerprint: [1], now: t0 + 1, leaseUntil: t0 + 60_001)
        }
        counted["idempotency complete"] = try trips {
            try store.completeIdempotencyKey(caller: caller, key: "k", token: t0, record: record)
        }
        counted["idempotency abandon"] = try trips { try store.abandonIdempotencyKey(caller: caller, key: "j", token: t0) }
        counted["idempotency save"] = try trips {
            try store.saveIdempotencyRecord(caller: caller, key: "s", record: record, now: t0)
        }
        counted["idempotency record"] = try trips { _ = try store.idempotencyRecord(caller: caller, key: "s", now: t0) }
        // The size, then the four counts in one snapshot pipeline (BEGIN, reads, COMMIT).
        counted["admin stats"] = try trips { _ = try store.adminStats(dayStart: t0, thirtyDaysAgo: t0 - 1) }
        return counted
    }
}
