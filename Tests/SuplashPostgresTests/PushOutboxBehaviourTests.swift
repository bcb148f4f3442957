import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQL
import SuplashSQLiteStore
import XCTest

/// The push outbox (spec §9; docs/push.md, "Push outbox"): background refresh rows written with
/// the change that causes them (the writer's device skipped, replays trigger nothing), one
/// pending row per device, the coalescing window at claim time, expiry, token drops and the
/// purge behave alike on SQLite and PostgreSQL; on PostgreSQL two store objects never claim
/// one row.
final class PushOutboxBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & DeviceRepository & BillRepository & PushOutboxRepository

    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    static let phone = "0193d000-0000-4000-8000-000000000001"
    static let watch = "0193d000-0000-4000-8000-000000000002"
    static let tablet = "0193d000-0000-4000-8000-000000000003"
    static let phoneToken = [UInt8](repeating: 0xA1, count: 32)
    static let watchToken = [UInt8](repeating: 0xB2, count: 32)
    static let tabletToken = [UInt8](repeating: 0xC3, count: 32)
    static let window: Int64 = 300_000

    func register(_ store: Store, _ user: String, _ device: String, _ tokens: [(PushType, [UInt8])]) throws {
        _ = try store.registerDevice(
            userID: user, deviceID: device, sessionID: nil,
            registration: DeviceRegistration(
                platform: .ios, bundleID: "app.suplash.ios", environment: .production, locale: nil, appVersion: nil,
                tokens: tokens.map { PushToken(pushType: $0.0, token: $0.1) }),
            now: fixtures.t0)
    }

    func bill(_ n: Int) -> BillContent {
        BillContent(
            provider: "ISKI", subscriberNo: "\(n)", period: YearMonth(parsing: "2026-01") ?? LocalDate(dayNumber: 0).yearMonth,
            consumptionMilliM3: 12_000, amountMinor: 50_000, dueDate: LocalDate(parsing: "2026-02-10") ?? LocalDate(dayNumber: 0))
    }

    /// Milliseconds since the epoch, a little ahead of every row's time (rows take the wall
    /// clock), and past the millisecond the last row took (payloads carry it).
    func later() -> Int64 {
        Thread.sleep(forTimeInterval: 0.002)
        return Int64(Date().timeIntervalSince1970 * 1000) + 1
    }

    func describe(_ pushes: [ClaimedPush]) -> String {
        pushes.map { "\($0.deviceID.suffix(2)) \($0.pushType.rawValue) \(TestSealing.token($0) == Self.watchToken ? "W" : "P")" }
            .sorted().joined(separator: ", ")
    }

    func scenario(_ store: Store) throws -> [String] {
        let alice = fixtures.alice
        try fixtures.makeUsers(store)
        try register(store, alice, Self.phone, [(.alert, Self.phoneToken), (.background, Self.phoneToken)])
        try register(store, alice, Self.watch, [(.background, Self.watchToken)])
        try register(store, alice, Self.tablet, [(.alert, Self.tabletToken)])
        var transcript: [String] = []
        func claim(_ now: Int64) throws -> [ClaimedPush] {
            try store.claimDuePushes(now: now, limit: 10, leaseMs: 60_000, backgroundWindowMs: Self.window)
        }
        func pending() throws -> Int { try store.pushQueueFigures(now: later()).pending }

        // A change from the phone: the watch gets a background push, the phone (the writer) and
        // the tablet (no background token) none.
        _ = try store.createBill(userID: alice, id: "b1", content: bill(1), deviceID: Self.phone, now: fixtures.t0)
        let first = try claim(later())
        transcript.append("from phone: \(describe(first))")
        XCTAssertTrue(first.first?.payload.contains("\"content-available\":1") == true)
        XCTAssertEqual(first.first?.collapseID, BackgroundRefreshRules.collapseID)
        XCTAssertEqual(first.first?.id.count, 32)
        // Two more changes while it is in flight: still one pending row for the watch.
        _ = try store.createBill(userID: alice, id: "b2", content: bill(2), deviceID: Self.phone, now: fixtures.t0)
        _ = later()
        _ = try store.createBill(userID: alice, id: "b3", content: bill(3), deviceID: Self.phone, now: fixtures.t0)
        transcript.append("pending while in flight: \(try pending())")
        // Sent: the newer payload stays pending, and waits for the window (the trailing push).
        let sentAt = later()
        if let push = first.first { try store.recordPushSent(id: push.id, payload: push.payload, now: sentAt) }
        transcript.append("pending after send: \(try pending())")
        transcript.append("claim within the window: \(describe(try claim(later())))")
        let trailing = try claim(sentAt + Self.window)
        transcript.append("claim after the window: \(describe(trailing))")
        XCTAssertNotEqual(trailing.first?.payload, first.first?.payload, "the trailing push carries the newest change")
        if let push = trailing.first { try store.recordPushSent(id: push.id, payload: push.payload, now: sentAt + Self.window) }

        // An identical replay takes no position: nothing is queued.
        _ = try store.createBill(userID: alice, id: "b1", content: bill(1), deviceID: Self.phone, now: fixtures.t0)
        transcript.append("pending after a replay: \(try pending())")
        // A change without a device (an admin key): every device with a background token.
        _ = try store.createBill(userID: alice, id: "b4", content: bill(4), deviceID: nil, now: fixtures.t0)
        transcript.append("pending after an admin change: \(try pending())")
        let far = sentAt + 2 * Self.window
        let both = try claim(far)
        transcript.append("claim: \(describe(both))")  // the watch's third send in the hour is allowed
        // The phone's token is gone at Apple: dropped with the row.
        if let phonePush = both.first(where: { $0.deviceID == Self.phone }) {
            try store.recordPushFailed(id: phonePush.id, reason: "Unregistered", now: far, dropTokenIndex: phonePush.tokenIndex)
        }
        transcript.append("phone after Unregistered: \(try store.device(userID: alice, id: Self.phone)?.pushTypes.map(\.rawValue) ?? [])")
        if let watchPush = both.first(where: { $0.deviceID == Self.watch }) {
            try store.recordPushSent(id: watchPush.id, payload: watchPush.payload, now: far)
        }
        // The watch had three sends within the hour: the next waits for the hour.
        _ = try store.createBill(userID: alice, id: "b5", content: bill(5), deviceID: nil, now: fixtures.t0)
        transcript.append("fourth within the hour: \(describe(try claim(far + Self.window)))")
        transcript.append("an hour after the first: \(describe(try claim(sentAt + BackgroundRefreshRules.hourMs)))")
        // Expired rows are dropped at claim time.
        _ = try store.createBill(userID: alice, id: "b6", content: bill(6), deviceID: Self.phone, now: fixtures.t0)
        transcript.append("pending before expiry: \(try pending())")
        transcript.append("claim after expiry: \(describe(try claim(later() + 10 * BackgroundRefreshRules.hourMs)))")
        transcript.append("pending after expiry: \(try pending())")
        transcript.append("purged: \(try store.purgePushes(before: sentAt + 10 * BackgroundRefreshRules.hourMs))")
        return transcript
    }

    /// Widget and complication pushes: today's progress moving by ≥ 5 % of the goal (or reaching
    /// it) queues one for each other device with such a token, within the 24-hour budgets.
    func progressScenario(_ store: Store & SyncRepository) throws -> [String] {
        let alice = fixtures.alice
        try fixtures.makeUsers(store)
        let ipad = "0193d000-0000-4000-8000-000000000004"
        try register(store, alice, Self.phone, [(.alert, Self.phoneToken), (.background, Self.phoneToken)])
        try register(store, alice, Self.watch, [(.complication, Self.watchToken)])
        try register(store, alice, ipad, [(.widgets, Self.tabletToken)])
        var transcript: [String] = []
        var n = 0
        func drink(_ ml: Int, daysAgo: Int64 = 0) throws {
            n += 1
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let content = WaterEntryContent(
                amountMl: ml, loggedAt: now - daysAgo * 86_400_000, source: .phone, healthKitUUID: nil, note: nil)
            _ = try store.applyMutations(
                userID: alice, deviceID: Self.phone, now: now,
                mutations: [
                    SyncMutation(
                        collection: "water_entries", id: String(format: "0193c000-0000-4000-8000-%012d", n),
                        write: .upsertEntry(content), clientUpdatedAt: now)
                ]
            ) { _, profile in profile }
        }
        func send(widgetsPerDay: Int = ProgressPushRules.widgetsPerDay) throws -> String {
            let now = later()
            let pushes = try store.claimDuePushes(
                now: now, limit: 10, leaseMs: 60_000, backgroundWindowMs: Self.window, widgetsPerDay: widgetsPerDay)
            for p in pushes { try store.recordPushSent(id: p.id, payload: p.payload, now: now) }
            XCTAssertTrue(pushes.allSatisfy { $0.payload == ProgressPushRules.payload })
            return pushes.map { "\($0.deviceID.suffix(2)) \($0.pushType.rawValue)" }.sorted().joined(separator: ", ")
        }
        try drink(500)
        transcript.append("500 ml: \(try send())")
        try drink(10)
        transcript.append("10 ml: \(try send())")
        try drink(500, daysAgo: 3)
        transcript.append("500 ml three days ago: \(try send())")
        // A budget of one widget push a day (the setting): the widget's row is over it.
        try drink(500)
        transcript.append("budget 1: \(try send(widgetsPerDay: 1))")
        transcript.append("pending after: \(try store.pushQueueFigures(now: later()).pending)")
        // The widget's budget: 40 in 24 hours (one sent above); the complication's is 50 (two
        // sent above, 39 + 1 + 8 below).
        for _ in 0..<39 {
            try drink(300)
            _ = try send()
        }
        try drink(300)
        transcript.append("41st: \(try send())")
        for _ in 0..<8 {
            try drink(300)
            _ = try send()
        }
        try drink(300)
        transcript.append("51st complication: \(try send())")
        return transcript
    }

    func testProgressPushesOnSQLiteAndPostgres() throws {
        let expected = [
            "500 ml: 02 complication, 04 widgets", "10 ml: ", "500 ml three days ago: ", "budget 1: 02 complication",
            "pending after: 0", "41st: 02 complication", "51st complication: ",
        ]
        XCTAssertEqual(try progressScenario(try fixtures.sqliteStore().0), expected)
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        XCTAssertEqual(try progressScenario(try fixtures.postgresStore().0), expected)
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try fixtures.sqliteStore().0)
        XCTAssertEqual(
            sqlite,
            [
                "from phone: 02 background W",
                "pending while in flight: 1",
                "pending after send: 1",
                "claim within the window: ",
                "claim after the window: 02 background W",
                "pending after a replay: 0",
                "pending after an admin change: 2",
                "claim: 01 background P, 02 background W",
                "phone after Unregistered: []",
                "fourth within the hour: ",
                "an hour after the first: 02 background W",
                "pending before expiry: 1",
                "claim after expiry: ",
                "pending after expiry: 0",
                "purged: 4",
            ])
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try fixtures.postgresStore().0)
        XCTAssertEqual(postgres, sqlite)
    }

    /// Two store objects (two connection pools, as two instances) claiming at once from many
    /// threads: every due row is claimed exactly once.
    func testTwoInstancesNeverClaimOneRow() throws {
        let (store, _) = try fixtures.postgresStore()
        let other = PostgresStore(database: try PostgresDatabase(url: try PostgresTestSupport.url(), poolSize: 4))
        fixtures.cleanups.append { other.database.close() }
        try fixtures.makeUsers(store)
        for i in 0..<20 {
            for user in [fixtures.alice, fixtures.bob] {
                let device = String(format: "0193f000-0000-4000-8000-%012d", i)
                let token = [UInt8(i), user == fixtures.alice ? 1 : 2] + [UInt8](repeating: 7, count: 30)
                try register(store, user, device, [(.background, token)])
            }
        }
        for user in [fixtures.alice, fixtures.bob] {
            _ = try store.createBill(userID: user, id: "b", content: bill(1), deviceID: nil, now: fixtures.t0)
        }
        let now = later()
        XCTAssertEqual(try store.pushQueueFigures(now: now).pending, 40)
        let claimed = Locked([String]())
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let s: PostgresStore = i % 2 == 0 ? store : other
            while true {
                do {
                    let batch = try s.claimDuePushes(now: now, limit: 3, leaseMs: 60_000, backgroundWindowMs: Self.window)
                    if batch.isEmpty { return }
                    claimed.withLock { $0 += batch.map(\.id) }
                } catch {
                    failures.withLock { $0 += 1 }
                    return
                }
            }
        }
        XCTAssertEqual(failures.current, 0)
        XCTAssertEqual(claimed.current.count, 40)
        XCTAssertEqual(Set(claimed.current).count, 40, "no row claimed twice")
    }

    /// The background refresh is queued with the commit: a bill costs the same round trips with
    /// devices registered as without.
    func testBackgroundRefreshAddsNoRoundTrip() throws {
        let (store, db) = try oneConnectionStore()
        func roundTrips(_ body: () throws -> Void) throws -> Int { try Self.roundTrips(db, body) }
        let (alice, bob) = (fixtures.alice, fixtures.bob)
        // Warm-up: every statement prepared once.
        _ = try store.createBill(userID: bob, id: "w", content: bill(0), deviceID: nil, now: fixtures.t0)
        try register(store, alice, Self.watch, [(.background, Self.watchToken)])
        _ = try store.createBill(userID: alice, id: "w", content: bill(0), deviceID: nil, now: fixtures.t0)
        let without = try roundTrips {
            _ = try store.createBill(userID: bob, id: "x", content: self.bill(1), deviceID: Self.phone, now: self.fixtures.t0)
        }
        let with = try roundTrips {
            _ = try store.createBill(userID: alice, id: "x", content: self.bill(1), deviceID: Self.phone, now: self.fixtures.t0)
        }
        XCTAssertEqual(with, without)
        XCTAssertEqual(try store.pushQueueFigures(now: later()).pending, 1)
    }

    /// A commit that queued pushes rings this process's doorbell after it (SQLite); one that
    /// queued nothing — no device, or the device's row waiting — does not. Observers run in
    /// commit order, so the last ring counted marks that no earlier write rang.
    func testCommitsThatQueuePushesRingTheDoorbellOnSQLite() throws {
        let (store, _) = try fixtures.sqliteStore()
        try fixtures.makeUsers(store)
        let (alice, bob) = (fixtures.alice, fixtures.bob)
        try register(store, alice, Self.watch, [(.background, Self.watchToken)])
        let rings = Locked(0)
        let stop = store.observeQueuedPushes { rings.withLock { $0 += 1 } }
        defer { stop() }
        _ = try store.createBill(userID: bob, id: "b1", content: bill(1), deviceID: Self.phone, now: fixtures.t0)
        _ = try store.createBill(userID: alice, id: "b1", content: bill(1), deviceID: Self.phone, now: fixtures.t0)
        _ = try store.createBill(userID: alice, id: "b2", content: bill(2), deviceID: Self.phone, now: fixtures.t0)
        _ = try store.createBill(userID: bob, id: "b2", content: bill(2), deviceID: Self.phone, now: fixtures.t0)
        let now = later()
        for push in try store.claimDuePushes(now: now, limit: 10, leaseMs: 60_000, backgroundWindowMs: 0) {
            try store.recordPushSent(id: push.id, payload: push.payload, now: now)
        }
        _ = try store.createBill(userID: alice, id: "b3", content: bill(3), deviceID: Self.phone, now: fixtures.t0)
        XCTAssertTrue(eventually { rings.current >= 2 })
        XCTAssertEqual(rings.current, 2, "only the two writes that queued a row rang")
    }

    /// On PostgreSQL a commit that queued pushes notifies `suplash_pushes` (payload: the user),
    /// heard by every instance's listener; one that queued nothing does not.
    func testCommitsThatQueuePushesNotifyOnPostgres() throws {
        let (store, _) = try fixtures.postgresStore()
        let db = store.database
        try fixtures.makeUsers(store)
        let (alice, bob) = (fixtures.alice, fixtures.bob)
        try register(store, alice, Self.watch, [(.background, Self.watchToken)])
        let heard = Locked([String]())
        let listening = Locked(0)
        let listener = try PostgresListener(
            url: try PostgresTestSupport.url(), channels: [PostgresClusterChannel.pushes],
            onNotification: { _, payload in heard.withLock { $0.append(payload) } },
            onConnection: { if case .listening = $0 { listening.withLock { $0 += 1 } } })
        try listener.start()
        defer { listener.stop() }
        XCTAssertTrue(eventually { listening.current == 1 })
        _ = try store.createBill(userID: bob, id: "b1", content: bill(1), deviceID: Self.phone, now: fixtures.t0)
        _ = try store.createBill(userID: alice, id: "b1", content: bill(1), deviceID: Self.phone, now: fixtures.t0)
        _ = try store.createBill(userID: alice, id: "b2", content: bill(2), deviceID: Self.phone, now: fixtures.t0)
        try db.transaction { tx in tx.notify(channel: PostgresClusterChannel.pushes, payload: "end") }
        XCTAssertTrue(eventually { heard.current.last == "end" })
        XCTAssertEqual(heard.current, [alice, "end"])
    }

    /// A sent batch's outcomes are recorded in one transaction whose round trips do not grow
    /// with the batch: the pending payloads in one pipeline, the rest with the commit. Sent,
    /// retried and failed rows end as recorded; a token is dropped when asked.
    func testABatchOfOutcomesIsOneTransactionOfFixedRoundTrips() throws {
        let (store, db) = try oneConnectionStore()
        let alice = fixtures.alice
        for i in 1...9 {
            let device = String(format: "0193e000-0000-4000-8000-%012d", i)
            try register(store, alice, device, [(.background, [UInt8(i)] + [UInt8](repeating: 0xE5, count: 31))])
        }
        _ = try store.createBill(userID: alice, id: "b1", content: bill(1), deviceID: nil, now: fixtures.t0)
        let now = later()
        let claimed = try store.claimDuePushes(now: now, limit: 10, leaseMs: 60_000, backgroundWindowMs: 0)
        XCTAssertEqual(claimed.count, 9)
        func roundTrips(_ body: () throws -> Void) throws -> Int { try Self.roundTrips(db, body) }
        func batch(_ p: ArraySlice<ClaimedPush>) -> [PushOutcome] {
            [
                .sent(id: p[p.startIndex].id, payload: p[p.startIndex].payload),
                .sent(id: p[p.startIndex + 1].id, payload: p[p.startIndex + 1].payload),
                .retry(id: p[p.startIndex + 2].id, attempts: 1, nextAttemptAt: now + 1_000, reason: "TooManyRequests"),
                .failed(id: p[p.startIndex + 3].id, reason: "Unregistered", dropTokenIndex: p[p.startIndex + 3].tokenIndex),
            ]
        }
        try store.recordPushOutcomes(batch(claimed[0..<4]), now: now)  // warm-up: every statement prepared
        let one = try roundTrips { try store.recordPushSent(id: claimed[4].id, payload: claimed[4].payload, now: now) }
        let four = try roundTrips { try store.recordPushOutcomes(batch(claimed[5..<9]), now: now) }
        XCTAssertEqual(one, 2, "the pending payloads, the commit")
        XCTAssertEqual(four, one)
        let states = try db.read {
            try $0.query("SELECT state, coalesce(reason, '') FROM push_outbox ORDER BY state, reason").map {
                "\($0[0].text ?? "") \($0[1].text ?? "")"
            }
        }
        XCTAssertEqual(
            states,
            ["failed Unregistered", "failed Unregistered", "pending TooManyRequests", "pending TooManyRequests"]
                + Array(repeating: "sent ", count: 5))
        let failedDevice = try XCTUnwrap(claimed.last?.deviceID)
        XCTAssertEqual(try store.device(userID: alice, id: failedDevice)?.pushTypes, [], "the stale token is dropped")
    }

    /// A PostgreSQL store on a pool of one connection (its round trips are counted), with the
    /// fixtures' users.
    func oneConnectionStore() throws -> (PostgresStore, PostgresDatabase) {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        fixtures.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try fixtures.makeUsers(store)
        return (store, db)
    }

    /// The round trips `body` makes on `db` (a pool of one connection).
    static func roundTrips(_ db: PostgresDatabase, _ body: () throws -> Void) throws -> Int {
        let before = try db.read { $0.roundTrips }
        try body()
        return try db.read { $0.roundTrips } - before
    }

    /// Waits until `condition` holds (a bound only against a hang; nothing is timed).
    func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 60)
        while !condition() {
            guard Date() < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }

    /// An entry create (the hottest write) by a user with three other devices holding
    /// background and widgets tokens costs what it costs without devices — the checks, the
    /// locked reads and the commit, three round trips — while queuing their pushes.
    func testEntryCreateWithThreeDevicesIsThreeRoundTrips() throws {
        let (store, db) = try oneConnectionStore()
        let (alice, bob) = (fixtures.alice, fixtures.bob)
        for i in 1...3 {
            let token = [UInt8(i)] + [UInt8](repeating: 0xD4, count: 31)
            try register(
                store, alice, String(format: "0193e000-0000-4000-8000-%012d", i), [(.background, token), (.widgets, token)])
        }
        func roundTrips(_ body: () throws -> Void) throws -> Int { try Self.roundTrips(db, body) }
        var n = 0
        func create(_ user: String) throws -> Int {
            n += 1
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let content = WaterEntryContent(amountMl: 500, loggedAt: now, source: .phone, healthKitUUID: nil, note: nil)
            return try roundTrips {
                _ = try store.createEntry(
                    userID: user, id: String(format: "0193c000-0000-4000-8000-%012d", n), content: content,
                    deviceID: Self.phone, now: now)
            }
        }
        // Warm-up: every statement prepared once, both outbox rows per device queued.
        _ = try create(bob)
        _ = try create(alice)
        XCTAssertEqual(try store.pushQueueFigures(now: later()).pending, 6)
        let without = try create(bob)
        let with = try create(alice)
        XCTAssertEqual(without, 3)
        XCTAssertEqual(with, 3)
        let third = try create(alice)  // the rows wait: coalesced, still no extra round trip
        XCTAssertEqual(third, 3)
        XCTAssertEqual(try store.pushQueueFigures(now: later()).pending, 6)
    }

    /// A change while a device's background row waits leaves that row alone: no row lock
    /// (`xmax` stays 0), so no WAL record and no dirtied page per device and write.
    func testWaitingBackgroundRowIsNotLockedByLaterChanges() throws {
        let (store, db) = try oneConnectionStore()
        let alice = fixtures.alice
        try register(store, alice, Self.watch, [(.background, Self.watchToken)])
        _ = try store.createBill(userID: alice, id: "b1", content: bill(1), deviceID: Self.phone, now: fixtures.t0)
        _ = try store.createBill(userID: alice, id: "b2", content: bill(2), deviceID: Self.phone, now: fixtures.t0)
        let rows = try db.read {
            try $0.query("SELECT xmax::text, state FROM push_outbox WHERE push_type = 'background'")
        }
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows.first?[0], .text("0"), "the waiting row was locked by the second change")
        XCTAssertEqual(rows.first?[1], .text("pending"))
    }
}

/// The 24-hour budget of widget and complication pushes alone (`ProgressPushRules.dueTime`).
final class ProgressPushRulesTests: XCTestCase {
    func testDueTime() {
        let day = ProgressPushRules.dayMs
        let now = 10 * day
        XCTAssertEqual(ProgressPushRules.dueTime(now: now, recentSends: [now - 1, now - 2], perDay: 3), now, "within the budget")
        XCTAssertEqual(
            ProgressPushRules.dueTime(now: now, recentSends: [now - 5, now - 1, now - 9], perDay: 3), now - 9 + day,
            "budget spent: a day after the oldest of the last three")
        XCTAssertEqual(
            ProgressPushRules.dueTime(now: now, recentSends: [now - 5, now - 1, now - day], perDay: 3), now,
            "one is older than a day")
        XCTAssertEqual(ProgressPushRules.dueTime(now: now, recentSends: [], perDay: 0), Int64.max, "a budget of 0 never sends")
    }
}

/// The coalescing rule alone (`BackgroundRefreshRules.dueTime`).
final class BackgroundRefreshRulesTests: XCTestCase {
    func testDueTime() {
        let h = BackgroundRefreshRules.hourMs
        XCTAssertEqual(BackgroundRefreshRules.dueTime(now: 10 * h, recentSends: [], windowMs: 60_000), 10 * h, "leading edge")
        XCTAssertEqual(
            BackgroundRefreshRules.dueTime(now: 10 * h, recentSends: [10 * h - 1_000], windowMs: 60_000), 10 * h + 59_000,
            "one trailing push per window")
        XCTAssertEqual(
            BackgroundRefreshRules.dueTime(now: 10 * h, recentSends: [10 * h - 600_000], windowMs: 60_000), 10 * h,
            "the window passed")
        XCTAssertEqual(
            BackgroundRefreshRules.dueTime(
                now: 10 * h, recentSends: [10 * h - 1_800_000, 10 * h - 1_200_000, 10 * h - 600_000], windowMs: 60_000),
            11 * h - 1_800_000, "three within the hour: an hour after the oldest")
        XCTAssertEqual(
            BackgroundRefreshRules.dueTime(now: 10 * h, recentSends: [9 * h - 1, 9 * h + 1, 9 * h + 2], windowMs: 0), 10 * h,
            "one of the three is older than an hour")
    }
}
