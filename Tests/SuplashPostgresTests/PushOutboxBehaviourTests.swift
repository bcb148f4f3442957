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
        func send() throws -> String {
            let now = later()
            let pushes = try store.claimDuePushes(now: now, limit: 10, leaseMs: 60_000, backgroundWindowMs: Self.window)
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
        // The widget's budget: 40 in 24 hours (one sent above); the complication's is 50.
        for _ in 0..<39 {
            try drink(300)
            _ = try send()
        }
        try drink(300)
        transcript.append("41st: \(try send())")
        return transcript
    }

    func testProgressPushesOnSQLiteAndPostgres() throws {
        let expected = ["500 ml: 02 complication, 04 widgets", "10 ml: ", "500 ml three days ago: ", "41st: 02 complication"]
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
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        fixtures.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try fixtures.makeUsers(store)
        func roundTrips(_ body: () throws -> Void) throws -> Int {
            let before = try db.read { $0.roundTrips }
            try body()
            return try db.read { $0.roundTrips } - before
        }
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
