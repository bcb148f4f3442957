import Foundation
import SuplashDomain
import SuplashJSON
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQL
import SuplashSQLiteStore
import SuplashStoreCore
import XCTest

/// The reminder scheduler's step, driven by the test's clock (`dispatchDueReminders(now:)`), on
/// PostgreSQL exactly as on SQLite: a due reminder becomes one alert push for the phone (the
/// watch only without a phone), with the catalogue's text, its category and id; the next one is
/// planned; a glass logged on the watch before that is due cancels it; unanswered reminders are
/// marked ignored.
final class ReminderDispatchBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & ReminderRepository & DeviceRepository & PushOutboxRepository & BillRepository
        & CampaignRepository & SyncRepository

    let helper = StoreFixtures()

    override func tearDown() {
        helper.close()
    }

    static let phone = "0193e000-0000-4000-8000-000000000001"
    static let watch = "0193e000-0000-4000-8000-000000000002"
    static let bobWatch = "0193e000-0000-4000-8000-000000000003"

    static func messages() throws -> MessageCatalogue {
        let dir = PostgresTestSupport.packageRoot + "/config/messages"
        return try MessageCatalogue(
            try FileManager.default.contentsOfDirectory(atPath: dir).sorted().map { name in
                let data = try XCTUnwrap(FileManager.default.contents(atPath: dir + "/" + name))
                return try LocaleMessages(json: try JSONParser.parse(Array(data)))
            })
    }

    func register(_ store: Store, _ user: String, _ device: String, _ platform: DevicePlatform, _ token: UInt8) throws {
        _ = try store.registerDevice(
            userID: user, deviceID: device, sessionID: nil,
            registration: DeviceRegistration(
                platform: platform, bundleID: "app.suplash.ios", environment: .production, locale: nil, appVersion: nil,
                tokens: [PushToken(pushType: .alert, token: [UInt8](repeating: token, count: 32))]),
            now: helper.t0)
    }

    func scenario(_ store: Store) throws -> [String] {
        let (alice, bob, t0) = (helper.alice, helper.bob, helper.t0)
        let messages = try Self.messages()
        try aliceInBerlin(store)
        try register(store, alice, Self.watch, .watchos, 0xA2)
        try register(store, bob, Self.bobWatch, .watchos, 0xB1)
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        var transcript: [String] = []
        func minute(_ t: Int64) -> String {
            let m = clock.wallMinuteOfDay(at: t)
            return String(format: "%02d:%02d", m / 60, m % 60)
        }
        func step(_ label: String, at t: Int64) throws {
            let next = try store.reminderOverview(userID: alice, limit: 50).next
            let r = try store.dispatchDueReminders(now: t, limit: 10, messages: messages)
            transcript.append(
                "\(label) \(minute(t)): claimed \(r.claimed) sent \(r.sent) ignored \(r.ignored) scheduled \(r.scheduled)")
            let pushes = try store.claimDuePushes(now: t + 1, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000)
            for p in pushes.sorted(by: { $0.deviceID < $1.deviceID }) {
                let payload = try JSONParser.parse(Array(p.payload.utf8))
                let id = payload["reminderId"]?.stringValue
                transcript.append(
                    "  push \(p.deviceID.suffix(1)) \(p.pushType.rawValue) \(payload["aps"]?["category"]?.stringValue ?? "-") "
                        + "\(p.collapseID ?? "-") expires +\((p.expiresAt - t) / 60_000)m "
                        + "\(id != nil && id == next?.id ? "alice's next" : id.map { _ in "other" } ?? "no id") "
                        + "\"\(payload["aps"]?["alert"]?["title"]?.stringValue ?? "")\" "
                        + "suggested \(payload["suggestedAmountMl"]?.int64Value ?? 0)")
                try store.recordPushSent(id: p.id, payload: p.payload, now: t + 2)
            }
            let o = try store.reminderOverview(userID: alice, limit: 50)
            transcript.append(
                "  alice next \(o.next.map { minute($0.dueAt) } ?? "none") recent \(o.recent.map { "\($0.outcome.rawValue)\($0.sentAt == nil ? "" : "+sent")" })"
            )
        }
        try step("before due", at: t0 - 60_000)
        try step("due", at: t0 + 1000)
        // A glass on the watch that meets the goal: the pending reminder is cancelled.
        _ = try store.createEntry(
            userID: alice, id: "0193e000-0000-4000-8000-0000000000e1",
            content: WaterEntryContent(amountMl: 2600, loggedAt: t0 + 600_000, source: .watch), deviceID: Self.watch,
            now: t0 + 600_000)
        try step("after the watch glass", at: t0 + 90 * 60_000 + 1000)
        try step("bob's third", at: t0 + 180 * 60_000 + 1000)
        try step("after bob's window", at: t0 + 300 * 60_000)
        let bobs = try store.reminderOverview(userID: bob, limit: 50).recent.map(\.outcome.rawValue)
        transcript.append("bob \(bobs)")
        return transcript
    }

    /// A campaign reaches its users in batches (those with reminders on), each at the start of
    /// the segment in their own zone, as one alert with the campaign's text.
    func campaignScenario(_ store: Store) throws -> [String] {
        let (alice, bob, t0) = (helper.alice, helper.bob, helper.t0)
        let messages = try Self.messages()
        try aliceInBerlin(store)
        _ = try store.updateProfile(userID: bob, now: t0) { p in
            var p = p
            p.reminders.enabled = false
            return p
        }
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let id = "0193e000-0000-4000-8000-0000000000c1"
        try store.createCampaign(
            id: id, campaign: NewCampaign(segment: .morning, texts: ["en": "Stay cool", "tr": "Serin kal"], sendAt: nil), now: t0)
        var transcript: [String] = []
        for n in 1...3 { transcript.append("expand \(n): \(try store.expandCampaigns(now: t0, limit: 1))") }
        func figures() throws -> String {
            let f = try XCTUnwrap(try store.campaignFigures(id: id))
            return "queued \(f.queued) sent \(f.sent) failed \(f.failed)"
        }
        transcript.append("figures: \(try figures())")
        let due = try XCTUnwrap(try store.reminderOverview(userID: alice, limit: 50).recent.first { $0.kind == .campaign })
        let m = clock.wallMinuteOfDay(at: due.dueAt)
        transcript.append("alice's at \(clock.localDate(of: due.dueAt)) \(String(format: "%02d:%02d", m / 60, m % 60))")
        _ = try store.dispatchDueReminders(now: due.dueAt, limit: 10, messages: messages)
        for p in try store.claimDuePushes(now: due.dueAt + 1, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000)
        where p.pushType == .alert {
            let payload = try JSONParser.parse(Array(p.payload.utf8))
            transcript.append(
                "push \(payload["kind"]?.stringValue ?? "-") \(p.collapseID == "suplash-campaign-\(id)") "
                    + "\"\(payload["aps"]?["alert"]?["title"]?.stringValue ?? "")\" \"\(payload["aps"]?["alert"]?["body"]?.stringValue ?? "")\"")
        }
        transcript.append("figures: \(try figures())")
        XCTAssertNil(try store.campaignFigures(id: "0193e000-0000-4000-8000-0000000000c2"))
        return transcript
    }

    func testCampaignsOnSQLiteAndPostgres() throws {
        try onBothEngines(
            campaignScenario,
            [
                // One user per step: Alice (reminders on), then Bob (off: none), then the end.
                "expand 1: 1", "expand 2: 0", "expand 3: 0",
                "figures: queued 1 sent 0 failed 0",
                // Created at 16:13 in Berlin, after Alice's morning (07:00–11:00): tomorrow's.
                "alice's at 2026-09-22 07:00",
                "push campaign true \"Suplash\" \"Stay cool\"",
                "figures: queued 0 sent 1 failed 0",
            ])
    }

    /// Inserts a reminder row as the scheduler and the actions leave them.
    func insertReminder(
        _ store: some SQLStore, _ n: Int, user: String, kind: String, state: String, dueAt: Int64
    ) throws {
        _ = try store.transaction { tx in
            try tx.execute(
                SQLText(
                    """
                    INSERT INTO reminders (id, user_id, kind, due_at, state, suggested_ml, local_date, subject_id,
                        sent_at, created_at, updated_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, NULL, '2026-09-01', NULL, ?6, ?4, ?4)
                    """),
                [
                    .text(String(format: "0193e000-0000-4000-8000-%012d", n)), .text(user), .text(kind), .integer(dueAt),
                    .text(state), ["sent", "ignored", "acted"].contains(state) ? .integer(dueAt) : .null,
                ])
        }
    }

    /// The history's retention: ended hydration and bill reminders due before the cut-off go,
    /// oldest first, a batch at a time; pending ones, campaign ones and newer ones stay.
    func retentionScenario(_ store: Store) throws -> [String] {
        let (alice, bob, t0) = (helper.alice, helper.bob, helper.t0)
        try helper.makeUsers(store)
        let sql = try XCTUnwrap(store as? any SQLStore)
        let day: Int64 = 86_400_000
        let rows: [(String, String, String, Int64)] = [
            (alice, "hydration", "sent", t0 - 10 * day), (alice, "hydration", "ignored", t0 - 9 * day),
            (bob, "hydration", "cancelled", t0 - 8 * day), (alice, "bill", "sent", t0 - 7 * day),
            (alice, "campaign", "sent", t0 - 6 * day), (alice, "bill", "pending", t0 - 5 * day),
            (alice, "hydration", "acted", t0 - day),
        ]
        for (n, r) in rows.enumerated() {
            try insertReminder(sql, n + 1, user: r.0, kind: r.1, state: r.2, dueAt: r.3)
        }
        func history(_ user: String) throws -> String {
            try store.reminderOverview(userID: user, limit: 50).recent.filter { $0.dueAt < t0 }.map {
                "\($0.kind.rawValue) \($0.outcome.rawValue)\($0.sentAt == nil ? "" : "+sent") -\((t0 - $0.dueAt) / day)d"
            }.joined(separator: ", ")
        }
        var transcript = ["alice: " + (try history(alice)), "bob: " + (try history(bob))]
        for n in 1...3 {
            transcript.append("purge \(n): \(try store.purgeReminderHistory(dueBefore: t0 - 2 * day, limit: 2))")
        }
        transcript += ["alice: " + (try history(alice)), "bob: " + (try history(bob))]
        return transcript
    }

    func testHistoryRetentionOnSQLiteAndPostgres() throws {
        try onBothEngines(
            retentionScenario,
            [
                "alice: hydration acted+sent -1d, bill pending -5d, campaign pending+sent -6d, bill pending+sent -7d, "
                    + "hydration ignored+sent -9d, hydration pending+sent -10d",
                "bob: hydration cancelled -8d",
                // Oldest first, two at a time: the 10- and 9-day-old, then the 8- and 7-day-old.
                "purge 1: 2", "purge 2: 2", "purge 3: 0",
                "alice: hydration acted+sent -1d, bill pending -5d, campaign pending+sent -6d",
                "bob: ",
            ])
    }

    /// On PostgreSQL too (sequential scans discouraged: the tables are tiny), the recompute's
    /// history read walks `reminders_history` and the retention's purge `reminders_ended`.
    func testRecomputeAndRetentionReadsUseTheirIndexesOnPostgres() throws {
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set")
        }
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        helper.cleanups.append { db.close() }
        let plans = try db.read { c in
            try c.execute("SET enable_seqscan = off")
            defer { _ = try? c.execute("SET enable_seqscan = on") }
            let history = try c.query("EXPLAIN " + ReminderSQL.planHistory.postgres, [.text(helper.alice), .integer(12)])
            let purge = try c.query("EXPLAIN " + ReminderRetentionSQL.purge.postgres, [.integer(helper.t0), .integer(2000)])
            let intake = try c.query("EXPLAIN " + ReminderSQL.lastIntakeWrite.postgres, [.text(helper.alice), .integer(helper.t0)])
            return [history, purge, intake].map { rows in rows.map { $0[0].text ?? "" }.joined(separator: "\n") }
        }
        XCTAssertTrue(plans[0].contains("reminders_plan"), plans[0])
        XCTAssertTrue(plans[1].contains("reminders_ended"), plans[1])
        // The intake read: an index (on an empty table the planner may take any of the user's;
        // `ReminderStoreTests` checks that SQLite reads `water_entries_list` alone).
        XCTAssertTrue(plans[2].contains("Index"), plans[2])
        XCTAssertFalse(plans.joined().contains("Seq Scan"), plans.joined(separator: "\n"))
    }

    /// Runs `scenario` on SQLite and checks its transcript, then on PostgreSQL (when there is
    /// one) and checks it is the same.
    func onBothEngines(
        _ scenario: (Store) throws -> [String], _ expected: [String], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let sqlite = try scenario(try helper.sqliteStore().0)
        XCTAssertEqual(sqlite, expected, file: file, line: line)
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        XCTAssertEqual(try scenario(try helper.postgresStore().0), sqlite, file: file, line: line)
    }

    /// Alice in Berlin reading English, with her phone registered; Bob as created.
    func aliceInBerlin(_ store: Store) throws {
        try helper.makeUsers(store)
        _ = try store.updateProfile(userID: helper.alice, now: helper.t0) { p in
            var p = p
            p.timezone = "Europe/Berlin"
            p.locale = "en-GB"
            return p
        }
        try register(store, helper.alice, Self.phone, .ios, 0xA1)
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        try onBothEngines(
            scenario,
            [
                "before due 16:12: claimed 0 sent 0 ignored 0 scheduled 0",
                "  alice next 16:13 recent [\"pending\"]",
                // Alice's phone gets hers (not the watch), in English (en-GB); Bob has only a
                // watch, and Turkish (tr-TR).
                "due 16:13: claimed 2 sent 2 ignored 0 scheduled 2",
                "  push 1 alert SUPLASH_REMINDER suplash-reminder-2026-09-21 expires +30m alice's next \"Time for water\" suggested 500",
                "  push 3 alert SUPLASH_REMINDER suplash-reminder-2026-09-21 expires +30m other \"Su zamanı\" suggested 500",
                "  alice next 17:43 recent [\"pending\", \"pending+sent\"]",
                // The watch glass met Alice's goal: her 17:43 reminder was cancelled. Bob's second
                // goes; his first, unanswered, is ignored.
                "after the watch glass 17:43: claimed 1 sent 1 ignored 1 scheduled 1",
                "  push 3 alert SUPLASH_REMINDER suplash-reminder-2026-09-21 expires +30m other \"Su zamanı\" suggested 500",
                "  alice next none recent [\"cancelled\", \"pending+sent\"]",
                // Three unanswered in a row: the gap doubles to 3 h, past Bob's window (22:00
                // Istanbul), so only a re-plan mark at the window's end.
                "bob's third 19:13: claimed 1 sent 1 ignored 1 scheduled 0",
                "  push 3 alert SUPLASH_REMINDER suplash-reminder-2026-09-21 expires +30m other \"Su zamanı\" suggested 500",
                "  alice next none recent [\"cancelled\", \"pending+sent\"]",
                // The mark is claimed after the window: tomorrow's first reminder is planned.
                "after bob's window 21:13: claimed 1 sent 0 ignored 0 scheduled 1",
                "  alice next none recent [\"cancelled\", \"pending+sent\"]",
                "bob [\"pending\", \"pending\", \"ignored\", \"ignored\"]",
            ])
    }

    /// Two store objects (two pools, as two instances) dispatching at once from many threads:
    /// every due reminder is sent exactly once, one alert each.
    /// Two store objects on one PostgreSQL database (two pools, as two instances); skips the test
    /// without PostgreSQL.
    func twoInstances(poolSize: Int) throws -> (PostgresStore, PostgresStore) {
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set")
        }
        let (store, _) = try helper.postgresStore()
        let other = PostgresStore(database: try PostgresDatabase(url: try PostgresTestSupport.url(), poolSize: poolSize))
        helper.cleanups.append { other.database.close() }
        return (store, other)
    }

    /// The claim skips what another instance holds instead of waiting for it: with Alice's due
    /// reminder row locked by another transaction nothing is claimed; with her user row locked
    /// the reminder is claimed but left pending (skipped). Either way nothing is sent, and once
    /// the other transaction ends the reminder goes. (A claim that waited would not return while
    /// the lock is held: after 10 s the test fails and lets it go.)
    func testAClaimSkipsRowsAnotherInstanceHolds() throws {
        let (store, other) = try twoInstances(poolSize: 2)
        try aliceInBerlin(store)
        // Bob's reminders off: Alice's is the only due row.
        _ = try store.updateProfile(userID: helper.bob, now: helper.t0) { p in
            var p = p
            p.reminders.enabled = false
            return p
        }
        let alice = helper.alice
        let due = try XCTUnwrap(try store.reminderOverview(userID: alice, limit: 50).next).dueAt
        let messages = try Self.messages()
        let outcomes = Locked<[String]>([])
        for (label, lock) in [
            ("reminder row", "SELECT id FROM reminders WHERE user_id = ?1 AND state = 'pending' FOR UPDATE"),
            ("user row", "SELECT id FROM users WHERE id = ?1 FOR UPDATE"),
        ] {
            try other.transaction { tx in
                _ = try tx.query(SQLText(lock), [.text(alice)])
                let report = Locked<ReminderDispatchReport?>(nil)
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    report.withLock { $0 = try? store.dispatchDueReminders(now: due, limit: 10, messages: messages) }
                    done.signal()
                }
                guard done.wait(timeout: .now() + 10) == .success else {
                    XCTFail("\(label): the claim waited for the lock")
                    return
                }
                let r = report.current
                outcomes.withLock { $0.append("\(label) held: claimed \(r?.claimed ?? -1) sent \(r?.sent ?? -1) skipped \(r?.skipped ?? -1)") }
            }
        }
        let r = try store.dispatchDueReminders(now: due, limit: 10, messages: messages)
        outcomes.withLock { $0.append("released: claimed \(r.claimed) sent \(r.sent)") }
        XCTAssertEqual(
            outcomes.current,
            ["reminder row held: claimed 0 sent 0 skipped 0", "user row held: claimed 1 sent 0 skipped 1", "released: claimed 1 sent 1"])
    }

    func testTwoInstancesNeverSendOneReminderTwice() throws {
        let (store, other) = try twoInstances(poolSize: 4)
        let t0 = helper.t0
        let messages = try Self.messages()
        for i in 0..<20 {
            let user = String(format: "01930000-0000-7000-8000-%012d", 100 + i)
            _ = try store.createUser(
                UserProfile(id: user, email: "u\(i)@example.test", displayName: nil, now: t0), passwordHash: "$argon2id$x",
                session: helper.session("s\(i)", user, hash: UInt8(i)))
            try register(store, user, String(format: "0193e000-0000-4000-8000-%012d", 100 + i), .ios, UInt8(i))
        }
        let sent = Locked(0)
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let s: PostgresStore = i % 2 == 0 ? store : other
            while true {
                do {
                    let r = try s.dispatchDueReminders(now: t0 + 1000, limit: 3, messages: messages)
                    if r.claimed == 0 { return }
                    sent.withLock { $0 += r.sent }
                } catch {
                    failures.withLock { $0 += 1 }
                    return
                }
            }
        }
        XCTAssertEqual(failures.current, 0)
        XCTAssertEqual(sent.current, 20)
        let pushes = try store.claimDuePushes(now: t0 + 2000, limit: 100, leaseMs: 60_000, backgroundWindowMs: 300_000)
        XCTAssertEqual(pushes.filter { $0.pushType == .alert }.count, 20)
        XCTAssertEqual(Set(pushes.map(\.userID)).count, 20)
    }
}
