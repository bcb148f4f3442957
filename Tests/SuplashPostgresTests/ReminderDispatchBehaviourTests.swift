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

    /// Bill-due reminders: 10:00 local three days and one day before the due date, each sent by
    /// the scheduler (which plans the next), none after the bill is paid.
    func billScenario(_ store: Store) throws -> [String] {
        let (alice, t0) = (helper.alice, helper.t0)
        let messages = try Self.messages()
        try aliceInBerlin(store)
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let today = clock.localDate(of: t0)
        func at(_ days: Int, _ hour: Int, _ minute: Int = 0) throws -> Int64 {
            clock.instant(of: today.adding(days: days), at: try XCTUnwrap(ClockTime(hour: hour, minute: minute)))
        }
        var transcript: [String] = []
        func bills() throws -> String {
            try store.reminderOverview(userID: alice, limit: 50).recent.filter { $0.kind == .bill }.map { r in
                let m = clock.wallMinuteOfDay(at: r.dueAt)
                return "\(clock.localDate(of: r.dueAt)) \(String(format: "%02d:%02d", m / 60, m % 60)) \(r.outcome.rawValue)"
            }.description
        }
        func step(_ label: String, at t: Int64) throws {
            let r = try store.dispatchDueReminders(now: t, limit: 10, messages: messages)
            var line = "\(label): sent \(r.sent)"
            for p in try store.claimDuePushes(now: t + 1, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000)
            where p.pushType == .alert {
                let payload = try JSONParser.parse(Array(p.payload.utf8))
                line +=
                    " | \(payload["kind"]?.stringValue ?? "-") \"\(payload["aps"]?["alert"]?["title"]?.stringValue ?? "")\" "
                    + "\"\(payload["aps"]?["alert"]?["body"]?.stringValue ?? "")\""
                try store.recordPushSent(id: p.id, payload: p.payload, now: t + 2)
            }
            transcript.append(line)
            transcript.append("  bills \(try bills())")
        }
        let content = BillContent(
            provider: "ISKI", subscriberNo: "1", period: today.yearMonth, consumptionMilliM3: 12_000, amountMinor: 45_050,
            dueDate: today.adding(days: 4))
        _ = try store.createBill(userID: alice, id: "0193e000-0000-4000-8000-0000000000b1", content: content, deviceID: nil, now: t0)
        transcript.append("created: bills \(try bills())")
        try step("three days before", at: try at(1, 10, 0) + 1000)
        let paidAt = try at(2, 12)
        _ = try store.updateBill(
            userID: alice, id: "0193e000-0000-4000-8000-0000000000b1", deviceID: nil, now: paidAt, precondition: { _ in true }
        ) { c in
            var c = c
            c.paidAt = paidAt
            return c
        }
        transcript.append("paid: bills \(try bills())")
        try step("one day before", at: try at(3, 10, 0) + 1000)
        try step("a second later", at: try at(3, 10, 0) + 2000)
        return transcript
    }

    func testBillRemindersOnSQLiteAndPostgres() throws {
        try onBothEngines(
            billScenario,
            [
                // Due in four days: the first is three days before, at 10:00. (The amount is
                // Foundation's currency format: a no-break space after the code.)
                "created: bills [\"2026-09-22 10:00 pending\"]",
                // Sent; Bob's overdue hydration reminder, with no device to receive it, is
                // cancelled (not sent, and no next one until he registers an alert token); Alice's
                // own overdue hydration reminder waits behind the bill's alert. The next bill
                // reminder is one day before.
                "three days before: sent 1 | bill \"ISKI bill due soon\" \"Your ISKI bill (TRY\u{00A0}450.50) is due in 3 days.\"",
                "  bills [\"2026-09-24 10:00 pending\", \"2026-09-22 10:00 pending\"]",
                "paid: bills [\"2026-09-24 10:00 cancelled\", \"2026-09-22 10:00 pending\"]",
                // Paid: no bill reminder. The waiting hydration reminder, postponed to two days
                // ago, has expired: cancelled unsent, and the next one planned from now — due at
                // once (nothing logged today), so it goes a step later, with today's figures.
                "one day before: sent 0",
                "  bills [\"2026-09-24 10:00 cancelled\", \"2026-09-22 10:00 pending\"]",
                "a second later: sent 1 | hydration \"Time for water\" \"Start the day with water: today's goal is 2,500 ml. Have 500 ml to begin.\"",
                "  bills [\"2026-09-24 10:00 cancelled\", \"2026-09-22 10:00 pending\"]",
            ])
    }

    /// Two bills due the same day have their reminders due in the same step: the device's one
    /// pending alert takes the first, the second waits five minutes (it used to replace the first
    /// in the outbox while both were marked sent), and each bill's alert has its own collapse id.
    func twoBillsScenario(_ store: Store) throws -> [String] {
        let (alice, t0) = (helper.alice, helper.t0)
        let messages = try Self.messages()
        try aliceInBerlin(store)
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let today = clock.localDate(of: t0)
        let tenOClock = clock.instant(of: today.adding(days: 1), at: try XCTUnwrap(ClockTime(hour: 10, minute: 0)))
        for (n, provider) in ["ISKI", "ASKI"].enumerated() {
            let content = BillContent(
                provider: provider, subscriberNo: "1", period: today.yearMonth, consumptionMilliM3: 12_000,
                amountMinor: 45_050 + Int64(n), dueDate: today.adding(days: 4))
            _ = try store.createBill(userID: alice, id: "0193e000-0000-4000-8000-0000000000b\(n + 1)", content: content, deviceID: nil, now: t0)
        }
        var transcript: [String] = []
        for (label, t) in [("10:00", tenOClock + 1000), ("10:05", tenOClock + 301_000), ("10:10", tenOClock + 601_000)] {
            let r = try store.dispatchDueReminders(now: t, limit: 10, messages: messages)
            var line = "\(label): sent \(r.sent)"
            for p in try store.claimDuePushes(now: t + 1, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000)
            where p.pushType == .alert {
                let payload = try JSONParser.parse(Array(p.payload.utf8))
                line += " | \(payload["kind"]?.stringValue ?? "-") \(p.collapseID ?? "-") \"\(payload["aps"]?["alert"]?["body"]?.stringValue ?? "")\""
                try store.recordPushSent(id: p.id, payload: p.payload, now: t + 2)
            }
            transcript.append(line)
        }
        return transcript
    }

    func testTwoBillAlertsDueInOneStepGoOneAfterTheOther() throws {
        try onBothEngines(
            twoBillsScenario,
            [
                "10:00: sent 1 | bill suplash-bill-0193e000-0000-4000-8000-0000000000b1 \"Your ISKI bill (TRY\u{00A0}450.50) is due in 3 days.\"",
                "10:05: sent 1 | bill suplash-bill-0193e000-0000-4000-8000-0000000000b2 \"Your ASKI bill (TRY\u{00A0}450.51) is due in 3 days.\"",
                // Alice's hydration reminder planned at sign-up, due yesterday, expired at 10:00
                // (cancelled unsent); the one planned then, due at once, waited behind the second bill.
                "10:10: sent 1 | hydration suplash-reminder-2026-09-22 \"Start the day with water: today's goal is 2,500 ml. Have 500 ml to begin.\"",
            ])
    }

    /// Turning reminders off also takes back the alert already queued for the phone (APNs
    /// backing off, the sender paused): nothing arrives after the switch.
    func switchedOffScenario(_ store: Store) throws -> [String] {
        let (alice, t0) = (helper.alice, helper.t0)
        try aliceInBerlin(store)
        let due = try XCTUnwrap(try store.reminderOverview(userID: alice, limit: 50).next).dueAt
        let report = try store.dispatchDueReminders(now: due, limit: 10, messages: try Self.messages())
        func queuedAlerts() throws -> String {
            let rows = try XCTUnwrap(store as? any SQLStore).reading { c in
                try c.query(
                    SQLText(
                        """
                        SELECT count(*) FROM push_outbox
                        WHERE user_id = ?1 AND push_type = 'alert' AND delivered_at IS NULL AND failed_at IS NULL
                        """),
                    [.text(alice)])
            }
            return "\(rows.first?[0].int64 ?? -1)"
        }
        var transcript = ["sent \(report.sent), queued alerts \(try queuedAlerts())"]
        _ = try store.updateProfile(userID: alice, now: t0 + 1000) { p in
            var p = p
            p.reminders.enabled = false
            return p
        }
        transcript.append("switched off: queued alerts \(try queuedAlerts())")
        return transcript
    }

    func testSwitchingRemindersOffTakesBackTheQueuedAlert() throws {
        try onBothEngines(switchedOffScenario, ["sent 1, queued alerts 1", "switched off: queued alerts 0"])
    }

    /// Alerts found late (every instance down): a bill's first reminder found four hours late
    /// goes that afternoon; its next one, found at 23:30 (past bedtime), moves to the due day
    /// unsent; a campaign found after its morning is cancelled (its `failed` count); one found an
    /// hour late inside its morning goes.
    func lateScenario(_ store: Store) throws -> [String] {
        let (alice, t0) = (helper.alice, helper.t0)
        let messages = try Self.messages()
        try aliceInBerlin(store)
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let today = clock.localDate(of: t0)
        func at(_ days: Int, _ hour: Int, _ minute: Int = 0) throws -> Int64 {
            clock.instant(of: today.adding(days: days), at: try XCTUnwrap(ClockTime(hour: hour, minute: minute)))
        }
        var transcript: [String] = []
        func reminders(_ kind: ReminderKind) throws -> String {
            try store.reminderOverview(userID: alice, limit: 50).recent.filter { $0.kind == kind }.map { r in
                let m = clock.wallMinuteOfDay(at: r.dueAt)
                return "\(clock.localDate(of: r.dueAt)) \(String(format: "%02d:%02d", m / 60, m % 60)) \(r.outcome.rawValue)"
            }.description
        }
        func step(_ label: String, at t: Int64) throws {
            _ = try store.dispatchDueReminders(now: t, limit: 10, messages: messages)
            var line = "\(label):"
            for p in try store.claimDuePushes(now: t + 1, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000)
            where p.pushType == .alert {
                let payload = try JSONParser.parse(Array(p.payload.utf8))
                if payload["kind"]?.stringValue != "hydration" {
                    line += " | \(payload["kind"]?.stringValue ?? "-") \"\(payload["aps"]?["alert"]?["body"]?.stringValue ?? "")\""
                }
                try store.recordPushSent(id: p.id, payload: p.payload, now: t + 2)
            }
            transcript.append(line)
            transcript.append("  bills \(try reminders(.bill)) campaigns \(try reminders(.campaign))")
        }
        let content = BillContent(
            provider: "ISKI", subscriberNo: "1", period: today.yearMonth, consumptionMilliM3: 12_000, amountMinor: 45_050,
            dueDate: today.adding(days: 4))
        _ = try store.createBill(userID: alice, id: "0193e000-0000-4000-8000-0000000000b1", content: content, deviceID: nil, now: t0)
        let first = "0193e000-0000-4000-8000-0000000000c1"
        try store.createCampaign(
            id: first, campaign: NewCampaign(segment: .morning, texts: ["en": "Good morning"], sendAt: nil), now: t0)
        _ = try store.expandCampaigns(now: t0, limit: 10)
        transcript.append("created: bills \(try reminders(.bill)) campaigns \(try reminders(.campaign))")
        try step("three days before, 14:00", at: try at(1, 14))
        try step("one day before, 23:30", at: try at(3, 23, 30))
        let second = "0193e000-0000-4000-8000-0000000000c2"
        try store.createCampaign(
            id: second, campaign: NewCampaign(segment: .morning, texts: ["en": "Stay cool"], sendAt: nil), now: try at(4, 8))
        _ = try store.expandCampaigns(now: try at(4, 8), limit: 10)
        try step("due day, 09:00", at: try at(4, 9))
        try step("due day, 10:00", at: try at(4, 10) + 1000)
        for id in [first, second] {
            let f = try XCTUnwrap(try store.campaignFigures(id: id))
            transcript.append("campaign \(id.suffix(2)): queued \(f.queued) sent \(f.sent) failed \(f.failed)")
        }
        return transcript
    }

    func testLateBillAndCampaignAlertsGoOnlyWhileTheyStillFit() throws {
        try onBothEngines(
            lateScenario,
            [
                // The bill is due in four days; the campaign was created after Alice's morning (16:13).
                "created: bills [\"2026-09-22 10:00 pending\"] campaigns [\"2026-09-22 07:00 pending\"]",
                // Found at 14:00: the bill's reminder still goes that day ("3 days" is still true);
                // the morning campaign is cancelled.
                "three days before, 14:00: | bill \"Your ISKI bill (TRY\u{00A0}450.50) is due in 3 days.\"",
                "  bills [\"2026-09-24 10:00 pending\", \"2026-09-22 10:00 pending\"] campaigns [\"2026-09-22 07:00 cancelled\"]",
                // Found at 23:30, past her 23:00 bedtime: not sent; it moves to the due day.
                "one day before, 23:30:",
                "  bills [\"2026-09-25 10:00 pending\", \"2026-09-22 10:00 pending\"] campaigns [\"2026-09-22 07:00 cancelled\"]",
                // Created at 08:00, during her morning (due at once), found at 09:00: still the morning.
                "due day, 09:00: | campaign \"Stay cool\"",
                "  bills [\"2026-09-25 10:00 pending\", \"2026-09-22 10:00 pending\"] campaigns [\"2026-09-25 08:00 pending\", \"2026-09-22 07:00 cancelled\"]",
                "due day, 10:00: | bill \"Your ISKI bill (TRY\u{00A0}450.50) is due today.\"",
                "  bills [\"2026-09-25 10:00 pending\", \"2026-09-22 10:00 pending\"] campaigns [\"2026-09-25 08:00 pending\", \"2026-09-22 07:00 cancelled\"]",
                // Bob (Istanbul) is reached too: his first found after his morning as well, his second in it.
                "campaign c1: queued 0 sent 0 failed 2",
                "campaign c2: queued 0 sent 2 failed 0",
            ])
    }

    /// A bill alert still queued (APNs backing off, the sender paused) is taken back when the bill
    /// is paid — through REST or a sync push — or bill reminders are switched off; the day's
    /// hydration alert stays.
    func queuedBillAlertScenario(_ store: Store) throws -> [String] {
        let (alice, t0) = (helper.alice, helper.t0)
        let messages = try Self.messages()
        try aliceInBerlin(store)
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let today = clock.localDate(of: t0)
        let ten = clock.instant(of: today.adding(days: 1), at: try XCTUnwrap(ClockTime(hour: 10, minute: 0)))
        let ids = (1...3).map { "0193e000-0000-4000-8000-0000000000b\($0)" }
        func content(_ n: Int) -> BillContent {
            BillContent(
                provider: ["ISKI", "ASKI", "IZSU"][n], subscriberNo: "1", period: today.yearMonth, consumptionMilliM3: 12_000,
                amountMinor: 45_050, dueDate: today.adding(days: 4))
        }
        for n in 0..<3 { _ = try store.createBill(userID: alice, id: ids[n], content: content(n), deviceID: nil, now: t0) }
        func queued() throws -> String {
            let rows = try XCTUnwrap(store as? any SQLStore).reading { c in
                try c.query(
                    SQLText(
                        """
                        SELECT collapse_id FROM push_outbox WHERE user_id = ?1 AND push_type = 'alert'
                            AND delivered_at IS NULL AND failed_at IS NULL ORDER BY collapse_id
                        """),
                    [.text(alice)])
            }
            return rows.map { ($0[0].text ?? "-").replacingOccurrences(of: "0193e000-0000-4000-8000-0000000000", with: "…") }
                .description
        }
        func settings(bills: Bool, at t: Int64) throws {
            _ = try store.updateProfile(userID: alice, now: t) { p in
                var p = p
                p.reminders.billReminders = bills
                return p
            }
        }
        var transcript: [String] = []
        _ = try store.dispatchDueReminders(now: ten + 1000, limit: 10, messages: messages)
        transcript.append("10:00 queued \(try queued())")
        _ = try store.updateBill(userID: alice, id: ids[0], deviceID: nil, now: ten + 2000, precondition: { _ in true }) { c in
            var c = c
            c.paidAt = ten + 2000
            return c
        }
        transcript.append("paid through REST: queued \(try queued())")
        _ = try store.dispatchDueReminders(now: ten + 301_000, limit: 10, messages: messages)
        transcript.append("10:05 queued \(try queued())")
        var paid = content(1)
        paid.paidAt = ten + 302_000
        let pushed = try store.applyMutations(
            userID: alice, deviceID: Self.phone, now: ten + 302_000,
            mutations: [SyncMutation(collection: "bills", id: ids[1], write: .upsertBill(paid), clientUpdatedAt: ten + 302_000)],
            profilePatch: { _, p in p })
        guard case .applied = pushed.outcomes.first else {
            XCTFail("\(pushed.outcomes)")
            return transcript
        }
        transcript.append("paid through a sync push: queued \(try queued())")
        _ = try store.dispatchDueReminders(now: ten + 601_000, limit: 10, messages: messages)
        transcript.append("10:10 queued \(try queued())")
        try settings(bills: false, at: ten + 602_000)
        transcript.append("bill reminders off: queued \(try queued())")
        _ = try store.dispatchDueReminders(now: ten + 901_000, limit: 10, messages: messages)
        transcript.append("10:15 queued \(try queued())")
        try settings(bills: true, at: ten + 902_000)
        try settings(bills: false, at: ten + 903_000)
        transcript.append("bill reminders on and off again: queued \(try queued())")
        return transcript
    }

    func testAQueuedBillAlertIsTakenBackWhenPaidOrSwitchedOff() throws {
        try onBothEngines(
            queuedBillAlertScenario,
            [
                // Three bills' reminders due at 10:00: one alert now, the others five minutes apart.
                "10:00 queued [\"suplash-bill-…b1\"]",
                "paid through REST: queued []",
                "10:05 queued [\"suplash-bill-…b2\"]",
                "paid through a sync push: queued []",
                // The sync push recomputed every unpaid bill: the third's reminder, waiting behind
                // the second, stayed (it used to move to the next reminder day, two days later).
                "10:10 queued [\"suplash-bill-…b3\"]",
                "bill reminders off: queued []",
                "10:15 queued [\"suplash-reminder-2026-09-22\"]",
                // Switching bill reminders leaves the day's hydration alert queued.
                "bill reminders on and off again: queued [\"suplash-reminder-2026-09-22\"]",
            ])
    }

    /// A bill alert held in the outbox (APNs backing off) is not overwritten by a later step's
    /// alert of another subject: the device's one pending alert would be replaced and the bill's
    /// reminder, already `sent`, never delivered. The hydration alert waits instead. A revision
    /// that changes the alert's text (the amount) takes the held alert back; one that does not
    /// (the consumption) leaves it.
    func heldBillAlertScenario(_ store: Store) throws -> [String] {
        let (alice, t0) = (helper.alice, helper.t0)
        let messages = try Self.messages()
        try aliceInBerlin(store)
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let today = clock.localDate(of: t0)
        func ten(_ days: Int) throws -> Int64 {
            clock.instant(of: today.adding(days: days), at: try XCTUnwrap(ClockTime(hour: 10, minute: 0)))
        }
        let id = "0193e000-0000-4000-8000-0000000000b1"
        let content = BillContent(
            provider: "ISKI", subscriberNo: "1", period: today.yearMonth, consumptionMilliM3: 12_000, amountMinor: 45_050,
            dueDate: today.adding(days: 4))
        _ = try store.createBill(userID: alice, id: id, content: content, deviceID: nil, now: t0)
        var transcript: [String] = []
        func queued() throws -> String {
            let rows = try XCTUnwrap(store as? any SQLStore).reading { c in
                try c.query(
                    SQLText(
                        """
                        SELECT collapse_id FROM push_outbox WHERE user_id = ?1 AND push_type = 'alert'
                            AND delivered_at IS NULL AND failed_at IS NULL ORDER BY collapse_id
                        """),
                    [.text(alice)])
            }
            return rows.map { ($0[0].text ?? "-").replacingOccurrences(of: "0193e000-0000-4000-8000-0000000000", with: "…") }
                .description
        }
        func step(_ label: String, at t: Int64) throws {
            let r = try store.dispatchDueReminders(now: t, limit: 10, messages: messages)
            transcript.append("\(label): sent \(r.sent), queued \(try queued())")
        }
        func revise(_ label: String, at t: Int64, _ change: @escaping @Sendable (inout BillContent) -> Void) throws {
            _ = try store.updateBill(userID: alice, id: id, deviceID: nil, now: t, precondition: { _ in true }) { c in
                var c = c
                change(&c)
                return c
            }
            transcript.append("\(label): queued \(try queued())")
        }
        try step("10:00", at: try ten(1) + 1000)
        try step("10:05", at: try ten(1) + 301_000)
        try step("10:10", at: try ten(1) + 601_000)
        try step("10:35, the bill's alert expired unsent", at: try ten(1) + 2_101_000)
        for p in try store.claimDuePushes(now: try ten(1) + 2_102_000, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000) {
            try store.recordPushSent(id: p.id, payload: p.payload, now: try ten(1) + 2_103_000)
        }
        try step("one day before, 10:00", at: try ten(3) + 1000)
        try revise("consumption corrected", at: try ten(3) + 2000) { $0.consumptionMilliM3 = 12_500 }
        try revise("amount corrected", at: try ten(3) + 3000) { $0.amountMinor = 46_000 }
        try step("the next step", at: try ten(3) + 4000)
        for p in try store.claimDuePushes(now: try ten(3) + 5000, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000) {
            let payload = try JSONParser.parse(Array(p.payload.utf8))
            transcript.append("  \(payload["kind"]?.stringValue ?? "-") \"\(payload["aps"]?["alert"]?["body"]?.stringValue ?? "")\"")
        }
        let bills = try store.reminderOverview(userID: alice, limit: 50).recent.filter { $0.kind == .bill }
        transcript.append(
            "bill reminders \(bills.map { "\(clock.localDate(of: $0.dueAt)) \($0.outcome.rawValue)\($0.sentAt == nil ? "" : "+sent")" }.sorted())")
        return transcript
    }

    func testAHeldBillAlertIsNeitherOverwrittenNorLeftStale() throws {
        try onBothEngines(
            heldBillAlertScenario,
            [
                "10:00: sent 1, queued [\"suplash-bill-…b1\"]",
                // Still queued: the hydration reminder (planned from 10:00, its first having
                // expired) waits instead of replacing it (it used to: sent 1, the bill's alert gone).
                "10:05: sent 0, queued [\"suplash-bill-…b1\"]",
                "10:10: sent 0, queued [\"suplash-bill-…b1\"]",
                // An expired alert is never sent: it no longer holds the hydration alert back.
                "10:35, the bill's alert expired unsent: sent 1, queued [\"suplash-reminder-2026-09-22\"]",
                "one day before, 10:00: sent 1, queued [\"suplash-bill-…b1\"]",
                "consumption corrected: queued [\"suplash-bill-…b1\"]",
                // Taken back, and the day's reminder sent again with the new amount.
                "amount corrected: queued []",
                "the next step: sent 1, queued [\"suplash-bill-…b1\"]",
                "  bill \"Your ISKI bill (TRY\u{00A0}460.00) is due tomorrow.\"",
                // The due day's row, cancelled when the day before's went back to pending, planned
                // again after its send.
                "bill reminders [\"2026-09-22 pending+sent\", \"2026-09-24 pending+sent\", \"2026-09-25 cancelled\", \"2026-09-25 pending\"]",
            ])
    }

    /// A bill reminder found late inside daytime quiet hours moves to their end the same day
    /// (not to the next reminder day) and goes then, still "due in 3 days".
    func lateInQuietHoursScenario(_ store: Store) throws -> [String] {
        let (alice, t0) = (helper.alice, helper.t0)
        let messages = try Self.messages()
        try aliceInBerlin(store)
        _ = try store.updateProfile(userID: alice, now: t0) { p in
            var p = p
            p.reminders.quietStart = ClockTime(hour: 12, minute: 0)
            p.reminders.quietEnd = ClockTime(hour: 14, minute: 0)
            return p
        }
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let today = clock.localDate(of: t0)
        func at(_ hour: Int, _ minute: Int) throws -> Int64 {
            clock.instant(of: today.adding(days: 1), at: try XCTUnwrap(ClockTime(hour: hour, minute: minute)))
        }
        let content = BillContent(
            provider: "ISKI", subscriberNo: "1", period: today.yearMonth, consumptionMilliM3: 12_000, amountMinor: 45_050,
            dueDate: today.adding(days: 4))
        _ = try store.createBill(userID: alice, id: "0193e000-0000-4000-8000-0000000000b1", content: content, deviceID: nil, now: t0)
        var transcript: [String] = []
        for (label, t) in [("12:30", try at(12, 30)), ("14:00", try at(14, 0) + 1000)] {
            _ = try store.dispatchDueReminders(now: t, limit: 10, messages: messages)
            var line = "\(label):"
            for p in try store.claimDuePushes(now: t + 1, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000)
            where p.pushType == .alert {
                let payload = try JSONParser.parse(Array(p.payload.utf8))
                line += " | \(payload["kind"]?.stringValue ?? "-") \"\(payload["aps"]?["alert"]?["body"]?.stringValue ?? "")\""
                try store.recordPushSent(id: p.id, payload: p.payload, now: t + 2)
            }
            let bills = try store.reminderOverview(userID: alice, limit: 50).recent.filter { $0.kind == .bill }.map { r in
                let m = clock.wallMinuteOfDay(at: r.dueAt)
                return "\(clock.localDate(of: r.dueAt)) \(String(format: "%02d:%02d", m / 60, m % 60))"
            }
            transcript.append(line + " bills \(bills)")
        }
        return transcript
    }

    /// A bill reminder waiting behind another alert into quiet hours (10:03–14:00) is not sent
    /// inside them: it moves to their end, the same day.
    func postponedIntoQuietHoursScenario(_ store: Store) throws -> [String] {
        let (alice, t0) = (helper.alice, helper.t0)
        let messages = try Self.messages()
        try aliceInBerlin(store)
        _ = try store.updateProfile(userID: alice, now: t0) { p in
            var p = p
            p.reminders.quietStart = ClockTime(hour: 10, minute: 3)
            p.reminders.quietEnd = ClockTime(hour: 14, minute: 0)
            return p
        }
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let today = clock.localDate(of: t0)
        func at(_ hour: Int, _ minute: Int) throws -> Int64 {
            clock.instant(of: today.adding(days: 1), at: try XCTUnwrap(ClockTime(hour: hour, minute: minute)))
        }
        for (n, provider) in ["ISKI", "ASKI"].enumerated() {
            let content = BillContent(
                provider: provider, subscriberNo: "1", period: today.yearMonth, consumptionMilliM3: 12_000,
                amountMinor: 45_050 + Int64(n), dueDate: today.adding(days: 4))
            _ = try store.createBill(userID: alice, id: "0193e000-0000-4000-8000-0000000000b\(n + 1)", content: content, deviceID: nil, now: t0)
        }
        var transcript: [String] = []
        for (label, t) in [("10:00", try at(10, 0) + 1000), ("10:05", try at(10, 5) + 1000), ("14:00", try at(14, 0) + 1000)] {
            _ = try store.dispatchDueReminders(now: t, limit: 10, messages: messages)
            var line = "\(label):"
            for p in try store.claimDuePushes(now: t + 1, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000)
            where p.pushType == .alert {
                let payload = try JSONParser.parse(Array(p.payload.utf8))
                if payload["kind"]?.stringValue == "bill" { line += " | \"\(payload["aps"]?["alert"]?["body"]?.stringValue ?? "")\"" }
                try store.recordPushSent(id: p.id, payload: p.payload, now: t + 2)
            }
            let pending = try store.reminderOverview(userID: alice, limit: 50).recent
                .filter { $0.kind == .bill && $0.sentAt == nil && $0.outcome == .pending }
                .map { r in
                    let m = clock.wallMinuteOfDay(at: r.dueAt)
                    return "\(clock.localDate(of: r.dueAt)) \(String(format: "%02d:%02d", m / 60, m % 60))"
                }
            transcript.append(line + " pending bill reminders \(pending.sorted())")
        }
        return transcript
    }

    func testABillReminderWaitingIntoQuietHoursGoesAtTheirEnd() throws {
        try onBothEngines(
            postponedIntoQuietHoursScenario,
            [
                "10:00: | \"Your ISKI bill (TRY\u{00A0}450.50) is due in 3 days.\" pending bill reminders [\"2026-09-22 10:05\", \"2026-09-24 10:00\"]",
                // The second bill's, waiting behind the first, falls into the quiet hours: moved
                // to their end (it used to go at 10:05, inside them).
                "10:05: pending bill reminders [\"2026-09-22 14:00\", \"2026-09-24 10:00\"]",
                "14:00: | \"Your ASKI bill (TRY\u{00A0}450.51) is due in 3 days.\" pending bill reminders [\"2026-09-24 10:00\", \"2026-09-24 10:00\"]",
            ])
    }

    func testABillReminderFoundLateInQuietHoursGoesAtTheirEnd() throws {
        try onBothEngines(
            lateInQuietHoursScenario,
            [
                // Due at 10:00, found at 12:30 inside the quiet hours: moved to 14:00 the same day.
                "12:30: bills [\"2026-09-22 14:00\"]",
                "14:00: | bill \"Your ISKI bill (TRY\u{00A0}450.50) is due in 3 days.\" bills [\"2026-09-24 10:00\", \"2026-09-22 14:00\"]",
            ])
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
