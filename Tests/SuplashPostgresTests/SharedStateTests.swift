import Foundation
import SuplashDomain
import SuplashHTTP
import SuplashLogging
import SuplashPostgres
import SuplashPostgresStore
import XCTest

@testable import SuplashAPI

/// What several instances on one database share: Idempotency-Key claims,
/// rate-limit buckets (and so the failed-login budget), refresh-token rotation and email
/// codes. Each "instance" is a `PostgresStore` on its own pool.
final class SharedStateTests: XCTestCase {
    let t0: Int64 = 1_790_000_000_000
    let user = "01930000-0000-7000-8000-0000000000bb"

    func makeInstances(_ count: Int) throws -> (setup: PostgresDatabase, stores: [PostgresStore]) {
        let url = try PostgresTestSupport.url()
        let setup = try PostgresTestSupport.migratedDatabase()
        _ = try PostgresStore(database: setup).createUser(
            UserProfile(id: user, email: "shared@example.test", displayName: nil, now: t0), passwordHash: "x",
            session: NewSession(
                id: "s1", userID: user, refreshTokenHash: [UInt8](repeating: 1, count: 32),
                createdAt: t0, refreshExpiresAt: t0 + 1_000_000))
        let stores = try (0..<count).map { _ in PostgresStore(database: try PostgresDatabase(url: url, poolSize: 4)) }
        return (setup, stores)
    }

    // MARK: Idempotency-Key claims

    func testConcurrentClaimsOfOneKeyLetExactlyOneProceedAndARetryOnTheOtherInstanceReplays() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let t0 = self.t0
        let outcomes = Locked([IdempotencyClaim]())
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            do {
                let claim = try stores[i % 2].claimIdempotencyKey(
                    caller: "u:a", key: "k", fingerprint: [1], now: t0,
                    leaseUntil: t0 + 60_000)
                outcomes.withLock { $0.append(claim) }
            } catch {
                XCTFail("\(error)")
            }
        }
        XCTAssertEqual(outcomes.current.filter { $0 == .claimed(token: t0) }.count, 1, "\(outcomes.current)")
        XCTAssertEqual(outcomes.current.filter { $0 == .running }.count, 7, "\(outcomes.current)")
        XCTAssertNil(try stores[1].idempotencyRecord(caller: "u:a", key: "k", now: t0), "a claim is not a record")

        let record = IdempotencyRecord(
            fingerprint: [1], status: 201, headers: [["Location", "/v1/entries/e"]],
            body: [1, 2, 3], expiresAt: t0 + 86_400_000)
        try stores[0].completeIdempotencyKey(caller: "u:a", key: "k", token: t0, record: record)
        XCTAssertEqual(
            try stores[1].claimIdempotencyKey(
                caller: "u:a", key: "k", fingerprint: [1], now: t0 + 5,
                leaseUntil: t0 + 60_005), .completed(record))
        XCTAssertEqual(try stores[1].idempotencyRecord(caller: "u:a", key: "k", now: t0 + 5), record)
    }

    func testGuardsOnTwoInstancesAnswerAsOne() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let a = IdempotencyGuard(repository: stores[0], sharedClaims: true)
        let b = IdempotencyGuard(repository: stores[1], sharedClaims: true)
        guard case .proceed(let claim) = try a.begin(caller: "u:a", key: "k", fingerprint: [1], now: t0) else {
            return XCTFail("the first use proceeds")
        }
        XCTAssertThrowsError(try b.begin(caller: "u:a", key: "k", fingerprint: [1], now: t0 + 1)) { error in
            XCTAssertEqual((error as? APIError)?.code, "idempotency_key_in_use")
        }
        XCTAssertThrowsError(try b.begin(caller: "u:a", key: "k", fingerprint: [2], now: t0 + 1)) { error in
            XCTAssertEqual((error as? APIError)?.code, "idempotency_key_in_use", "as on one instance: running wins")
        }
        var response = HTTPResponse(status: 201, body: Array("{}".utf8))
        response.headers.add(name: "ETag", value: "\"1\"")
        a.complete(caller: "u:a", key: "k", fingerprint: [1], claim: claim, response: response, path: "/v1/entries", now: t0)
        guard case .replay(let replayed) = try b.begin(caller: "u:a", key: "k", fingerprint: [1], now: t0 + 2) else {
            return XCTFail("a retry on the other instance replays")
        }
        XCTAssertEqual(replayed.status, 201)
        XCTAssertEqual(replayed.body, Array("{}".utf8))
        XCTAssertEqual(replayed.headers.first(name: "ETag"), "\"1\"")
        XCTAssertEqual(replayed.headers.first(name: "Idempotent-Replayed"), "true")
        XCTAssertThrowsError(try b.begin(caller: "u:a", key: "k", fingerprint: [2], now: t0 + 2)) { error in
            XCTAssertEqual((error as? APIError)?.code, "idempotency_key_mismatch")
        }
        // A 5xx is not stored: the claim is dropped and the other instance may run it.
        guard case .proceed(let second) = try a.begin(caller: "u:a", key: "k5", fingerprint: [1], now: t0) else {
            return XCTFail("new key")
        }
        a.complete(
            caller: "u:a", key: "k5", fingerprint: [1], claim: second, response: HTTPResponse(status: 503),
            path: "/v1/entries", now: t0)
        guard case .proceed = try b.begin(caller: "u:a", key: "k5", fingerprint: [1], now: t0 + 1) else {
            return XCTFail("a 5xx answer is run again")
        }
    }

    func testACrashedInstancesClaimExpiresWithItsLease() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let lease: Int64 = 60_000
        XCTAssertEqual(
            try stores[0].claimIdempotencyKey(
                caller: "ip:192.0.2.1", key: "k", fingerprint: [1], now: t0,
                leaseUntil: t0 + lease), .claimed(token: t0))
        XCTAssertEqual(
            try stores[1].claimIdempotencyKey(
                caller: "ip:192.0.2.1", key: "k", fingerprint: [1],
                now: t0 + lease - 1, leaseUntil: t0 + 2 * lease - 1), .running)
        // Instance 0 "crashed": at the end of its lease instance 1 takes the key over.
        XCTAssertEqual(
            try stores[1].claimIdempotencyKey(
                caller: "ip:192.0.2.1", key: "k", fingerprint: [1],
                now: t0 + lease, leaseUntil: t0 + 2 * lease),
            .claimed(token: t0 + lease))
        // The late first request neither completes nor abandons the new claim.
        let late = IdempotencyRecord(fingerprint: [1], status: 200, headers: [], body: [0], expiresAt: t0 + 86_400_000)
        try stores[0].completeIdempotencyKey(caller: "ip:192.0.2.1", key: "k", token: t0, record: late)
        try stores[0].abandonIdempotencyKey(caller: "ip:192.0.2.1", key: "k", token: t0)
        XCTAssertEqual(
            try stores[0].claimIdempotencyKey(
                caller: "ip:192.0.2.1", key: "k", fingerprint: [1],
                now: t0 + lease + 1, leaseUntil: t0 + 2 * lease + 1), .running)
        try stores[1].abandonIdempotencyKey(caller: "ip:192.0.2.1", key: "k", token: t0 + lease)
        XCTAssertEqual(
            try stores[0].claimIdempotencyKey(
                caller: "ip:192.0.2.1", key: "k", fingerprint: [1],
                now: t0 + lease + 2, leaseUntil: t0 + 2 * lease + 2),
            .claimed(token: t0 + lease + 2))
        // A claim whose row was purged (lease over) is still completed.
        XCTAssertEqual(try stores[0].purgeIdempotencyRecords(now: t0 + 3 * lease), 1)
        try stores[0].completeIdempotencyKey(caller: "ip:192.0.2.1", key: "k", token: t0 + lease + 2, record: late)
        XCTAssertEqual(try stores[1].idempotencyRecord(caller: "ip:192.0.2.1", key: "k", now: t0 + 3 * lease), late)
    }

    // MARK: Rate limits

    func sharedBuckets(_ store: PostgresStore) -> SharedRateLimitBuckets {
        SharedRateLimitBuckets(repository: store, key: Array(repeating: 3, count: 32), logger: Logger(minimumLevel: .error))
    }

    func testRateLimitBudgetIsSharedByInstances() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        // The same layer on two instances, long window so nothing refills during the test.
        let layers = stores.map { RateLimitLayer(name: "ip", limit: 5, window: 3600, shared: sharedBuckets($0)) }
        for i in 0..<5 {
            let d = layers[i % 2].take("198.51.100.7", now: 0)
            XCTAssertTrue(d.allowed, "take \(i)")
            XCTAssertEqual(d.remaining, 4 - i)
        }
        let limited = layers[1].take("198.51.100.7", now: 0)
        XCTAssertFalse(limited.allowed, "the budget of one instance, not two")
        XCTAssertGreaterThanOrEqual(limited.resetSeconds, 1)
        XCTAssertFalse(layers[0].take("198.51.100.7", now: 0).allowed)
        XCTAssertTrue(layers[0].take("198.51.100.8", now: 0).allowed, "keys are independent")
        // A refund on one instance is seen by the other.
        layers[0].refund("198.51.100.7")
        XCTAssertTrue(layers[1].take("198.51.100.7", now: 0).allowed)
        XCTAssertFalse(layers[0].take("198.51.100.7", now: 0).allowed)
        // Neither the address nor the layer name is stored: 32-byte HMACs only.
        let rows = try setup.read { try $0.query("SELECT bucket FROM rate_limit_buckets") }
        XCTAssertEqual(rows.count, 2)
        for row in rows {
            guard case .blob(let bytes) = row[0] else { return XCTFail("bucket is bytea") }
            XCTAssertEqual(bytes.count, 32)
            XCTAssertNil(String(bytes: bytes, encoding: .utf8).flatMap { $0.contains("198.51") ? $0 : nil })
        }
    }

    func testConcurrentTakesNeverExceedTheBudget() throws {
        let (setup, stores) = try makeInstances(3)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let layers = stores.map { RateLimitLayer(name: "login-account", limit: 10, window: 900, shared: sharedBuckets($0)) }
        let allowed = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 30) { i in
            if layers[i % 3].take("victim@example.test", now: 0).allowed { allowed.withLock { $0 += 1 } }
        }
        XCTAssertEqual(allowed.current, 10, "10 failed logins per account across every instance")
    }

    func testIdleBucketsArePurged() throws {
        let (setup, stores) = try makeInstances(1)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        for key in ["a", "b", "c"] {
            _ = try stores[0].takeRateLimitToken(bucket: Array(key.utf8), capacity: 3, windowSeconds: 60)
        }
        XCTAssertEqual(try stores[0].purgeRateLimitBuckets(), 0, "not yet full again")
        _ = try setup.read { try $0.update("UPDATE rate_limit_buckets SET expires_at = expires_at - 61 WHERE bucket <> 'c'::bytea") }
        XCTAssertEqual(try stores[0].purgeRateLimitBuckets(), 2)
        XCTAssertEqual(
            try stores[0].takeRateLimitToken(bucket: Array("a".utf8), capacity: 3, windowSeconds: 60),
            RateLimitTake(allowed: true, tokens: 2), "a purged bucket starts full")
    }

    // MARK: Refresh tokens and email codes

    func testConcurrentRefreshOnTwoInstancesRotatesOnceAndTheOtherIsReuse() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let t0 = self.t0
        let outcomes = Locked([RefreshOutcome]())
        let threads = (0..<2).map { i in
            Thread {
                do {
                    let outcome = try stores[i].rotateRefreshToken(
                        hash: [UInt8](repeating: 1, count: 32),
                        newHash: [UInt8](repeating: UInt8(60 + i), count: 32),
                        now: t0 + 1, newExpiresAt: t0 + 100)
                    outcomes.withLock { $0.append(outcome) }
                } catch {
                    outcomes.withLock { _ in XCTFail("\(error)") }
                }
            }
        }
        threads.forEach { $0.start() }
        while outcomes.current.count < 2 { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(Set(outcomes.current.map { "\($0)" }).count, 2, "\(outcomes.current)")
        XCTAssertTrue(outcomes.current.contains(.rotated(sessionID: "s1", userID: user)), "exactly one new session")
        XCTAssertTrue(outcomes.current.contains(.reused(sessionID: "s1", userID: user)), "the other is reuse")
        XCTAssertEqual(try stores[0].sessionsRevoked(since: t0), ["s1"], "reuse revoked the family")
        let sessions = try setup.read { try $0.query("SELECT count(*) FROM sessions") }
        XCTAssertEqual(sessions.first?[0], .integer(1))
    }

    func testConcurrentRedemptionsOfOneCodeOnTwoInstancesSucceedOnce() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let t0 = self.t0
        let user = self.user
        _ = try stores[0].issueCode(
            NewEmailCode(
                userID: user, purpose: .verifyEmail, codeHash: [5], createdAt: t0,
                expiresAt: t0 + 600_000),
            message: OutboxMessage(
                id: "m1", recipient: "shared@example.test", subject: "s",
                text: "t", createdAt: t0),
            minIntervalMs: 0)
        let outcomes = Locked([CodeCheckOutcome]())
        DispatchQueue.concurrentPerform(iterations: 6) { i in
            do {
                let outcome = try stores[i % 2].redeemCode(
                    userID: user, purpose: .verifyEmail, now: t0 + 1, maxAttempts: 5,
                    matches: { $0 == [5] }, redemption: .verifyEmail)
                outcomes.withLock { $0.append(outcome) }
            } catch {
                outcomes.withLock { _ in XCTFail("\(error)") }
            }
        }
        XCTAssertEqual(outcomes.current.filter { $0 == .redeemed(revokedSessionIDs: []) }.count, 1, "\(outcomes.current)")
        XCTAssertEqual(outcomes.current.filter { $0 == .noCode }.count, 5, "single use: \(outcomes.current)")

        // Wrong guesses spread over both instances count every attempt once.
        _ = try stores[1].issueCode(
            NewEmailCode(
                userID: user, purpose: .verifyEmail, codeHash: [6], createdAt: t0 + 2,
                expiresAt: t0 + 600_000),
            message: OutboxMessage(
                id: "m2", recipient: "shared@example.test", subject: "s",
                text: "t", createdAt: t0 + 2),
            minIntervalMs: 0)
        let wrong = Locked([CodeCheckOutcome]())
        DispatchQueue.concurrentPerform(iterations: 6) { i in
            do {
                let outcome = try stores[i % 2].redeemCode(
                    userID: user, purpose: .verifyEmail, now: t0 + 3, maxAttempts: 5,
                    matches: { _ in false }, redemption: .verifyEmail)
                wrong.withLock { $0.append(outcome) }
            } catch {
                wrong.withLock { _ in XCTFail("\(error)") }
            }
        }
        let expected: [CodeCheckOutcome] = (0..<5).map { .wrong(attemptsLeft: $0) } + [.noCode]
        XCTAssertEqual(Set(wrong.current.map { "\($0)" }), Set(expected.map { "\($0)" }), "\(wrong.current)")
        XCTAssertEqual(wrong.current.count, 6)
    }
}
