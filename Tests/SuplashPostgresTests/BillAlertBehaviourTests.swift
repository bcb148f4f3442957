import Foundation
import SuplashDomain
import SuplashJSON
import SuplashSQL
import SuplashStoreCore
import XCTest

/// Bill and campaign alerts through the scheduler's step, on SQLite and PostgreSQL alike
/// (docs/reminders.md, "Bill reminders", "Late alerts"): when they go, what a late or waiting one
/// does, and what becomes of one still queued in the push outbox (APNs backing off) when the bill
/// or the settings change. Alice is in Berlin with her phone registered (`aliceInBerlin`); times
/// are Berlin wall times on the days after the fixtures' `t0` (2026-09-21 16:13).
extension ReminderDispatchBehaviourTests {
    static let berlin = ZoneClocks.shared.clock("Europe/Berlin")

    /// `hour:minute` in Berlin, `days` after `t0`'s local day.
    func berlin(_ days: Int, _ hour: Int, _ minute: Int = 0) throws -> Int64 {
        let clock = Self.berlin
        return clock.instant(of: clock.localDate(of: helper.t0).adding(days: days), at: try XCTUnwrap(ClockTime(hour: hour, minute: minute)))
    }

    /// `yyyy-mm-dd hh:mm` in Berlin.
    func berlinMinute(_ t: Int64) -> String {
        let m = Self.berlin.wallMinuteOfDay(at: t)
        return "\(Self.berlin.localDate(of: t)) \(String(format: "%02d:%02d", m / 60, m % 60))"
    }

    /// A bill of `provider` due `dueInDays` after `t0`'s local day.
    func billContent(_ provider: String = "ISKI", amountMinor: Int64 = 45_050, dueInDays: Int = 4) -> BillContent {
        let today = Self.berlin.localDate(of: helper.t0)
        return BillContent(
            provider: provider, subscriberNo: "1", period: today.yearMonth, consumptionMilliM3: 12_000, amountMinor: amountMinor,
            dueDate: today.adding(days: dueInDays))
    }

    /// Creates Alice's bills at `t0`, with ids ending `b1`, `b2`, …; returns the ids.
    @discardableResult
    func createBills(_ store: Store, _ contents: [BillContent]) throws -> [String] {
        try contents.enumerated().map { n, content in
            let id = "0193e000-0000-4000-8000-0000000000b\(n + 1)"
            _ = try store.createBill(userID: helper.alice, id: id, content: content, deviceID: nil, now: helper.t0)
            return id
        }
    }

    /// Revises Alice's bill `id` at `t`.
    func reviseBill(_ store: Store, _ id: String, at t: Int64, _ change: @escaping @Sendable (inout BillContent) -> Void) throws {
        _ = try store.updateBill(userID: helper.alice, id: id, deviceID: nil, now: t, precondition: { _ in true }) { c in
            var c = c
            change(&c)
            return c
        }
    }

    /// Changes Alice's profile at `t`.
    func changeAlice(_ store: Store, at t: Int64, _ change: @escaping @Sendable (inout UserProfile) -> Void) throws {
        _ = try store.updateProfile(userID: helper.alice, now: t) { p in
            var p = p
            change(&p)
            return p
        }
    }

    /// Alice's reminders of `kind`, newest first: `yyyy-mm-dd hh:mm outcome` (`+sent` once sent);
    /// `sorted` by that text instead (rows due at the same instant come in no set order).
    func reminders(_ store: Store, _ kind: ReminderKind, sorted: Bool = false) throws -> String {
        let lines = try store.reminderOverview(userID: helper.alice, limit: 50).recent.filter { $0.kind == kind }
            .map { "\(berlinMinute($0.dueAt)) \($0.outcome.rawValue)\($0.sentAt == nil ? "" : "+sent")" }
        return (sorted ? lines.sorted() : lines).description
    }

    /// The collapse ids of Alice's queued alerts (bill ids shortened to `…bN`).
    func queuedAlerts(_ store: Store) throws -> String {
        let rows = try XCTUnwrap(store as? any SQLStore).reading { c in
            try c.query(
                SQLText(
                    """
                    SELECT collapse_id FROM push_outbox WHERE user_id = ?1 AND push_type = 'alert'
                        AND delivered_at IS NULL AND failed_at IS NULL ORDER BY collapse_id
                    """),
                [.text(helper.alice)])
        }
        return rows.map { ($0[0].text ?? "-").replacingOccurrences(of: "0193e000-0000-4000-8000-0000000000", with: "…") }
            .description
    }

    /// A scheduler step at `t`.
    func step(_ store: Store, at t: Int64) throws -> ReminderDispatchReport {
        try store.dispatchDueReminders(now: t, limit: 10, messages: try Self.messages())
    }

    /// Hands every queued alert due by `t` to APNs (recorded delivered); returns them as
    /// ` | kind "body"` (` | kind "title" "body"` with `titles`; hydration ones only with
    /// `hydration`), in claim order.
    func deliverAlerts(_ store: Store, at t: Int64, hydration: Bool = true, titles: Bool = false) throws -> String {
        var line = ""
        for p in try store.claimDuePushes(now: t + 1, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000)
        where p.pushType == .alert {
            let payload = try JSONParser.parse(Array(p.payload.utf8))
            let kind = payload["kind"]?.stringValue ?? "-"
            if hydration || kind != "hydration" {
                let title = titles ? " \"\(payload["aps"]?["alert"]?["title"]?.stringValue ?? "")\"" : ""
                line += " | \(kind)\(title) \"\(payload["aps"]?["alert"]?["body"]?.stringValue ?? "")\""
            }
            try store.recordPushSent(id: p.id, payload: p.payload, now: t + 2)
        }
        return line
    }

    // MARK: Bills

    /// Bill-due reminders: 10:00 local three days and one day before the due date, each sent by
    /// the scheduler (which plans the next), none after the bill is paid.
    func billScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        let id = try createBills(store, [billContent()])[0]
        var transcript = ["created: bills \(try reminders(store, .bill))"]
        func run(_ label: String, at t: Int64) throws {
            let sent = try step(store, at: t).sent
            transcript.append("\(label): sent \(sent)\(try deliverAlerts(store, at: t, titles: true))")
            transcript.append("  bills \(try reminders(store, .bill))")
        }
        try run("three days before", at: try berlin(1, 10) + 1000)
        let paidAt = try berlin(2, 12)
        try reviseBill(store, id, at: paidAt) { $0.paidAt = paidAt }
        transcript.append("paid: bills \(try reminders(store, .bill))")
        try run("one day before", at: try berlin(3, 10) + 1000)
        try run("a second later", at: try berlin(3, 10) + 2000)
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
                "  bills [\"2026-09-24 10:00 pending\", \"2026-09-22 10:00 pending+sent\"]",
                "paid: bills [\"2026-09-24 10:00 cancelled\", \"2026-09-22 10:00 pending+sent\"]",
                // Paid: no bill reminder. The waiting hydration reminder, postponed to two days
                // ago, has expired: cancelled unsent, and the next one planned from now — due at
                // once (nothing logged today), so it goes a step later, with today's figures.
                "one day before: sent 0",
                "  bills [\"2026-09-24 10:00 cancelled\", \"2026-09-22 10:00 pending+sent\"]",
                "a second later: sent 1 | hydration \"Time for water\" \"Start the day with water: today's goal is 2,500 ml. Have 500 ml to begin.\"",
                "  bills [\"2026-09-24 10:00 cancelled\", \"2026-09-22 10:00 pending+sent\"]",
            ])
    }

    /// Two bills due the same day have their reminders due in the same step: the device's one
    /// pending alert takes the first, the second waits five minutes (it used to replace the first
    /// in the outbox while both were marked sent), and each bill's alert has its own collapse id.
    func twoBillsScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        try createBills(store, [billContent("ISKI"), billContent("ASKI", amountMinor: 45_051)])
        var transcript: [String] = []
        for (label, minute) in [("10:00", 0), ("10:05", 5), ("10:10", 10)] {
            let t = try berlin(1, 10, minute) + 1000
            let sent = try step(store, at: t).sent
            let queued = try queuedAlerts(store)
            transcript.append("\(label): sent \(sent) \(queued)\(try deliverAlerts(store, at: t))")
        }
        return transcript
    }

    func testTwoBillAlertsDueInOneStepGoOneAfterTheOther() throws {
        try onBothEngines(
            twoBillsScenario,
            [
                "10:00: sent 1 [\"suplash-bill-…b1\"] | bill \"Your ISKI bill (TRY\u{00A0}450.50) is due in 3 days.\"",
                "10:05: sent 1 [\"suplash-bill-…b2\"] | bill \"Your ASKI bill (TRY\u{00A0}450.51) is due in 3 days.\"",
                // Alice's hydration reminder planned at sign-up, due yesterday, expired at 10:00
                // (cancelled unsent); the one planned then, due at once, waited behind the second bill.
                "10:10: sent 1 [\"suplash-reminder-2026-09-22\"] | hydration \"Start the day with water: today's goal is 2,500 ml. Have 500 ml to begin.\"",
            ])
    }

    /// Turning reminders off also takes back the alert already queued for the phone (APNs
    /// backing off, the sender paused): nothing arrives after the switch.
    func switchedOffScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        let due = try XCTUnwrap(try store.reminderOverview(userID: helper.alice, limit: 50).next).dueAt
        let report = try step(store, at: due)
        var transcript = ["sent \(report.sent), queued \(try queuedAlerts(store))"]
        try changeAlice(store, at: helper.t0 + 1000) { $0.reminders.enabled = false }
        transcript.append("switched off: queued \(try queuedAlerts(store))")
        return transcript
    }

    func testSwitchingRemindersOffTakesBackTheQueuedAlert() throws {
        try onBothEngines(
            switchedOffScenario, ["sent 1, queued [\"suplash-reminder-2026-09-21\"]", "switched off: queued []"])
    }

    // MARK: Late or waiting alerts

    /// Alerts found late (every instance down): a bill's first reminder found four hours late
    /// goes that afternoon; its next one, found at 23:30 (past bedtime), moves to the due day
    /// unsent; a campaign found after its morning is cancelled (its `failed` count); one found an
    /// hour late inside its morning goes.
    func lateScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        try createBills(store, [billContent()])
        let first = "0193e000-0000-4000-8000-0000000000c1"
        try store.createCampaign(
            id: first, campaign: NewCampaign(segment: .morning, texts: ["en": "Good morning"], sendAt: nil), now: helper.t0)
        _ = try store.expandCampaigns(now: helper.t0, limit: 10)
        var transcript = ["created: bills \(try reminders(store, .bill)) campaigns \(try reminders(store, .campaign))"]
        func run(_ label: String, at t: Int64) throws {
            _ = try step(store, at: t)
            transcript.append("\(label):\(try deliverAlerts(store, at: t, hydration: false))")
            transcript.append("  bills \(try reminders(store, .bill)) campaigns \(try reminders(store, .campaign))")
        }
        try run("three days before, 14:00", at: try berlin(1, 14))
        try run("one day before, 23:30", at: try berlin(3, 23, 30))
        let second = "0193e000-0000-4000-8000-0000000000c2"
        try store.createCampaign(
            id: second, campaign: NewCampaign(segment: .morning, texts: ["en": "Stay cool"], sendAt: nil), now: try berlin(4, 8))
        _ = try store.expandCampaigns(now: try berlin(4, 8), limit: 10)
        try run("due day, 09:00", at: try berlin(4, 9))
        try run("due day, 10:00", at: try berlin(4, 10) + 1000)
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
                "  bills [\"2026-09-24 10:00 pending\", \"2026-09-22 10:00 pending+sent\"] campaigns [\"2026-09-22 07:00 cancelled\"]",
                // Found at 23:30, past her 23:00 bedtime: not sent; it moves to the due day.
                "one day before, 23:30:",
                "  bills [\"2026-09-25 10:00 pending\", \"2026-09-22 10:00 pending+sent\"] campaigns [\"2026-09-22 07:00 cancelled\"]",
                // Created at 08:00, during her morning (due at once), found at 09:00: still the morning.
                "due day, 09:00: | campaign \"Stay cool\"",
                "  bills [\"2026-09-25 10:00 pending\", \"2026-09-22 10:00 pending+sent\"] campaigns [\"2026-09-25 08:00 pending+sent\", \"2026-09-22 07:00 cancelled\"]",
                "due day, 10:00: | bill \"Your ISKI bill (TRY\u{00A0}450.50) is due today.\"",
                "  bills [\"2026-09-25 10:00 pending+sent\", \"2026-09-22 10:00 pending+sent\"] campaigns [\"2026-09-25 08:00 pending+sent\", \"2026-09-22 07:00 cancelled\"]",
                // Bob (Istanbul) is reached too: his first found after his morning as well, his second in it.
                "campaign c1: queued 0 sent 0 failed 2",
                "campaign c2: queued 0 sent 2 failed 0",
            ])
    }

    /// A bill reminder found late inside daytime quiet hours (12:00–14:00) moves to their end the
    /// same day (not to the next reminder day) and goes then, still "due in 3 days"; one waiting
    /// behind another alert into quiet hours (10:03–14:00) is not sent inside them either.
    func quietHoursScenario(_ store: Store, quiet: (ClockTime, ClockTime), bills: Int, steps: [(String, Int64)]) throws -> [String] {
        try aliceInBerlin(store)
        try changeAlice(store, at: helper.t0) {
            $0.reminders.quietStart = quiet.0
            $0.reminders.quietEnd = quiet.1
        }
        try createBills(store, Array([billContent("ISKI"), billContent("ASKI", amountMinor: 45_051)].prefix(bills)))
        return try steps.map { label, t in
            _ = try step(store, at: t)
            return "\(label):\(try deliverAlerts(store, at: t, hydration: false)) bills \(try reminders(store, .bill))"
        }
    }

    func testABillReminderFoundLateInQuietHoursGoesAtTheirEnd() throws {
        try onBothEngines(
            { store in
                try self.quietHoursScenario(
                    store, quiet: (try XCTUnwrap(ClockTime(hour: 12, minute: 0)), try XCTUnwrap(ClockTime(hour: 14, minute: 0))),
                    bills: 1, steps: [("12:30", try self.berlin(1, 12, 30)), ("14:00", try self.berlin(1, 14) + 1000)])
            },
            [
                // Due at 10:00, found at 12:30 inside the quiet hours: moved to 14:00 the same day.
                "12:30: bills [\"2026-09-22 14:00 pending\"]",
                "14:00: | bill \"Your ISKI bill (TRY\u{00A0}450.50) is due in 3 days.\" bills [\"2026-09-24 10:00 pending\", \"2026-09-22 14:00 pending+sent\"]",
            ])
    }

    func testABillReminderWaitingIntoQuietHoursGoesAtTheirEnd() throws {
        try onBothEngines(
            { store in
                try self.quietHoursScenario(
                    store, quiet: (try XCTUnwrap(ClockTime(hour: 10, minute: 3)), try XCTUnwrap(ClockTime(hour: 14, minute: 0))),
                    bills: 2,
                    steps: [
                        ("10:00", try self.berlin(1, 10) + 1000), ("10:05", try self.berlin(1, 10, 5) + 1000),
                        ("14:00", try self.berlin(1, 14) + 1000),
                    ])
            },
            [
                "10:00: | bill \"Your ISKI bill (TRY\u{00A0}450.50) is due in 3 days.\" bills [\"2026-09-24 10:00 pending\", \"2026-09-22 10:05 pending\", \"2026-09-22 10:00 pending+sent\"]",
                // The second bill's, waiting behind the first, falls into the quiet hours: moved
                // to their end (it used to go at 10:05, inside them).
                "10:05: bills [\"2026-09-24 10:00 pending\", \"2026-09-22 14:00 pending\", \"2026-09-22 10:00 pending+sent\"]",
                "14:00: | bill \"Your ASKI bill (TRY\u{00A0}450.51) is due in 3 days.\" bills [\"2026-09-24 10:00 pending\", \"2026-09-24 10:00 pending\", \"2026-09-22 14:00 pending+sent\", \"2026-09-22 10:00 pending+sent\"]",
            ])
    }

    // MARK: Alerts still queued

    /// A bill alert still queued (APNs backing off, the sender paused) is taken back when the bill
    /// is paid — through REST or a sync push — or bill reminders are switched off; the day's
    /// hydration alert stays.
    func queuedBillAlertScenario(_ store: Store) throws -> [String] {
        let alice = helper.alice
        try aliceInBerlin(store)
        let ids = try createBills(store, [billContent("ISKI"), billContent("ASKI"), billContent("IZSU")])
        var transcript: [String] = []
        func run(_ label: String, at t: Int64) throws {
            _ = try step(store, at: t)
            transcript.append("\(label) queued \(try queuedAlerts(store))")
        }
        try run("10:00", at: try berlin(1, 10) + 1000)
        let paid = try berlin(1, 10) + 2000
        try reviseBill(store, ids[0], at: paid) { $0.paidAt = paid }
        transcript.append("paid through REST: queued \(try queuedAlerts(store))")
        try run("10:05", at: try berlin(1, 10, 5) + 1000)
        var content = billContent("ASKI")
        content.paidAt = try berlin(1, 10, 5) + 2000
        let pushed = try store.applyMutations(
            userID: alice, deviceID: Self.phone, now: try berlin(1, 10, 5) + 2000,
            mutations: [
                SyncMutation(collection: "bills", id: ids[1], write: .upsertBill(content), clientUpdatedAt: try berlin(1, 10, 5) + 2000)
            ],
            profilePatch: { _, p in p })
        guard case .applied = pushed.outcomes.first else {
            XCTFail("\(pushed.outcomes)")
            return transcript
        }
        transcript.append("paid through a sync push: queued \(try queuedAlerts(store))")
        try run("10:10", at: try berlin(1, 10, 10) + 1000)
        try changeAlice(store, at: try berlin(1, 10, 10) + 2000) { $0.reminders.billReminders = false }
        transcript.append("bill reminders off: queued \(try queuedAlerts(store))")
        try run("10:15", at: try berlin(1, 10, 15) + 1000)
        try changeAlice(store, at: try berlin(1, 10, 15) + 2000) { $0.reminders.billReminders = true }
        try changeAlice(store, at: try berlin(1, 10, 15) + 3000) { $0.reminders.billReminders = false }
        transcript.append("bill reminders on and off again: queued \(try queuedAlerts(store))")
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
    /// reminder, already `sent`, never delivered. The hydration alert waits instead, until the
    /// held alert expires. A revision that changes the alert's text (the amount) takes the held
    /// alert back and sends the day's reminder again with the new text; one that does not (the
    /// consumption) leaves it.
    func heldBillAlertScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        let id = try createBills(store, [billContent()])[0]
        var transcript: [String] = []
        func run(_ label: String, at t: Int64) throws {
            let sent = try step(store, at: t).sent
            transcript.append("\(label): sent \(sent), queued \(try queuedAlerts(store))")
        }
        func revise(_ label: String, at t: Int64, _ change: @escaping @Sendable (inout BillContent) -> Void) throws {
            try reviseBill(store, id, at: t, change)
            transcript.append("\(label): queued \(try queuedAlerts(store))")
        }
        try run("10:00", at: try berlin(1, 10) + 1000)
        try run("10:05", at: try berlin(1, 10, 5) + 1000)
        try run("10:10", at: try berlin(1, 10, 10) + 1000)
        try run("10:35, the bill's alert expired unsent", at: try berlin(1, 10, 35) + 1000)
        _ = try deliverAlerts(store, at: try berlin(1, 10, 35) + 2000)
        try run("one day before, 10:00", at: try berlin(3, 10) + 1000)
        try revise("consumption corrected", at: try berlin(3, 10) + 2000) { $0.consumptionMilliM3 = 12_500 }
        try revise("amount corrected", at: try berlin(3, 10) + 3000) { $0.amountMinor = 46_000 }
        try run("the next step", at: try berlin(3, 10) + 4000)
        transcript.append(" " + (try deliverAlerts(store, at: try berlin(3, 10) + 5000)))
        transcript.append("bill reminders \(try reminders(store, .bill, sorted: true))")
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
                "  | bill \"Your ISKI bill (TRY\u{00A0}460.00) is due tomorrow.\"",
                // The due day's row, cancelled when the day before's went back to pending, planned
                // again after its send.
                "bill reminders [\"2026-09-22 10:00 pending+sent\", \"2026-09-24 10:00 pending+sent\", \"2026-09-25 10:00 cancelled\", \"2026-09-25 10:00 pending\"]",
            ])
    }

    /// A revision while the alert is already with the sender leaves it to go (taking it back
    /// could not stop it: two alerts); a reminder waiting to be sent again that the user answers
    /// from an older copy of its alert still leaves the bill its next reminder.
    func revisionWhileSendingScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        let id = try createBills(store, [billContent()])[0]
        let ten = try berlin(1, 10)
        _ = try step(store, at: ten + 1000)
        let claimed = try store.claimDuePushes(now: ten + 2000, limit: 50, leaseMs: 60_000, backgroundWindowMs: 300_000)
        var transcript = ["with the sender: \(claimed.compactMap(\.collapseID).map { $0.replacingOccurrences(of: id, with: "…b1") })"]
        try reviseBill(store, id, at: ten + 3000) { $0.amountMinor = 46_000 }
        transcript.append("amount corrected: queued \(try queuedAlerts(store)) bills \(try reminders(store, .bill))")
        for p in claimed { try store.recordPushSent(id: p.id, payload: p.payload, now: ten + 4000) }
        // The next reminder day: queued, then revised before it is claimed, then answered from the
        // first copy that reached another device.
        let dayBefore = try berlin(3, 10)
        _ = try step(store, at: dayBefore + 1000)
        try reviseBill(store, id, at: dayBefore + 2000) { $0.amountMinor = 47_000 }
        transcript.append("revised again: queued \(try queuedAlerts(store)) bills \(try reminders(store, .bill))")
        let waiting = try XCTUnwrap(
            try store.reminderOverview(userID: helper.alice, limit: 50).recent.first { $0.kind == .bill && $0.outcome == .pending })
        try store.recordReminderOutcome(userID: helper.alice, reminderID: waiting.id, outcome: .opened, now: dayBefore + 3000)
        transcript.append("opened: bills \(try reminders(store, .bill, sorted: true))")
        return transcript
    }

    func testARevisionLeavesAnAlertBeingSentAndAnAnsweredResendKeepsTheBillPlanned() throws {
        try onBothEngines(
            revisionWhileSendingScenario,
            [
                "with the sender: [\"suplash-bill-…b1\"]",
                // Left as it is: still with the sender, the reminder still sent (not sent again).
                "amount corrected: queued [\"suplash-bill-…b1\"] bills [\"2026-09-24 10:00 pending\", \"2026-09-22 10:00 pending+sent\"]",
                // Still queued: taken back, the day before's reminder pending again, the due day's cancelled.
                "revised again: queued [] bills [\"2026-09-25 10:00 cancelled\", \"2026-09-24 10:00 pending\", \"2026-09-22 10:00 pending+sent\"]",
                // Opened from a copy that reached another device: ended, and the due day planned again.
                "opened: bills [\"2026-09-22 10:00 pending+sent\", \"2026-09-24 10:00 opened+sent\", \"2026-09-25 10:00 cancelled\", \"2026-09-25 10:00 pending\"]",
            ])
    }

    /// A sync push that revises a queued alert's text (the amount) sends the day's reminder again
    /// with the new text, as a REST revision does.
    func revisedThroughSyncScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        let id = try createBills(store, [billContent(dueInDays: 2)])[0]
        let ten = try berlin(1, 10)
        var transcript = ["\(try step(store, at: ten + 1000).sent) sent, queued \(try queuedAlerts(store))"]
        let revised = billContent(amountMinor: 39_900, dueInDays: 2)
        let pushed = try store.applyMutations(
            userID: helper.alice, deviceID: Self.phone, now: ten + 2000,
            mutations: [SyncMutation(collection: "bills", id: id, write: .upsertBill(revised), clientUpdatedAt: ten + 2000)],
            profilePatch: { _, p in p })
        guard case .applied = pushed.outcomes.first else {
            XCTFail("\(pushed.outcomes)")
            return transcript
        }
        transcript.append("amount corrected through a sync push: queued \(try queuedAlerts(store))")
        _ = try step(store, at: ten + 3000)
        transcript.append("the next step:\(try deliverAlerts(store, at: ten + 4000, hydration: false))")
        transcript.append("bills \(try reminders(store, .bill, sorted: true))")
        return transcript
    }

    func testASyncPushRevisingAQueuedAlertsTextSendsItAgain() throws {
        try onBothEngines(
            revisedThroughSyncScenario,
            [
                "1 sent, queued [\"suplash-bill-…b1\"]",
                // Taken back (it used to stay queued with 450.50), and sent again with the new amount.
                "amount corrected through a sync push: queued []",
                "the next step: | bill \"Your ISKI bill (TRY\u{00A0}399.00) is due tomorrow.\"",
                "bills [\"2026-09-22 10:00 pending+sent\", \"2026-09-23 10:00 cancelled\", \"2026-09-23 10:00 pending\"]",
            ])
    }

    /// Alice has two phones: the sender has already claimed one copy of the bill's alert when a
    /// revision changes its text. Sent again, the alert would reach that phone twice, so both
    /// copies are left as they are.
    func twoPhonesScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        try register(store, helper.alice, "0193e000-0000-4000-8000-000000000004", .ios, 0xA4)
        let id = try createBills(store, [billContent()])[0]
        let ten = try berlin(1, 10)
        _ = try step(store, at: ten + 1000)
        let claimed = try store.claimDuePushes(now: ten + 2000, limit: 1, leaseMs: 60_000, backgroundWindowMs: 300_000)
        var transcript = ["claimed \(claimed.count), queued \(try queuedAlerts(store))"]
        try reviseBill(store, id, at: ten + 3000) { $0.amountMinor = 46_000 }
        transcript.append("amount corrected: queued \(try queuedAlerts(store)) bills \(try reminders(store, .bill))")
        return transcript
    }

    func testARevisionLeavesTheAlertWhenAnotherDevicesCopyIsOnItsWay() throws {
        try onBothEngines(
            twoPhonesScenario,
            [
                "claimed 1, queued [\"suplash-bill-…b1\", \"suplash-bill-…b1\"]",
                // Both copies stay, the reminder stays sent (it used to go back to pending: the
                // claimed phone got it twice).
                "amount corrected: queued [\"suplash-bill-…b1\", \"suplash-bill-…b1\"] bills [\"2026-09-24 10:00 pending\", \"2026-09-22 10:00 pending+sent\"]",
            ])
    }

    /// A sync push that deletes a bill and writes it again with another amount still sends its
    /// queued alert again with the new text: what the alert says is the content before the push.
    func deletedAndWrittenAgainScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        let id = try createBills(store, [billContent()])[0]
        let ten = try berlin(1, 10)
        _ = try step(store, at: ten + 1000)
        let pushed = try store.applyMutations(
            userID: helper.alice, deviceID: Self.phone, now: ten + 2000,
            mutations: [
                SyncMutation(collection: "bills", id: id, write: .delete, clientUpdatedAt: ten + 2000),
                SyncMutation(
                    collection: "bills", id: id, write: .upsertBill(billContent(amountMinor: 39_900)), clientUpdatedAt: ten + 2001),
            ],
            profilePatch: { _, p in p })
        var transcript = ["pushed \(pushed.outcomes.map { if case .applied = $0 { "applied" } else { "\($0)" } })"]
        transcript.append("queued \(try queuedAlerts(store))")
        _ = try step(store, at: ten + 3000)
        transcript.append("the next step:\(try deliverAlerts(store, at: ten + 4000, hydration: false))")
        return transcript
    }

    func testADeleteAndRewriteInOnePushSendsTheAlertAgain() throws {
        try onBothEngines(
            deletedAndWrittenAgainScenario,
            [
                "pushed [\"applied\", \"applied\"]",
                // Taken back (it used to stay queued with 450.50) and sent again with 399.00.
                "queued []",
                "the next step: | bill \"Your ISKI bill (TRY\u{00A0}399.00) is due in 3 days.\"",
            ])
    }

    // MARK: Campaigns

    /// A morning campaign due while the user's quiet hours (22:00–08:30) still run waits for
    /// their end, inside the morning.
    func campaignInQuietHoursScenario(_ store: Store) throws -> [String] {
        try aliceInBerlin(store)
        try changeAlice(store, at: helper.t0) {
            $0.reminders.quietStart = ClockTime(hour: 22, minute: 0)
            $0.reminders.quietEnd = ClockTime(hour: 8, minute: 30)
        }
        try store.createCampaign(
            id: "0193e000-0000-4000-8000-0000000000c1",
            campaign: NewCampaign(segment: .morning, texts: ["en": "Good morning"], sendAt: nil), now: helper.t0)
        _ = try store.expandCampaigns(now: helper.t0, limit: 10)
        var transcript = ["created: campaigns \(try reminders(store, .campaign))"]
        for t in [try berlin(1, 7) + 1000, try berlin(1, 8, 30) + 1000] {
            _ = try step(store, at: t)
            transcript.append("\(berlinMinute(t)):\(try deliverAlerts(store, at: t, hydration: false)) campaigns \(try reminders(store, .campaign))")
        }
        return transcript
    }

    func testACampaignWaitsForTheEndOfQuietHours() throws {
        try onBothEngines(
            campaignInQuietHoursScenario,
            [
                "created: campaigns [\"2026-09-22 07:00 pending\"]",
                // Due at the morning's start, inside the quiet hours: moved to their end (it used
                // to go at 07:00).
                "2026-09-22 07:00: campaigns [\"2026-09-22 08:30 pending\"]",
                "2026-09-22 08:30: | campaign \"Good morning\" campaigns [\"2026-09-22 08:30 pending+sent\"]",
            ])
    }
}
