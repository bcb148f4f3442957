import Foundation
import SuplashDomain
import SuplashJSON
import SuplashSQLiteStore
import SuplashStorage
import SuplashStoreCore
import XCTest

@testable import SuplashAPI

/// Store-level and API-unit checks of offline sync: the feed is served by its index, LWW in the
/// store, the tombstone purge horizon, tokens, and the Idempotency-Key guard.
final class SyncUnitTests: XCTestCase {
    func makeStore() throws -> (SQLiteStore, SQLiteDatabase) {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        try Migrator.migrate(db, try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite"))
        return (SQLiteStore(database: db), db)
    }

    func testChangeFeedUsesTheChangesIndex() throws {
        let (_, db) = try makeStore()
        defer { db.close() }
        let plan = try db.read { c in
            try c.query(
                "EXPLAIN QUERY PLAN " + SyncFeedSource.waterEntries.sql.sqlite,
                [.text("u"), .integer(0), .integer(501), .integer(1)])
        }
        let details = plan.map { String(describing: $0["detail"]) }.joined(separator: "\n")
        XCTAssertTrue(details.contains("water_entries_changes"), details)
        XCTAssertFalse(details.contains("SCAN"), details)
        XCTAssertFalse(details.contains("TEMP B-TREE"), "the index must give the order: \(details)")
    }

    func testLWWPurgeAndNotifications() throws {
        let (store, db) = try makeStore()
        defer { db.close() }
        let now: Int64 = 1_790_000_000_000
        let touched = Touched()
        store.changeNotifier.subscribe { touched.add($0) }
        let user = UserProfile(id: "01930000-0000-7000-8000-000000000002", email: "b@example.test", displayName: nil, now: now)
        _ = try store.createUser(
            user, passwordHash: "x",
            session: NewSession(
                id: "s2", userID: user.id, refreshTokenHash: [2],
                createdAt: now, refreshExpiresAt: now + 1))
        let id = "00000000-0000-4000-8000-000000000001"
        let content = WaterEntryContent(amountMl: 100, loggedAt: now - 1000)
        let patch: @Sendable (JSONValue, UserProfile) throws -> UserProfile = { _, p in p }
        let (first, _) = try store.applyMutations(
            userID: user.id, deviceID: "b", now: now,
            mutations: [
                SyncMutation(collection: "water_entries", id: id, write: .upsertEntry(content), clientUpdatedAt: now - 10),
                SyncMutation(collection: "water_entries", id: id, write: .delete, clientUpdatedAt: now - 20),
                SyncMutation(collection: "water_entries", id: id, write: .delete, clientUpdatedAt: now - 10),
            ], profilePatch: patch)
        guard case .applied = first[0], case .superseded(let current) = first[1], case .applied(let tomb) = first[2] else {
            return XCTFail("\(first)")
        }
        XCTAssertEqual(
            current,
            SyncDocument.waterEntry(
                WaterEntry(
                    id: id, userID: user.id, content: content, createdAt: now, updatedAt: now,
                    version: 1, deleted: false)))
        XCTAssertTrue(tomb.deleted)
        // Callbacks run on the writer thread just after the jobs complete.
        // One wake-up per user and commit, however many positions the push took.
        for _ in 0..<100 where touched.ids.count < 2 { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(touched.ids, [user.id, user.id], "signup + the push")
        // A device id that sorts lower loses an equal clock.
        let (second, _) = try store.applyMutations(
            userID: user.id, deviceID: "a", now: now,
            mutations: [
                SyncMutation(collection: "water_entries", id: id, write: .upsertEntry(content), clientUpdatedAt: now - 10)
            ], profilePatch: patch)
        guard case .superseded(nil) = second[0] else { return XCTFail("\(second)") }

        let snapshot = try store.changes(userID: user.id, after: 0, limit: 10, includeTombstones: false)
        // The entry earned `first_log`: achievements joined the feed (badges are kept).
        XCTAssertEqual(snapshot.changes.map(\.collection), ["profile", "achievements"])
        let feed = try store.changes(userID: user.id, after: 0, limit: 10, includeTombstones: true)
        XCTAssertEqual(feed.changes.map(\.collection), ["profile", "water_entries", "achievements"])
        XCTAssertEqual(feed.purgeHorizon, 0)
        let (purged, horizon) = try store.purgeTombstones(deletedBefore: now + 1)
        XCTAssertEqual(purged, 1)
        XCTAssertEqual(horizon, tomb.position)
        XCTAssertEqual(try store.changes(userID: user.id, after: 0, limit: 10, includeTombstones: true).purgeHorizon, tomb.position)
    }

    func testSyncTokensRoundTripAndRefuseForgeries() throws {
        let codec = SyncTokenCodec(key: Array(repeating: 7, count: 32))
        let db = String(repeating: "ab", count: 16)
        let token = codec.encode(databaseID: db, position: 1234)
        let decoded = try codec.decode(token)
        XCTAssertEqual(decoded.databaseID, db)
        XCTAssertEqual(decoded.position, 1234)
        XCTAssertNil(decoded.snapshotStart)
        let page = try codec.decode(codec.encode(databaseID: db, position: 17, snapshotStart: 4321))
        XCTAssertEqual(page, SyncTokenCodec.Decoded(databaseID: db, position: 17, snapshotStart: 4321))
        let other = SyncTokenCodec(key: Array(repeating: 8, count: 32))
        XCTAssertThrowsError(try other.decode(token))
        XCTAssertThrowsError(try codec.decode("garbage"))
        XCTAssertThrowsError(try codec.decode(""))
    }

    func testIdempotencyGuardRefusesAConcurrentDuplicate() throws {
        try checkIdempotencyGuard(sharedClaims: false)
    }

    /// The same answers with the claim kept in the store (as on PostgreSQL).
    func testIdempotencyGuardWithClaimsInTheStore() throws {
        try checkIdempotencyGuard(sharedClaims: true)
    }

    func checkIdempotencyGuard(sharedClaims: Bool) throws {
        let (store, db) = try makeStore()
        defer { db.close() }
        let guardian = IdempotencyGuard(repository: store, sharedClaims: sharedClaims)
        guard case .proceed = try guardian.begin(caller: "u:x", key: "k1", fingerprint: [1], now: 1000) else {
            return XCTFail("first use must proceed")
        }
        XCTAssertThrowsError(try guardian.begin(caller: "u:x", key: "k1", fingerprint: [1], now: 1000)) { error in
            XCTAssertEqual((error as? APIError)?.code, "idempotency_key_in_use")
        }
        XCTAssertNil(try store.idempotencyRecord(caller: "u:x", key: "k1", now: 1000), "a claim is not a record")
        guardian.complete(
            caller: "u:x", key: "k1", fingerprint: [1], claim: sharedClaims ? 1000 : nil,
            response: .init(status: 200, body: [9]), path: "/v1/auth/refresh", now: 1000)
        guard case .replay(let replayed) = try guardian.begin(caller: "u:x", key: "k1", fingerprint: [1], now: 1000 + 299_000) else {
            return XCTFail("a completed key replays")
        }
        XCTAssertEqual(replayed.headers.first(name: "Idempotent-Replayed"), "true")
        // /v1/auth/* records live 5 minutes.
        guard case .proceed(let claim) = try guardian.begin(caller: "u:x", key: "k1", fingerprint: [1], now: 1000 + 300_001) else {
            return XCTFail("an expired auth record no longer replays")
        }
        guardian.abandon(caller: "u:x", key: "k1", claim: claim)
        guard case .proceed(let again) = try guardian.begin(caller: "u:x", key: "k1", fingerprint: [1], now: 1000 + 300_002) else {
            return XCTFail("an abandoned key runs again")
        }
        // A 5xx is not stored: the key is free again.
        guardian.complete(
            caller: "u:x", key: "k1", fingerprint: [1], claim: again, response: .init(status: 503),
            path: "/v1/sync", now: 1000 + 300_002)
        guard case .proceed = try guardian.begin(caller: "u:x", key: "k1", fingerprint: [1], now: 1000 + 300_003) else {
            return XCTFail("a 5xx answer is not replayed")
        }
        guard case .proceed(let k2) = try guardian.begin(caller: "u:x", key: "k2", fingerprint: [1], now: 1000) else {
            return XCTFail("k2 is new")
        }
        guardian.complete(
            caller: "u:x", key: "k2", fingerprint: [1], claim: k2, response: .init(status: 201),
            path: "/v1/sync", now: 1000)
        XCTAssertThrowsError(try guardian.begin(caller: "u:x", key: "k2", fingerprint: [2], now: 2000)) { error in
            XCTAssertEqual((error as? APIError)?.code, "idempotency_key_mismatch")
        }
        let record = IdempotencyRecord(fingerprint: [1, 2], status: 201, headers: [["ETag", "\"1\""]], body: [3], expiresAt: 2000)
        try store.saveIdempotencyRecord(caller: "u:x", key: "k", record: record, now: 1000)
        XCTAssertEqual(try store.idempotencyRecord(caller: "u:x", key: "k", now: 1500), record)
        XCTAssertNil(try store.idempotencyRecord(caller: "u:y", key: "k", now: 1500))
        XCTAssertNil(try store.idempotencyRecord(caller: "u:x", key: "k", now: 2000))
        XCTAssertEqual(try store.purgeIdempotencyRecords(now: 2000), 1)
    }
}

extension SyncUnitTests {
    func testRegistryWakesOnlyTheCommittedUsersWaitersOnce() {
        let registry = LongPollRegistry()
        let a1 = FakeWaiter()
        let a2 = FakeWaiter()
        let b = FakeWaiter()
        let gone = FakeWaiter()
        registry.add(a1, userID: "a")
        registry.add(a2, userID: "a")
        registry.add(b, userID: "b")
        registry.add(gone, userID: "a")
        registry.remove(gone, userID: "a")  // disconnect
        XCTAssertEqual(registry.waitingCount, 3)
        registry.wake(userID: "a")
        registry.wake(userID: "a")
        XCTAssertEqual([a1.wakes, a2.wakes, b.wakes, gone.wakes], [1, 1, 0, 0])
        XCTAssertEqual(registry.waitingCount, 1)
    }
}

/// Counts wakes. `@unchecked Sendable`: `count` is guarded by `lock`.
final class FakeWaiter: LongPollParked, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func wake() { lock.withLock { count += 1 } }
    var wakes: Int { lock.withLock { count } }
}

/// Collects notified user ids. `@unchecked Sendable`: `ids` is guarded by `lock`.
final class Touched: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func add(_ id: String) { lock.withLock { stored.append(id) } }
    var ids: [String] { lock.withLock { stored } }
}
