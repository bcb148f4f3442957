import Foundation
import SuplashDomain
import SuplashJSON
import SuplashPostgresStore
import SuplashSQLiteStore
import XCTest

/// The sync feed, push, tombstone purge and entry batches behave alike on SQLite and
/// PostgreSQL: one scenario, the same transcript (positions included).
final class SyncBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & SyncRepository & WaterEntryBatchRepository & BillRepository

    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    func scenario(_ store: Store) throws -> [String] {
        let uid = fixtures.alice
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
        func page(_ label: String, after: Int64, limit: Int = 50, tombstones: Bool = true) {
            record(label) {
                let p = try store.changes(userID: uid, after: after, limit: limit, includeTombstones: tombstones)
                return "\(p.changes.map { "\($0.collection)/\($0.id)@\($0.position) v\($0.version)\($0.deleted ? " deleted" : "")" }) "
                    + "more=\(p.hasMore) head=\(p.headPosition) horizon=\(p.purgeHorizon) profile=\(p.profile?.version ?? -1) "
                    + "id=\(!p.databaseID.isEmpty)"
            }
        }
        func entry(_ ml: Int, _ at: Int64, hk: String? = nil) -> WaterEntryContent {
            WaterEntryContent(amountMl: ml, loggedAt: at, source: .phone, healthKitUUID: hk, note: nil)
        }
        page("empty feed", after: 0)
        _ = try store.createEntry(userID: uid, id: "rest1", content: entry(250, t0), deviceID: "phone", now: t0 + 1)
        page("after REST create", after: 0)
        let patch: @Sendable (JSONValue, UserProfile) throws -> UserProfile = { json, profile in
            var p = profile
            if case .object(let members) = json, let name = members.first(where: { $0.0 == "displayName" })?.1.stringValue {
                p.displayName = name
            }
            return p
        }
        let bill = BillContent(
            provider: "ISKI", subscriberNo: "S-1", period: YearMonth(parsing: "2026-05") ?? LocalDate(dayNumber: 0).yearMonth,
            consumptionMilliM3: 1_000, amountMinor: 500, dueDate: LocalDate(parsing: "2026-06-10") ?? LocalDate(dayNumber: 0))
        record("push") {
            let (outcomes, head) = try store.applyMutations(
                userID: uid, deviceID: "watch", now: t0 + 100,
                mutations: [
                    SyncMutation(collection: "water_entries", id: "w1", write: .upsertEntry(entry(300, t0 + 50)), clientUpdatedAt: t0 + 90),
                    SyncMutation(collection: "water_entries", id: "rest1", write: .upsertEntry(entry(999, t0)), clientUpdatedAt: t0 - 5),
                    SyncMutation(collection: "water_entries", id: "rest1", write: .upsertEntry(entry(400, t0)), clientUpdatedAt: t0 + 95),
                    SyncMutation(collection: "water_entries", id: "ghost", write: .delete, clientUpdatedAt: t0 + 96),
                    SyncMutation(
                        collection: "water_entries", id: "w2", write: .upsertEntry(entry(100, t0 + 60, hk: "HK")),
                        clientUpdatedAt: t0 + 97),
                    SyncMutation(
                        collection: "water_entries", id: "w3", write: .upsertEntry(entry(100, t0 + 60, hk: "HK")),
                        clientUpdatedAt: t0 + 97),
                    SyncMutation(
                        collection: "profile", id: uid, write: .patchProfile(.object([("displayName", .string("Al"))])),
                        clientUpdatedAt: t0 + 98),
                    SyncMutation(collection: "profile", id: "someone-else", write: .patchProfile(.object([])), clientUpdatedAt: t0 + 98),
                    SyncMutation(collection: "bills", id: "b1", write: .upsertBill(bill), clientUpdatedAt: t0 + 99),
                    SyncMutation(collection: "bills", id: "b2", write: .upsertBill(bill), clientUpdatedAt: t0 + 99),
                    SyncMutation(
                        collection: "days", id: "2026-09-21", write: .putDay(DayContextContent(maxTemperatureC: 31)),
                        clientUpdatedAt: t0 + 99),
                    SyncMutation(collection: "days", id: "not-a-date", write: .delete, clientUpdatedAt: t0 + 99),
                    SyncMutation(collection: "achievements", id: uid, write: .delete, clientUpdatedAt: t0 + 99),
                    SyncMutation(collection: "nope", id: "x", write: .delete, clientUpdatedAt: t0 + 99),
                ], profilePatch: patch)
            return "\(outcomes.map { "\($0)" }) head=\(head)"
        }
        page("everything", after: 0)
        page("paged", after: 3, limit: 2)
        page("without tombstones", after: 0, tombstones: false)
        record("push unknown user") {
            try store.applyMutations(userID: "nobody", deviceID: "d", now: t0, mutations: [], profilePatch: patch).headPosition
        }
        record("batch") {
            try store.createEntries(
                userID: uid,
                items: [
                    ("w1", entry(300, t0 + 50)), ("w9", entry(120, t0 + 70)),
                    ("b-hk", entry(100, t0 + 60, hk: "HK")), ("ghost", entry(1, t0)),
                    ("rest1", entry(1, t0)),
                ], deviceID: "phone", now: t0 + 200
            )
            .map { "\($0)" }
        }
        try store.deleteEntry(userID: uid, id: "w9", deviceID: nil, now: t0 + 300, precondition: { _ in true })
        try store.deleteBill(userID: uid, id: "b1", deviceID: nil, now: t0 + 300, precondition: { _ in true })
        record("purge nothing yet") { try store.purgeTombstones(deletedBefore: t0 + 150) }
        record("purge") { try store.purgeTombstones(deletedBefore: t0 + 1_000) }
        page("after purge", after: 0)
        return transcript
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try fixtures.sqliteStore().0)
        XCTAssertTrue(sqlite.contains { $0.hasPrefix("purge: (purged: 2, horizon: 19)") }, "\(sqlite)")
        XCTAssertTrue(sqlite.contains { $0.contains("superseded") }, "\(sqlite)")
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try fixtures.postgresStore().0)
        XCTAssertEqual(postgres.count, sqlite.count)
        for (s, p) in zip(sqlite, postgres) { XCTAssertEqual(p, s) }
    }
}
