import Foundation
import SuplashDomain
import SuplashJSON
import SuplashPostgresStore
import SuplashSQLiteStore
import XCTest

/// A retried identical sync push (same `clientUpdatedAt`, device and content) is `applied`
/// without a new version, change position or derived work (spec §5), on SQLite and on
/// PostgreSQL alike.
final class SyncReplayBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & SyncRepository

    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    /// `collection/id vN @position [deleted]` of an outcome, or its case name.
    static func describe(_ outcome: SyncMutationOutcome) -> String {
        switch outcome {
        case .applied(let c): "\(c.collection)/\(c.id) v\(c.version) @\(c.position)\(c.deleted ? " deleted" : "")"
        case .superseded: "superseded"
        case .rejected(let r): "rejected \(r.code)"
        }
    }

    func scenario(_ store: Store, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let uid = fixtures.alice
        let t0 = fixtures.t0
        try fixtures.makeUsers(store)
        let patch: @Sendable (JSONValue, UserProfile) throws -> UserProfile = { json, profile in
            var p = profile
            if let name = json["displayName"]?.stringValue { p.displayName = name }
            return p
        }
        let entry = WaterEntryContent(amountMl: 250, loggedAt: t0, source: .watch, healthKitUUID: nil, note: "cold")
        let bill = BillContent(
            provider: "ISKI", subscriberNo: "S-1",
            period: YearMonth(parsing: "2026-05") ?? LocalDate(dayNumber: 0).yearMonth,
            consumptionMilliM3: 1_000, amountMinor: 500,
            dueDate: LocalDate(parsing: "2026-06-10") ?? LocalDate(dayNumber: 0))
        let mutations = [
            SyncMutation(collection: "water_entries", id: "w1", write: .upsertEntry(entry), clientUpdatedAt: t0 + 10),
            SyncMutation(collection: "water_entries", id: "w2", write: .delete, clientUpdatedAt: t0 + 11),
            SyncMutation(collection: "bills", id: "b1", write: .upsertBill(bill), clientUpdatedAt: t0 + 12),
            SyncMutation(
                collection: "days", id: "2026-09-21", write: .putDay(DayContextContent(maxTemperatureC: 31)),
                clientUpdatedAt: t0 + 13),
            SyncMutation(
                collection: "profile", id: uid, write: .patchProfile(.object([("displayName", .string("Al"))])),
                clientUpdatedAt: t0 + 14),
        ]
        func feed() throws -> (changes: [String], head: Int64) {
            let page = try store.changes(userID: uid, after: 0, limit: 100, includeTombstones: true)
            return (
                page.changes.map { "\($0.collection)/\($0.id) v\($0.version) @\($0.position) t\($0.updatedAt - t0)" },
                page.headPosition
            )
        }

        // The first push; the entry is sent twice in it (a client retrying within one batch).
        let first = try store.applyMutations(
            userID: uid, deviceID: "watch", now: t0 + 100,
            mutations: mutations + [mutations[0]], profilePatch: patch)
        let firstAnswers = first.outcomes.map(Self.describe)
        XCTAssertEqual(firstAnswers.last, firstAnswers.first, "the repeat inside one push changed nothing", file: file, line: line)
        XCTAssertTrue(firstAnswers.first?.hasPrefix("water_entries/w1 v1 @") == true, "\(firstAnswers)", file: file, line: line)
        let before = try feed()

        // The retry: every mutation again, later. Nothing changes.
        let retry = try store.applyMutations(
            userID: uid, deviceID: "watch", now: t0 + 500, mutations: mutations,
            profilePatch: patch)
        XCTAssertEqual(
            retry.outcomes.map(Self.describe), Array(firstAnswers.prefix(mutations.count)),
            "a retried push answers applied at the stored version and position", file: file, line: line)
        XCTAssertEqual(retry.headPosition, first.headPosition, "no change position was taken", file: file, line: line)
        let after = try feed()
        XCTAssertEqual(
            after.changes, before.changes, "the feed (versions, positions, updatedAt) is unchanged",
            file: file, line: line)
        XCTAssertEqual(after.head, before.head, file: file, line: line)

        // Not a replay: another device, or other content on the same stamp (the later arrival wins).
        var changed = entry
        changed.amountMl = 300
        let other = try store.applyMutations(
            userID: uid, deviceID: "watch", now: t0 + 600,
            mutations: [
                SyncMutation(collection: "water_entries", id: "w1", write: .upsertEntry(changed), clientUpdatedAt: t0 + 10)
            ], profilePatch: patch)
        let otherDevice = try store.applyMutations(
            userID: uid, deviceID: "watch2", now: t0 + 700,
            mutations: [
                SyncMutation(collection: "bills", id: "b1", write: .upsertBill(bill), clientUpdatedAt: t0 + 12)
            ], profilePatch: patch)
        let final = try feed()
        return [
            "first: \(firstAnswers) head=\(first.headPosition)", "feed: \(before.changes) head=\(before.head)",
            "retry: \(retry.outcomes.map(Self.describe)) head=\(retry.headPosition)",
            "same stamp, other content: \(other.outcomes.map(Self.describe))",
            "same content, other device: \(otherDevice.outcomes.map(Self.describe))",
            "final feed: \(final.changes) head=\(final.head)",
        ]
    }

    func testRetriedPushChangesNothingOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try fixtures.sqliteStore().0)
        XCTAssertTrue(sqlite[3].contains("water_entries/w1 v2"), sqlite[3])
        XCTAssertTrue(sqlite[4].contains("bills/b1 v2"), sqlite[4])
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try fixtures.postgresStore().0)
        XCTAssertEqual(postgres.count, sqlite.count)
        for (s, p) in zip(sqlite, postgres) { XCTAssertEqual(p, s) }
    }
}
