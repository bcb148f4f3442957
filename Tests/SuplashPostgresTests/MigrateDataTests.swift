import Foundation
import SuplashDataMigration
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQLiteStore
import SuplashStorage
import XCTest

/// `SQLiteToPostgresCopy` (`suplash-server migrate-data`): a SQLite deployment written through
/// `SQLiteStore` reads the same through `PostgresStore` after the copy (positions and database
/// id included), re-runs converge (changes, deletions, a unique key that moved) without
/// duplicates, and a foreign or newer target is refused. Skipped without
/// `SUPLASH_TEST_POSTGRES_URL`.
final class MigrateDataTests: XCTestCase {
    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    struct Source {
        let store: SQLiteStore
        let database: SQLiteDatabase
        let path: String
    }

    func sqliteSource() throws -> Source {
        let dir = NSTemporaryDirectory() + "suplash-migrate-data-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/suplash.sqlite"
        let db = try SQLiteDatabase(path: path, readers: 2)
        fixtures.cleanups.append {
            db.close()
            try? FileManager.default.removeItem(atPath: dir)
        }
        try Migrator.migrate(db, try Migrator.load(directory: PostgresTestSupport.packageRoot + "/Migrations/sqlite"))
        return Source(store: SQLiteStore(database: db), database: db, path: path)
    }

    func target() throws -> PostgresDatabase {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 4)
        fixtures.cleanups.append { db.close() }
        return db
    }

    func entry(_ ml: Int, _ at: Int64, hk: String? = nil) -> WaterEntryContent {
        WaterEntryContent(amountMl: ml, loggedAt: at, source: .phone, healthKitUUID: hk, note: "note \(ml)")
    }

    /// Users, sessions, entries (one deleted), a HealthKit entry, a day, a bill, achievements,
    /// an idempotency record.
    func seed(_ store: SQLiteStore) throws {
        let t0 = fixtures.t0
        try fixtures.makeUsers(store)
        for i in 0..<30 {
            _ = try store.createEntry(
                userID: fixtures.alice, id: String(format: "e%03d", i), content: entry(100 + i, t0 + Int64(i) * 60_000),
                deviceID: "phone", now: t0 + Int64(i))
        }
        _ = try store.createEntry(userID: fixtures.bob, id: "hk1", content: entry(250, t0, hk: "HK-1"), deviceID: "watch", now: t0)
        try store.deleteEntry(userID: fixtures.alice, id: "e007", deviceID: "phone", now: t0 + 100, precondition: { _ in true })
        _ = try store.putDay(
            userID: fixtures.alice, date: LocalDate(dayNumber: 20_700),
            content: DayContextContent(maxTemperatureC: 31.5, activeMinutes: 40), deviceID: "phone", now: t0 + 200)
        let bill = BillContent(
            provider: "ISKI", subscriberNo: "S-1", period: YearMonth(parsing: "2026-05") ?? LocalDate(dayNumber: 0).yearMonth,
            consumptionMilliM3: 12_500, amountMinor: 45_000,
            dueDate: LocalDate(parsing: "2026-06-10") ?? LocalDate(dayNumber: 0))
        _ = try store.createBill(userID: fixtures.alice, id: "b1", content: bill, deviceID: "phone", now: t0 + 300)
        try store.saveIdempotencyRecord(
            caller: "user:\(fixtures.alice)", key: "k1",
            record: IdempotencyRecord(
                fingerprint: [1, 2, 3], status: 201, headers: [["ETag", "\"1\""]],
                body: Array("{}".utf8), expiresAt: t0 + 86_400_000),
            now: t0 + 400)
    }

    /// What a client sees: profiles, entries, the sync feed with positions, achievements, bills.
    func transcript(
        _ store: some UserRepository & WaterEntryRepository & SyncRepository & HydrationRepository & BillRepository
            & IdempotencyRepository
    ) throws -> [String] {
        var lines: [String] = []
        for uid in [fixtures.alice, fixtures.bob] {
            guard let user = try store.user(id: uid) else {
                lines.append("\(uid): missing")
                continue
            }
            lines.append("user \(user.profile) hash=\(user.passwordHash ?? "-")")
            lines.append("entries \(try store.listEntries(userID: uid, from: nil, to: nil, after: nil, limit: 100))")
            let page = try store.changes(userID: uid, after: 0, limit: 1000, includeTombstones: true)
            lines.append(
                "feed \(page.changes.map { "\($0.collection)/\($0.id)@\($0.position) v\($0.version)\($0.deleted ? " deleted" : "")" }) "
                    + "head=\(page.headPosition) horizon=\(page.purgeHorizon)")
            lines.append("achievements \(try store.achievements(userID: uid))")
            lines.append("bills \(try store.listBills(userID: uid, after: nil, limit: 100))")
        }
        lines.append("database \(try store.databaseID())")
        lines.append(
            "idempotency \(String(describing: try store.idempotencyRecord(caller: "user:\(fixtures.alice)", key: "k1", now: fixtures.t0 + 500)))")
        return lines
    }

    func testCopyServesTheSameDataAndReRunsConverge() throws {
        let target = try target()
        let source = try sqliteSource()
        try seed(source.store)

        let first = try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target, batchSize: 7)
        XCTAssertTrue(first.verified, "\(first.tables)")
        XCTAssertFalse(first.replacedAll)
        let entries = try XCTUnwrap(first.tables.first { $0.table == "water_entries" })
        XCTAssertEqual(entries.sourceRows, 31)
        XCTAssertEqual(entries.targetRows, 31)
        XCTAssertEqual(entries.written, 31)
        XCTAssertEqual(first.tables.first { $0.table == "idempotency_records" }?.targetRows, 1)
        XCTAssertEqual(first.tables.first { $0.table == "sessions" }?.targetRows, 2)
        XCTAssertTrue(first.skippedTables.contains("schema_migrations"))
        XCTAssertTrue(Set(first.skippedTables).isSubset(of: ["schema_migrations", "rate_limit_buckets", "server_secrets"]), "\(first.skippedTables)")

        let postgres = PostgresStore(database: target)
        XCTAssertEqual(try transcript(postgres), try transcript(source.store))
        XCTAssertEqual(try postgres.databaseID(), try source.store.databaseID())

        // Nothing changed: nothing written, nothing deleted, same counts.
        let again = try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target, batchSize: 7)
        XCTAssertTrue(again.verified)
        XCTAssertEqual(again.tables.map(\.written), Array(repeating: 0, count: again.tables.count))
        XCTAssertEqual(again.tables.map(\.deleted), Array(repeating: 0, count: again.tables.count))
        XCTAssertEqual(again.tables.map(\.targetRows), first.tables.map(\.targetRows))

        // A delta: a new entry, a deletion, an erased account, a purged tombstone, an expired record.
        let t0 = fixtures.t0
        _ = try source.store.createEntry(userID: fixtures.alice, id: "e100", content: entry(999, t0 + 5_000_000), deviceID: "watch", now: t0 + 1_000)
        try source.store.deleteEntry(userID: fixtures.alice, id: "e010", deviceID: "phone", now: t0 + 1_001, precondition: { _ in true })
        XCTAssertTrue(try source.store.eraseAccount(userID: fixtures.bob, now: t0 + 1_002))
        let purge = try source.store.purgeTombstones(deletedBefore: t0 + 500)
        XCTAssertEqual(purge.purged, 1)  // e007, deleted at t0 + 100
        XCTAssertEqual(try source.store.purgeIdempotencyRecords(now: t0 + 100_000_000), 1)

        let delta = try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target, batchSize: 7)
        XCTAssertTrue(delta.verified, "\(delta.tables)")
        XCTAssertEqual(delta.targetHorizon, purge.horizon)
        let deltaEntries = try XCTUnwrap(delta.tables.first { $0.table == "water_entries" })
        XCTAssertEqual(deltaEntries.written, 2)  // e100 new, e010 now a tombstone
        XCTAssertEqual(deltaEntries.targetRows, 30)  // 31 + 1 − e007 (purged) − bob's hk1 (erased)
        XCTAssertEqual(delta.tables.first { $0.table == "users" }?.deleted, 1)
        XCTAssertEqual(delta.tables.first { $0.table == "idempotency_records" }?.deleted, 1)
        XCTAssertEqual(delta.tables.first { $0.table == "erased_accounts" }?.targetRows, 1)
        XCTAssertEqual(try transcript(postgres), try transcript(source.store))
        // The counter continues after the copied positions: the next write gets the next one.
        let head = try source.store.changes(userID: fixtures.alice, after: 0, limit: 1, includeTombstones: true).headPosition
        _ = try postgres.createEntry(userID: fixtures.alice, id: "e200", content: entry(123, t0 + 6_000_000), deviceID: "phone", now: t0 + 2_000)
        let after = try postgres.changes(userID: fixtures.alice, after: head, limit: 10, includeTombstones: true)
        XCTAssertEqual(after.changes.first?.id, "e200")
        XCTAssertEqual(after.changes.first?.position, delta.sourceSequence + 1)
    }

    func testANewPendingReminderReplacingADeletedOneIsADeltaNotAFullReplace() throws {
        let target = try target()
        let source = try sqliteSource()
        try seed(source.store)
        // One pending hydration reminder (unique per user among pending rows), copied.
        let alice = fixtures.alice
        func insert(_ id: String) throws {
            try source.database.write { w in
                try w.connection.run(
                    "INSERT INTO reminders (id, user_id, kind, due_at, local_date, created_at, updated_at) "
                        + "VALUES (?1, ?2, 'hydration', 1, '2026-09-21', 1, 1)", [.text(id), .text(alice)])
            }
        }
        try source.database.write { w in try w.connection.run("DELETE FROM reminders") }
        try insert("0193f000-0000-7000-8000-000000000002")
        XCTAssertFalse(try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target).replacedAll)
        // The recompute replaced it by one with a lower key (the old row deleted): the new row
        // takes the old one's place in the unique index.
        try source.database.write { w in try w.connection.run("DELETE FROM reminders") }
        try insert("0193f000-0000-7000-8000-000000000001")
        let delta = try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target)
        XCTAssertFalse(delta.replacedAll, "a delta, not a full replace")
        XCTAssertTrue(delta.verified, "\(delta.tables)")
        let reminders = try XCTUnwrap(delta.tables.first { $0.table == "reminders" })
        XCTAssertEqual(reminders.written, 1)
        XCTAssertEqual(reminders.deleted, 1)
        XCTAssertEqual(delta.tables.first { $0.table == "water_entries" }?.written, 0)
        // Replaced again, the old row kept as cancelled: updated before the lower new key is inserted.
        try source.database.write { w in try w.connection.run("UPDATE reminders SET state = 'cancelled'") }
        try insert("0193f000-0000-7000-8000-000000000000")
        let next = try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target, batchSize: 1)
        XCTAssertFalse(next.replacedAll, "a delta, not a full replace")
        XCTAssertTrue(next.verified, "\(next.tables)")
        XCTAssertEqual(next.tables.first { $0.table == "reminders" }?.written, 2)
    }

    func testUniqueKeyThatMovedBetweenRunsIsReplacedInFull() throws {
        let target = try target()
        let source = try sqliteSource()
        try seed(source.store)
        XCTAssertTrue(try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target).verified)

        // Alice and Bob swap addresses (a unique column other than the key): an upsert in key
        // order would collide with the other row's old value.
        try source.database.write { w in
            try w.connection.run("UPDATE users SET email = 'tmp@example.test' WHERE email = 'alice@example.test'")
            try w.connection.run("UPDATE users SET email = 'alice@example.test' WHERE email = 'bob@example.test'")
            try w.connection.run("UPDATE users SET email = 'bob@example.test' WHERE email = 'tmp@example.test'")
        }
        let report = try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target)
        XCTAssertTrue(report.replacedAll)
        XCTAssertTrue(report.verified, "\(report.tables)")
        let postgres = PostgresStore(database: target)
        XCTAssertEqual(try postgres.user(email: "alice@example.test")?.profile.id, fixtures.bob)
        XCTAssertEqual(try postgres.user(email: "bob@example.test")?.profile.id, fixtures.alice)
        XCTAssertEqual(try transcript(postgres), try transcript(source.store))
    }

    func testRefusesAForeignOrNewerTargetUnlessForced() throws {
        let target = try target()
        let first = try sqliteSource()
        try seed(first.store)
        XCTAssertTrue(try SQLiteToPostgresCopy.run(sqlitePath: first.path, target: target).verified)

        // Another deployment into the same database: refused, nothing changed.
        let other = try sqliteSource()
        try fixtures.makeUsers(other.store)
        XCTAssertThrowsError(try SQLiteToPostgresCopy.run(sqlitePath: other.path, target: target)) { error in
            XCTAssertEqual(error as? SQLiteToPostgresCopy.Failure, .differentDatabase)
        }
        let postgres = PostgresStore(database: target)
        XCTAssertEqual(try postgres.databaseID(), try first.store.databaseID())

        // A PostgreSQL server wrote after the copy: copying again would undo it.
        _ = try postgres.createEntry(userID: fixtures.alice, id: "pg1", content: entry(1, fixtures.t0), deviceID: "phone", now: fixtures.t0 + 10_000)
        XCTAssertThrowsError(try SQLiteToPostgresCopy.run(sqlitePath: first.path, target: target)) { error in
            guard case .targetAhead = error as? SQLiteToPostgresCopy.Failure else {
                return XCTFail("expected targetAhead, got \(error)")
            }
        }
        XCTAssertNotNil(try postgres.entry(userID: fixtures.alice, id: "pg1"))

        // --force: the target becomes the other deployment, positions never go backwards.
        let sequenceBefore = try target.read { c in try c.query("SELECT position FROM change_sequence").first?[0] }
        let forced = try SQLiteToPostgresCopy.run(sqlitePath: other.path, target: target, force: true)
        XCTAssertTrue(forced.verified, "\(forced.tables)")
        XCTAssertEqual(try postgres.databaseID(), try other.store.databaseID())
        XCTAssertNil(try postgres.entry(userID: fixtures.alice, id: "pg1"))
        XCTAssertEqual(forced.tables.first { $0.table == "water_entries" }?.targetRows, 0)
        if case .integer(let before) = sequenceBefore ?? .null {
            XCTAssertEqual(forced.targetSequence, before)
        } else {
            XCTFail("no change_sequence row")
        }
    }

    func testATableItDoesNotKnowRefusesTheRunAndRateLimitBucketsAreLeftOut() throws {
        let target = try target()
        let source = try sqliteSource()
        try fixtures.makeUsers(source.store)
        // Rate-limit buckets (schema v6) refill by themselves: not copied, named in the report.
        try source.database.write { w in
            try w.connection.execute(
                """
                CREATE TABLE IF NOT EXISTS rate_limit_buckets (bucket BLOB PRIMARY KEY, tokens REAL NOT NULL,
                    allowed INTEGER NOT NULL, updated_at REAL NOT NULL, expires_at REAL NOT NULL) WITHOUT ROWID;
                INSERT OR REPLACE INTO rate_limit_buckets VALUES (x'01', 1.5, 1, 10.0, 20.0);
                """)
        }
        let report = try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target)
        XCTAssertTrue(report.verified, "\(report.tables)")
        XCTAssertEqual(report.skippedTables, ["rate_limit_buckets", "schema_migrations", "server_secrets"])

        // State a later migration might add, unknown to this copy: refused, not skipped.
        try source.database.write { w in
            try w.connection.execute("CREATE TABLE future_state (id TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID")
        }
        XCTAssertThrowsError(try SQLiteToPostgresCopy.run(sqlitePath: source.path, target: target)) { error in
            guard case .schemaMismatch(let detail) = error as? SQLiteToPostgresCopy.Failure else { return XCTFail("got \(error)") }
            XCTAssertTrue(detail.contains("future_state"), detail)
        }
    }

    func testRefusesASourceThatIsNotASuplashDatabase() throws {
        let target = try target()
        XCTAssertThrowsError(try SQLiteToPostgresCopy.run(sqlitePath: "/nonexistent/suplash.sqlite", target: target)) { error in
            guard case .source = error as? SQLiteToPostgresCopy.Failure else { return XCTFail("got \(error)") }
        }
    }
}
