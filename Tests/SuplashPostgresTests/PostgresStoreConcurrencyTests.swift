import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import XCTest

/// Races that SQLite's single writer rules out and PostgreSQL must settle the same way,
/// with writers on separate pools (as on separate server instances).
final class PostgresStoreConcurrencyTests: XCTestCase {
    let t0: Int64 = 1_790_000_000_000
    let user = "01930000-0000-7000-8000-0000000000aa"

    func makeInstances(_ count: Int) throws -> (setup: PostgresDatabase, stores: [PostgresStore]) {
        let url = try PostgresTestSupport.url()
        let setup = try PostgresTestSupport.migratedDatabase()
        let first = PostgresStore(database: setup)
        _ = try first.createUser(
            UserProfile(id: user, email: "race@example.test", displayName: nil, now: t0),
            passwordHash: "x",
            session: NewSession(
                id: "s1", userID: user, refreshTokenHash: [UInt8](repeating: 1, count: 32),
                createdAt: t0, refreshExpiresAt: t0 + 1_000_000))
        let stores = try (0..<count).map { _ in PostgresStore(database: try PostgresDatabase(url: url, poolSize: 4)) }
        return (setup, stores)
    }

    func testConcurrentIdempotentRepostCreatesOnce() throws {
        let t0 = self.t0
        let user = self.user
        let (setup, stores) = try makeInstances(4)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let outcomes = Locked([String]())
        let content = WaterEntryContent(amountMl: 250, loggedAt: t0, source: .phone, healthKitUUID: "HK-RACE", note: nil)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            do {
                // Half re-post the same id, half another id with the same HealthKit sample.
                let id = i % 2 == 0 ? "same" : "other-\(i)"
                switch try stores[i % stores.count].createEntry(userID: user, id: id, content: content, deviceID: nil, now: t0) {
                case .created: outcomes.withLock { $0.append("created") }
                case .existing: outcomes.withLock { $0.append("existing") }
                }
            } catch {
                outcomes.withLock { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(outcomes.current.filter { $0 == "created" }.count, 1, "\(outcomes.current)")
        XCTAssertEqual(outcomes.current.filter { $0 == "existing" }.count, 7, "\(outcomes.current)")
        XCTAssertEqual(try stores[0].listEntries(userID: user, from: nil, to: nil, after: nil, limit: 10).count, 1)
    }

    func testConcurrentRefreshRotationRotatesOnceAndRevokesOnReuse() throws {
        let t0 = self.t0
        let user = self.user
        let (setup, stores) = try makeInstances(2)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        let outcomes = Locked([RefreshOutcome]())
        let token = [UInt8](repeating: 1, count: 32)
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            do {
                let outcome = try stores[i].rotateRefreshToken(
                    hash: token, newHash: [UInt8](repeating: UInt8(50 + i), count: 32),
                    now: t0 + 1, newExpiresAt: t0 + 100)
                outcomes.withLock { $0.append(outcome) }
            } catch {
                XCTFail("\(error)")
            }
        }
        let got = outcomes.current
        XCTAssertEqual(got.filter { $0 == .rotated(sessionID: "s1", userID: user) }.count, 1, "\(got)")
        XCTAssertEqual(got.filter { $0 == .reused(sessionID: "s1", userID: user) }.count, 1, "\(got)")
        XCTAssertEqual(try stores[0].sessionsRevoked(since: t0), ["s1"])
    }

    func testConcurrentUpdatesTakeDistinctPositionsAndVersions() throws {
        let t0 = self.t0
        let user = self.user
        let (setup, stores) = try makeInstances(3)
        defer {
            setup.close()
            stores.forEach { $0.database.close() }
        }
        _ = try stores[0].createEntry(
            userID: user, id: "e",
            content: WaterEntryContent(
                amountMl: 1, loggedAt: t0, source: .phone,
                healthKitUUID: nil, note: nil),
            deviceID: nil, now: t0)
        DispatchQueue.concurrentPerform(iterations: 6) { i in
            for _ in 0..<5 {
                do {
                    _ = try stores[i % 3].updateEntry(
                        userID: user, id: "e", deviceID: "d\(i)", now: t0 + 1,
                        precondition: { _ in true }
                    ) { c in
                        var c = c
                        c.amountMl += 1
                        return c
                    }
                } catch {
                    XCTFail("\(error)")
                }
            }
        }
        let entry = try XCTUnwrap(try stores[0].entry(userID: user, id: "e"))
        XCTAssertEqual(entry.content.amountMl, 31, "no lost update")
        XCTAssertEqual(entry.version, 31)
        let position = try setup.read { try $0.query("SELECT change_position FROM water_entries WHERE id = 'e'").first?[0] }
        let counter = try setup.read { try $0.query("SELECT position FROM change_sequence").first?[0] }
        // user + (create + its achievements) + 30 × (update + its achievements), no gaps;
        // the last update took the last entry position, then its achievements the next.
        XCTAssertEqual(counter, .integer(63))
        XCTAssertEqual(position, .integer(62))
    }
}

/// A feed reader that resumes after the last position it got never misses a change, while
/// REST writes and sync pushes for the same user run on several instances.
final class PostgresFeedConcurrencyTests: XCTestCase {
    func testResumingReaderSeesEveryFinalVersionAcrossInstances() throws {
        let url = try PostgresTestSupport.url()
        let setup = try PostgresTestSupport.migratedDatabase()
        defer { setup.close() }
        let t0: Int64 = 1_790_000_000_000
        let user = "01930000-0000-7000-8000-0000000000ff"
        _ = try PostgresStore(database: setup).createUser(
            UserProfile(id: user, email: "feed@example.test", displayName: nil, now: t0), passwordHash: "x",
            session: NewSession(id: "s", userID: user, refreshTokenHash: [9], createdAt: t0, refreshExpiresAt: t0 + 1))
        let stores = try (0..<3).map { _ in PostgresStore(database: try PostgresDatabase(url: url, poolSize: 4)) }
        defer { stores.forEach { $0.database.close() } }

        let done = Locked(false)
        let seen = Locked([String: Int64]())  // "collection/id" → highest version seen
        let failures = Locked([String]())
        let reader = Thread {
            var cursor: Int64 = 0
            func drain() throws {
                while true {
                    let page = try stores[2].changes(userID: user, after: cursor, limit: 7, includeTombstones: true)
                    for change in page.changes {
                        seen.withLock { $0["\(change.collection)/\(change.id)"] = max($0["\(change.collection)/\(change.id)"] ?? 0, change.version) }
                        cursor = max(cursor, change.position)
                    }
                    if !page.hasMore { return }
                }
            }
            do {
                while !done.current { try drain() }
                try drain()
            } catch {
                failures.withLock { $0.append("reader: \(error)") }
            }
        }
        reader.start()
        DispatchQueue.concurrentPerform(iterations: 6) { worker in
            let store = stores[worker % 2]
            for n in 0..<12 {
                do {
                    let id = "e\(n % 5)"  // shared ids: creates, re-creates and pushes collide
                    if worker % 2 == 0 {
                        let content = WaterEntryContent(
                            amountMl: 100 + n, loggedAt: t0 + Int64(n) * 60_000, source: .phone,
                            healthKitUUID: nil, note: nil)
                        _ = try? store.createEntry(userID: user, id: "w\(worker)-\(n)", content: content, deviceID: "p", now: t0 + Int64(n))
                        _ = try? store.updateEntry(
                            userID: user, id: id, deviceID: "p", now: t0 + Int64(n),
                            precondition: { _ in true }
                        ) { c in
                            var c = c
                            c.amountMl += 1
                            return c
                        }
                    } else {
                        let content = WaterEntryContent(
                            amountMl: 200 + n, loggedAt: t0 + Int64(n) * 60_000, source: .watch,
                            healthKitUUID: nil, note: nil)
                        _ = try store.applyMutations(
                            userID: user, deviceID: "watch\(worker)", now: t0 + 1_000 + Int64(n),
                            mutations: [
                                SyncMutation(
                                    collection: "water_entries", id: id, write: .upsertEntry(content),
                                    clientUpdatedAt: t0 + 1_000 + Int64(n * 10 + worker))
                            ]
                        ) { _, profile in profile }
                    }
                } catch {
                    failures.withLock { $0.append("writer: \(error)") }
                }
            }
        }
        done.withLock { $0 = true }
        while !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(failures.current, [])
        // REST writes and pushes alike held the change sequence for one round trip each.
        for store in stores.prefix(2) {
            XCTAssertEqual(store.statistics.snapshot.maxRoundTripsHoldingChangeSequence, 1)
        }
        // Every row's final version was delivered to the resuming reader.
        let final = try stores[0].changes(userID: user, after: 0, limit: 10_000, includeTombstones: true).changes
        XCTAssertGreaterThan(final.count, 30)
        for change in final {
            XCTAssertEqual(seen.current["\(change.collection)/\(change.id)"], change.version, "\(change.collection)/\(change.id)")
        }
    }
}

/// REST writes (entries, days, bills) of many users on several instances take their change
/// positions at the commit (docs/postgresql.md, "Change sequence"): the change-sequence lock is held for one round trip per
/// transaction, no committed row keeps the unstamped placeholder, every position is
/// distinct, and a resuming feed reader of each user still misses nothing.
final class PostgresDeferredPositionTests: XCTestCase {
    func testRestWritesOfManyUsersHoldTheSequenceOneRoundTripAndLoseNothing() throws {
        let url = try PostgresTestSupport.url()
        let setup = try PostgresTestSupport.migratedDatabase()
        defer { setup.close() }
        let t0: Int64 = 1_790_000_000_000
        let users = (0..<4).map { "01930000-0000-7000-8000-00000000010\($0)" }
        let first = PostgresStore(database: setup)
        for (n, user) in users.enumerated() {
            _ = try first.createUser(
                UserProfile(id: user, email: "u\(n)@example.test", displayName: nil, now: t0),
                passwordHash: "x",
                session: NewSession(
                    id: "s\(n)", userID: user, refreshTokenHash: [UInt8(n)], createdAt: t0,
                    refreshExpiresAt: t0 + 1))
        }
        let stores = try (0..<3).map { _ in PostgresStore(database: try PostgresDatabase(url: url, poolSize: 4)) }
        defer { stores.forEach { $0.database.close() } }

        let done = Locked(false)
        let failures = Locked([String]())
        let seen = Locked([String: Int64]())  // "user/collection/id" → highest version seen
        let reader = Thread {
            var cursors = [String: Int64]()
            func drain() throws {
                for user in users {
                    while true {
                        let page = try stores[2].changes(userID: user, after: cursors[user] ?? 0, limit: 5, includeTombstones: true)
                        for change in page.changes {
                            let key = "\(user)/\(change.collection)/\(change.id)"
                            seen.withLock { $0[key] = max($0[key] ?? 0, change.version) }
                            cursors[user] = max(cursors[user] ?? 0, change.position)
                        }
                        if !page.hasMore { break }
                    }
                }
            }
            do {
                while !done.current { try drain() }
                try drain()
            } catch {
                failures.withLock { $0.append("reader: \(error)") }
            }
        }
        reader.start()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            let store = stores[worker % 2]
            let user = users[worker % users.count]
            for n in 0..<10 {
                do {
                    let content = WaterEntryContent(
                        amountMl: 100 + n, loggedAt: t0 + Int64(n % 3) * 86_400_000, source: .phone,
                        healthKitUUID: nil, note: nil)
                    _ = try store.createEntry(userID: user, id: "w\(worker)-\(n)", content: content, deviceID: "p", now: t0 + Int64(n))
                    if n % 3 == 1 {
                        _ = try store.updateEntry(
                            userID: user, id: "w\(worker)-\(n)", deviceID: "p", now: t0 + Int64(n),
                            precondition: { _ in true }
                        ) { c in
                            var c = c
                            c.amountMl += 1
                            return c
                        }
                    }
                    if n % 4 == 3 {
                        try store.deleteEntry(
                            userID: user, id: "w\(worker)-\(n)", deviceID: "p", now: t0 + Int64(n),
                            precondition: { _ in true })
                    }
                    if n % 5 == 2 {
                        let bill = BillContent(
                            provider: "ISKI", subscriberNo: "S-\(worker)-\(n)",
                            period: YearMonth(parsing: "2026-05") ?? LocalDate(dayNumber: 0).yearMonth,
                            consumptionMilliM3: 12_500, amountMinor: 45_000,
                            dueDate: LocalDate(parsing: "2026-06-10") ?? LocalDate(dayNumber: 0))
                        _ = try store.createBill(userID: user, id: "b\(worker)-\(n)", content: bill, deviceID: "p", now: t0 + Int64(n))
                        try store.deleteBill(
                            userID: user, id: "b\(worker)-\(n)", deviceID: "p", now: t0 + Int64(n) + 1,
                            precondition: { _ in true })
                    }
                    if n % 5 == 0 {
                        _ = try store.putDay(
                            userID: user, date: LocalDate(dayNumber: 20_700 + n % 3),
                            content: DayContextContent(maxTemperatureC: 30 + Double(worker), activeMinutes: n),
                            deviceID: "p", now: t0 + Int64(n))
                    }
                } catch {
                    failures.withLock { $0.append("writer \(worker): \(error)") }
                }
            }
        }
        done.withLock { $0 = true }
        while !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(failures.current, [])

        // The global critical section: one round trip (stamp + COMMIT) per write transaction.
        for store in stores.prefix(2) {
            let stats = store.statistics.snapshot
            XCTAssertGreaterThan(stats.positionedCommits, 0)
            XCTAssertEqual(stats.maxRoundTripsHoldingChangeSequence, 1)
        }
        // No committed placeholder, and every position is distinct across tables.
        let positions = try setup.read { c in
            try c.query(
                """
                SELECT change_position FROM water_entries UNION ALL SELECT change_position FROM days
                UNION ALL SELECT change_position FROM achievements UNION ALL SELECT change_position FROM users
                UNION ALL SELECT change_position FROM bills
                """
            ).compactMap { $0[0].int64 }
        }
        XCTAssertFalse(positions.contains { $0 <= 0 }, "no provisional position committed")
        XCTAssertEqual(Set(positions).count, positions.count, "distinct positions")
        // Every row's final version reached the resuming reader of its user.
        for user in users {
            let final = try stores[0].changes(userID: user, after: 0, limit: 10_000, includeTombstones: true).changes
            XCTAssertGreaterThan(final.count, 10)
            for change in final {
                XCTAssertEqual(
                    seen.current["\(user)/\(change.collection)/\(change.id)"], change.version,
                    "\(user)/\(change.collection)/\(change.id)")
            }
        }
        // The derived rows agree with the entries (writers of one user were serialised).
        for user in users {
            let check = try setup.read { c in
                try c.query(
                    """
                    SELECT (SELECT COALESCE(SUM(amount_ml), 0)::bigint FROM water_entries WHERE user_id = $1 AND deleted = 0),
                           (SELECT COALESCE(SUM(total_ml), 0)::bigint FROM daily_totals WHERE user_id = $1),
                           (SELECT COUNT(*) FROM water_entries WHERE user_id = $1 AND deleted = 0),
                           (SELECT COALESCE(SUM(entries_count), 0)::bigint FROM daily_totals WHERE user_id = $1)
                    """, [.text(user)])
            }
            XCTAssertEqual(check.first?[0], check.first?[1], "total ml of \(user)")
            XCTAssertEqual(check.first?[2], check.first?[3], "entry count of \(user)")
        }
    }
}
