import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashStorage
import XCTest

/// Several server instances on one database: `LISTEN/NOTIFY` between stores on
/// separate pools, reconnects, outbox claims, the purge lock and the shared secret.
/// Waits below poll for an outcome with a generous deadline; they assert what arrives, never
/// how fast.
final class ClusterTests: XCTestCase {
    let t0: Int64 = 1_790_000_000_000
    let alice = "01930000-0000-7000-8000-00000000c0a1"
    let bob = "01930000-0000-7000-8000-00000000c0b2"

    /// A migrated database and `count` stores, each on its own pool (as separate instances).
    func makeInstances(_ count: Int) throws -> (setup: PostgresDatabase, stores: [PostgresStore]) {
        let url = try PostgresTestSupport.url()
        let setup = try PostgresTestSupport.migratedDatabase()
        let stores = try (0..<count).map { _ in PostgresStore(database: try PostgresDatabase(url: url, poolSize: 4)) }
        return (setup, stores)
    }

    func makeUser(_ store: PostgresStore, _ id: String, session: String) throws {
        _ = try store.createUser(
            UserProfile(id: id, email: "\(session)@example.test", displayName: nil, now: t0),
            passwordHash: "x",
            session: NewSession(
                id: session, userID: id, refreshTokenHash: Array(session.utf8),
                createdAt: t0, refreshExpiresAt: t0 + 1_000_000))
    }

    /// Polls `condition` every 10 ms until it holds or `seconds` pass; returns its last value.
    func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }

    /// Records what a cluster listener hears.
    final class Heard: Sendable {
        let changes = Locked([String]())
        let revocations = Locked([PostgresRevocationEvent]())
        let resyncs = Locked([Bool]())
    }

    func listen(_ store: PostgresStore) throws -> (PostgresClusterListener, Heard) {
        let heard = Heard()
        let listener = try PostgresClusterListener(
            store: store, minBackoff: 0.05, maxBackoff: 0.2,
            onChange: { id in heard.changes.withLock { $0.append(id) } },
            onRevocation: { event in heard.revocations.withLock { $0.append(event) } },
            onResync: { reconnect in heard.resyncs.withLock { $0.append(reconnect) } })
        try listener.start()
        XCTAssertTrue(eventually { heard.resyncs.current == [false] }, "first LISTEN reported once")
        return (listener, heard)
    }

    // MARK: - Wire format

    func testRevocationPayloadsRoundTripAndForeignOnesAreIgnored() {
        let events: [PostgresRevocationEvent] = [
            .session(id: "0193aaaa-0000-7000-8000-000000000001"), .account(userID: alice),
            .userCutoff(userID: bob, issuedBeforeSeconds: 1_790_000_123), .adminKeys,
        ]
        for event in events {
            XCTAssertEqual(PostgresRevocationEvent(payload: event.payload), event)
        }
        for foreign in ["", "session", "session ", "cutoff x", "cutoff x y", "account a b", "admin_keys x", "logout 1"] {
            XCTAssertNil(PostgresRevocationEvent(payload: foreign), foreign)
        }
    }

    // MARK: - LISTEN/NOTIFY

    func testListenerHearsOnlyCommittedNotificationsOncePerTransaction() throws {
        let url = try PostgresTestSupport.url()
        let db = try PostgresTestSupport.freshDatabase()
        defer { db.close() }
        let heard = Locked([String]())
        let listening = Locked(0)
        let listener = try PostgresListener(
            url: url, channels: ["test_channel"],
            onNotification: { channel, payload in heard.withLock { $0.append("\(channel):\(payload)") } },
            onConnection: { if case .listening = $0 { listening.withLock { $0 += 1 } } })
        try listener.start()
        defer { listener.stop() }
        XCTAssertTrue(eventually { listening.current == 1 })

        try db.transaction { tx in
            tx.notify(channel: "test_channel", payload: "a")
            tx.notify(channel: "test_channel", payload: "a")
            // A second notify of the same pair in SQL: PostgreSQL folds it as well.
            try tx.connection.query("SELECT pg_notify('test_channel', 'a')")
        }
        struct Abort: Error {}
        XCTAssertThrowsError(
            try db.transaction { tx in
                tx.notify(channel: "test_channel", payload: "rolled-back")
                throw Abort()
            })
        try db.transaction { tx in tx.notify(channel: "test_channel", payload: "c") }
        XCTAssertTrue(eventually { heard.current.count >= 2 })
        XCTAssertEqual(heard.current, ["test_channel:a", "test_channel:c"])
    }

    func testListenerRefusesChannelNamesThatAreNotIdentifiers() {
        for bad in ["", "Upper", "with space", "x;DROP", "1abc"] {
            XCTAssertThrowsError(try PostgresListener(url: "postgresql:///x", channels: [bad], onNotification: { _, _ in }), bad)
        }
    }

    func testACommitOnOneInstanceWakesTheOtherButNotItself() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let (a, b) = (stores[0], stores[1])
        let (listenerA, heardA) = try listen(a)
        let (listenerB, heardB) = try listen(b)
        defer {
            listenerA.stop()
            listenerB.stop()
        }
        let localA = Locked([String]())
        a.changeNotifier.subscribe { id in localA.withLock { $0.append(id) } }

        try makeUser(a, alice, session: "sa")
        _ = try a.createEntry(
            userID: alice, id: "e1",
            content: WaterEntryContent(
                amountMl: 250, loggedAt: t0, source: .phone,
                healthKitUUID: nil, note: nil),
            deviceID: "phone", now: t0 + 1)
        XCTAssertTrue(eventually { heardB.changes.current.count >= 2 })
        XCTAssertEqual(heardB.changes.current, [alice, alice], "one notification per committed transaction")
        try makeUser(b, bob, session: "sb")
        XCTAssertTrue(eventually { heardA.changes.current == [bob] })
        // Notifications reach a listener in commit order, so had A's listener passed on A's
        // own commits, they would be here before bob: the in-process notifier reported them.
        XCTAssertEqual(heardA.changes.current, [bob])
        XCTAssertFalse(localA.current.isEmpty)
        XCTAssertEqual(Set(localA.current), [alice], "A's own commits were reported in-process")
        XCTAssertEqual(heardB.changes.current, [alice, alice])
    }

    func testListenerReconnectsAfterItsConnectionIsKilledAndResyncs() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let (listener, heard) = try listen(stores[0])
        defer { listener.stop() }
        let killed = try setup.read { c in
            try c.query(
                """
                SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
                WHERE pid <> pg_backend_pid() AND datname = current_database() AND query LIKE '%LISTEN suplash_changes%'
                """)
        }
        XCTAssertEqual(killed.count, 1, "exactly one listening connection per instance")
        XCTAssertTrue(eventually { heard.resyncs.current == [false, true] }, "reconnected: \(heard.resyncs.current)")
        try makeUser(stores[1], bob, session: "sb")
        XCTAssertTrue(eventually { heard.changes.current == [bob] }, "listening again after the reconnect")
    }

    func testRevocationsAreBroadcastWithTheirCommit() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let (a, b) = (stores[0], stores[1])
        let (listener, heard) = try listen(b)
        defer { listener.stop() }
        try makeUser(a, alice, session: "s1")
        try makeUser(a, bob, session: "s2")
        try a.createSession(
            NewSession(
                id: "s3", userID: bob, refreshTokenHash: Array("s3".utf8), createdAt: t0,
                refreshExpiresAt: t0 + 1_000_000))

        // Logout by bearer (a foreign session id changes nothing and says nothing).
        XCTAssertFalse(try a.revokeSession(id: "s2", userID: alice, now: t0 + 10))
        XCTAssertTrue(try a.revokeSession(id: "s1", userID: alice, now: t0 + 10))
        // Refresh-token reuse revokes the session.
        guard
            case .rotated = try a.rotateRefreshToken(
                hash: Array("s2".utf8), newHash: Array("s2b".utf8), now: t0 + 20,
                newExpiresAt: t0 + 2_000_000)
        else { return XCTFail("rotation") }
        guard
            case .reused = try a.rotateRefreshToken(
                hash: Array("s2".utf8), newHash: Array("s2c".utf8), now: t0 + 21,
                newExpiresAt: t0 + 2_000_000)
        else { return XCTFail("reuse") }
        // Password reset revokes bob's other live session (s3) and sets a cut-off.
        _ = try a.issueCode(
            NewEmailCode(
                userID: bob, purpose: .resetPassword, codeHash: [7], createdAt: t0 + 30,
                expiresAt: t0 + 600_000),
            message: OutboxMessage(id: "m1", recipient: "x@example.test", subject: "s", text: "t", createdAt: t0 + 30),
            minIntervalMs: 0)
        guard
            case .redeemed(let revoked) = try a.redeemCode(
                userID: bob, purpose: .resetPassword, now: t0 + 40_000, maxAttempts: 3,
                matches: { $0 == [7] },
                redemption: .resetPassword(newPasswordHash: "$argon2id$new"))
        else { return XCTFail("reset") }
        XCTAssertEqual(revoked, ["s3"])
        // A failed transaction broadcasts nothing; an erasure and an admin key do.
        XCTAssertFalse(try a.eraseAccount(userID: "01930000-0000-7000-8000-0000000000ff", now: t0 + 50_000))
        XCTAssertTrue(try a.eraseAccount(userID: alice, now: t0 + 50_000))
        try a.createAdminKey(name: "ops", keyHash: [UInt8](repeating: 9, count: 32), now: t0)
        XCTAssertTrue(try a.revokeAdminKey(name: "ops", now: t0 + 1))
        XCTAssertFalse(try a.revokeAdminKey(name: "ops", now: t0 + 2))

        let expected: [PostgresRevocationEvent] = [
            .session(id: "s1"), .session(id: "s2"), .session(id: "s3"),
            .userCutoff(userID: bob, issuedBeforeSeconds: (t0 + 40_000) / 1000),
            .account(userID: alice), .adminKeys, .adminKeys,
        ]
        XCTAssertTrue(eventually { heard.revocations.current.count >= expected.count })
        XCTAssertEqual(heard.revocations.current, expected)
    }

    func testSessionLivenessSeesRevocationsOfAnyInstanceAtOnce() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let (a, b) = (stores[0], stores[1])
        try makeUser(a, alice, session: "s1")
        try makeUser(a, bob, session: "s2")
        XCTAssertTrue(try b.isSessionLive(id: "s1", userID: alice))
        XCTAssertFalse(try b.isSessionLive(id: "s1", userID: bob), "another user's session")
        XCTAssertFalse(try b.isSessionLive(id: "nope", userID: alice))
        XCTAssertTrue(try a.revokeSession(id: "s1", userID: alice, now: t0 + 1))
        XCTAssertFalse(try b.isSessionLive(id: "s1", userID: alice), "logout on A, checked on B")
        XCTAssertTrue(try b.isSessionLive(id: "s2", userID: bob))
        XCTAssertTrue(try a.eraseAccount(userID: bob, now: t0 + 2))
        XCTAssertFalse(try b.isSessionLive(id: "s2", userID: bob), "erased on A, checked on B")
    }

    // MARK: - Background jobs

    func testConcurrentOutboxClaimsOnTwoInstancesAreDisjoint() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let ids = (0..<60).map { String(format: "m%03d", $0) }
        try setup.read { c in
            for (i, id) in ids.enumerated() {
                try c.update(
                    """
                    INSERT INTO outbox (id, recipient, subject, body, created_at, attempts, next_attempt_at)
                    VALUES ($1, 'x@example.test', 's', 'b', $2, 0, $2)
                    """, [.text(id), .integer(t0 + Int64(i))])
            }
        }
        let now = t0 + 1_000
        let claimed = Locked([String]())
        let failures = Locked([String]())
        DispatchQueue.concurrentPerform(iterations: 6) { worker in
            let store = stores[worker % 2]
            while true {
                do {
                    let batch = try store.claimDueMessages(now: now, limit: 4, leaseMs: 60_000)
                    if batch.isEmpty { return }
                    claimed.withLock { $0 += batch.map(\.id) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    return
                }
            }
        }
        XCTAssertEqual(failures.current, [])
        XCTAssertEqual(claimed.current.count, ids.count, "no message claimed twice")
        XCTAssertEqual(Set(claimed.current), Set(ids), "every due message claimed")
        // Claimed messages are leased: not due again until the lease ends, then due for
        // another worker (the first one died without recording an attempt).
        XCTAssertEqual(try stores[1].claimDueMessages(now: now + 59_999, limit: 100, leaseMs: 60_000).count, 0)
        XCTAssertEqual(try stores[0].nextAttemptTime(), now + 60_000)
        try stores[0].markDelivered(id: "m000", now: now + 10)
        XCTAssertEqual(
            Set(try stores[1].claimDueMessages(now: now + 60_000, limit: 100, leaseMs: 60_000).map(\.id)),
            Set(ids.dropFirst()))
    }

    func testTombstonePurgeRunsOnOneInstanceAtATime() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        try makeUser(stores[0], alice, session: "s1")
        _ = try stores[0].createEntry(
            userID: alice, id: "e1",
            content: WaterEntryContent(
                amountMl: 100, loggedAt: t0,
                source: .phone, healthKitUUID: nil,
                note: nil),
            deviceID: nil, now: t0 + 1)
        try stores[0].deleteEntry(userID: alice, id: "e1", deviceID: nil, now: t0 + 2, precondition: { _ in true })

        // Another instance is purging: it holds the purge lock in its transaction.
        let holder = try PostgresConnection(url: try PostgresTestSupport.url())
        defer { holder.close() }
        try holder.execute("BEGIN")
        try holder.query("SELECT pg_advisory_xact_lock($1::bigint)", [.integer(PostgresStore.purgeLockKey)])
        let skipped = try stores[1].purgeTombstones(deletedBefore: t0 + 1_000_000)
        XCTAssertEqual(skipped.purged, 0, "skipped while another instance purges")
        XCTAssertEqual(skipped.horizon, 0)
        try holder.execute("COMMIT")
        let ran = try stores[1].purgeTombstones(deletedBefore: t0 + 1_000_000)
        XCTAssertEqual(ran.purged, 1)
        XCTAssertGreaterThan(ran.horizon, 0)
    }

    // MARK: - Shared secret

    func testInstancesAgreeOnTheFirstStoredSecret() throws {
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let first = [UInt8](repeating: 1, count: 32)
        let second = [UInt8](repeating: 2, count: 32)
        XCTAssertEqual(try stores[0].sharedSecret(name: "jwt", candidate: first, now: t0), first)
        XCTAssertEqual(try stores[1].sharedSecret(name: "jwt", candidate: second, now: t0), first)
        XCTAssertEqual(try stores[1].sharedSecret(name: "other", candidate: second, now: t0), second)
    }
}
