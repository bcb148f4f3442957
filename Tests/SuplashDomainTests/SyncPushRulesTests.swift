import SuplashDomain
import SuplashJSON
import XCTest

/// Last-write-wins order and the sync-push decisions shared by the store adapters (spec §5).
final class SyncPushRulesTests: XCTestCase {
    let phone = "7d4b7f0e-4d3c-4c55-9a55-0c4a3b0f6a11"
    let watch = "1f0e5c8a-2b7d-4e61-8f7a-5d3c2b1a0f99"
    let now: Int64 = 1_780_000_000_000

    func s(_ at: Int64, _ device: String) -> WriteStamp { WriteStamp(at: at, device: device) }

    // MARK: - Order

    func testOrderIsClockThenDeviceWithLaterArrivalWinningAnEqualPair() {
        let table: [(incoming: WriteStamp, stored: WriteStamp?, wins: Bool, why: String)] = [
            (s(100, phone), nil, true, "nothing stored"),
            (s(101, phone), s(100, phone), true, "later clock"),
            (s(99, phone), s(100, phone), false, "earlier clock"),
            (s(101, watch), s(100, phone), true, "later clock beats a greater device"),
            (s(99, phone), s(100, watch), false, "earlier clock loses to a smaller device"),
            (s(100, phone), s(100, watch), true, "equal clock: greater device id wins (7d… > 1f…)"),
            (s(100, watch), s(100, phone), false, "equal clock: smaller device id loses"),
            (s(100, phone), s(100, phone), true, "equal pair: the later arrival wins"),
            (s(100, ""), s(100, phone), false, "a REST stamp without device sorts first at equal clocks"),
        ]
        for row in table {
            XCTAssertEqual(LastWriteWins.wins(row.incoming, over: row.stored), row.wins, row.why)
        }
    }

    func testRESTStampIsServerTimeOrOneAfterTheStoredStamp() {
        XCTAssertEqual(LastWriteWins.restStampAt(now: 1000, storedAt: nil), 1000)
        XCTAssertEqual(LastWriteWins.restStampAt(now: 1000, storedAt: 500), 1000)
        XCTAssertEqual(LastWriteWins.restStampAt(now: 1000, storedAt: 1000), 1001)
        XCTAssertEqual(LastWriteWins.restStampAt(now: 1000, storedAt: 5000), 5001, "a client clock ahead of the server")
        // The REST stamp always wins against the version it was made against.
        for storedAt: Int64 in [0, 999, 1000, 1001, 9999] {
            let at = LastWriteWins.restStampAt(now: 1000, storedAt: storedAt)
            XCTAssertTrue(LastWriteWins.wins(s(at, ""), over: s(storedAt, "zzzz")))
        }
    }

    // MARK: - water_entries

    func entry(version: Int64, amount: Int = 250, createdAt: Int64 = 10, deleted: Bool = false) -> WaterEntry {
        WaterEntry(
            id: "e1", userID: "u1", content: WaterEntryContent(amountMl: amount, loggedAt: now - 3_600_000),
            createdAt: createdAt, updatedAt: createdAt, version: version, deleted: deleted)
    }

    func upsert(_ amount: Int, at: Int64) -> SyncMutation {
        SyncMutation(
            collection: "water_entries", id: "e1",
            write: .upsertEntry(WaterEntryContent(amountMl: amount, loggedAt: now - 3_600_000)),
            clientUpdatedAt: at)
    }

    func testEntryUpsertOnNothingInsertsVersionOne() {
        let step = SyncPush.entry(upsert(300, at: 5), stored: nil, userID: "u1", stamp: s(5, phone), now: now)
        guard case .upsert(let e) = step else { return XCTFail("\(step)") }
        XCTAssertEqual(e.version, 1)
        XCTAssertEqual(e.createdAt, now)
        XCTAssertEqual(e.updatedAt, now)
        XCTAssertEqual(SyncPush.entryDeltas(step, stored: nil).map(\.amountMl), [300])
    }

    func testEntryUpsertOverAnOlderLiveEntryUpdatesAndMovesTheTotals() {
        let stored = Stamped(entry(version: 3), stamp: s(5, phone))
        let step = SyncPush.entry(upsert(300, at: 6), stored: stored, userID: "u1", stamp: s(6, watch), now: now)
        guard case .upsert(let e) = step else { return XCTFail("\(step)") }
        XCTAssertEqual(e.version, 4)
        XCTAssertEqual(e.createdAt, 10, "createdAt is kept")
        XCTAssertEqual(SyncPush.entryDeltas(step, stored: stored).map(\.amountMl), [300, -250])
        let outcome = SyncPush.applied(
            step, collection: "water_entries", id: "e1", position: 42, now: now,
            wrap: SyncDocument.waterEntry)
        guard case .applied(let change) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertEqual(change.version, 4)
        XCTAssertEqual(change.position, 42)
        XCTAssertFalse(change.deleted)
        XCTAssertEqual(change.document, .waterEntry(e))
    }

    func testEntryLosingUpsertIsSupersededByTheStoredEntry() {
        let stored = Stamped(entry(version: 3), stamp: s(7, phone))
        let step = SyncPush.entry(upsert(300, at: 6), stored: stored, userID: "u1", stamp: s(6, phone), now: now)
        guard case .answer(.superseded(let current)) = step else { return XCTFail("\(step)") }
        XCTAssertEqual(current, .waterEntry(stored.document))
        XCTAssertEqual(SyncPush.entryDeltas(step, stored: stored), [])
    }

    func testEntryLosingAgainstATombstoneIsSupersededWithNoDocument() {
        let stored = Stamped(entry(version: 2, deleted: true), deleted: true, stamp: s(7, phone))
        let step = SyncPush.entry(upsert(300, at: 6), stored: stored, userID: "u1", stamp: s(6, phone), now: now)
        guard case .answer(.superseded(let current)) = step else { return XCTFail("\(step)") }
        XCTAssertNil(current)
    }

    func testEntryWinningUpsertResurrectsATombstoneWithoutSubtractingIt() {
        let stored = Stamped(entry(version: 2, deleted: true), deleted: true, stamp: s(5, phone))
        let step = SyncPush.entry(upsert(300, at: 6), stored: stored, userID: "u1", stamp: s(6, phone), now: now)
        guard case .upsert(let e) = step else { return XCTFail("\(step)") }
        XCTAssertEqual(e.version, 3)
        XCTAssertFalse(e.deleted)
        XCTAssertEqual(SyncPush.entryDeltas(step, stored: stored).map(\.amountMl), [300])
    }

    func testEntryDeleteTombstonesKnownAndUnknownIds() {
        let del = SyncMutation(collection: "water_entries", id: "e1", write: .delete, clientUpdatedAt: 6)
        let unknown = SyncPush.entry(del, stored: nil, userID: "u1", stamp: s(6, phone), now: now)
        guard case .tombstone(let v1) = unknown else { return XCTFail("\(unknown)") }
        XCTAssertEqual(v1, 1, "an unknown id gets a tombstone, so an older upsert loses later")
        XCTAssertEqual(SyncPush.entryDeltas(unknown, stored: nil), [])

        let live = Stamped(entry(version: 3), stamp: s(5, phone))
        let known = SyncPush.entry(del, stored: live, userID: "u1", stamp: s(6, phone), now: now)
        guard case .tombstone(let v4) = known else { return XCTFail("\(known)") }
        XCTAssertEqual(v4, 4)
        XCTAssertEqual(SyncPush.entryDeltas(known, stored: live).map(\.amountMl), [-250])
        let outcome = SyncPush.applied(
            known, collection: "water_entries", id: "e1", position: 9, now: now,
            wrap: SyncDocument.waterEntry)
        guard case .applied(let change) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertTrue(change.deleted)
        XCTAssertNil(change.document)
        XCTAssertEqual(change.updatedAt, now)

        // A later upsert with an older stamp loses against the tombstone.
        let tomb = Stamped(entry(version: 1, deleted: true), deleted: true, stamp: s(6, phone))
        let late = SyncPush.entry(upsert(300, at: 5), stored: tomb, userID: "u1", stamp: s(5, watch), now: now)
        guard case .answer(.superseded(nil)) = late else { return XCTFail("\(late)") }
    }

    func testEntryMutationWithAnotherCollectionsWriteIsInvalid() {
        let m = SyncMutation(collection: "water_entries", id: "e1", write: .putDay(DayContextContent()), clientUpdatedAt: 6)
        let step = SyncPush.entry(m, stored: nil, userID: "u1", stamp: s(6, phone), now: now)
        guard case .answer(.rejected(let r)) = step else { return XCTFail("\(step)") }
        XCTAssertEqual(r.code, "invalid_mutation")
    }

    // MARK: - Retried pushes (spec §5)

    /// A mutation identical to the stored document — same stamp, same device, same content —
    /// is `.unchanged`: applied at the stored version, no totals moved. Any difference
    /// (content, device, clock) is a real write.
    func testIdenticalEntryMutationIsUnchanged() {
        let stored = Stamped(entry(version: 1, amount: 300), stamp: s(5, phone))
        let step = SyncPush.entry(upsert(300, at: 5), stored: stored, userID: "u1", stamp: s(5, phone), now: now)
        guard case .unchanged(let version, let updatedAt, let document) = step else { return XCTFail("\(step)") }
        XCTAssertEqual(version, 1)
        XCTAssertEqual(updatedAt, 10)
        XCTAssertEqual(document, stored.document)
        XCTAssertEqual(SyncPush.entryDeltas(step, stored: stored).map(\.amountMl), [], "no daily-total change")
        let outcome = SyncPush.applied(
            step, collection: "water_entries", id: "e1", position: 7, now: now,
            wrap: SyncDocument.waterEntry)
        guard case .applied(let change) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertEqual(change.version, 1)
        XCTAssertEqual(change.position, 7, "the stored change position")
        XCTAssertEqual(change.updatedAt, 10, "the stored updatedAt, not now")
        XCTAssertFalse(change.deleted)

        // Other content on the same stamp: the later arrival wins, a new version.
        guard
            case .upsert(let e) = SyncPush.entry(
                upsert(301, at: 5), stored: stored, userID: "u1", stamp: s(5, phone),
                now: now)
        else { return XCTFail() }
        XCTAssertEqual(e.version, 2)
        // Same content from another device with an equal clock that wins: a real write.
        guard
            case .upsert = SyncPush.entry(
                upsert(300, at: 5), stored: Stamped(stored.document, stamp: s(5, watch)),
                userID: "u1", stamp: s(5, phone), now: now)
        else { return XCTFail() }
        // Same content, later clock: a real write.
        guard case .upsert = SyncPush.entry(upsert(300, at: 6), stored: stored, userID: "u1", stamp: s(6, phone), now: now)
        else { return XCTFail() }
        // An identical upsert onto a tombstone with that stamp brings the entry back.
        guard
            case .upsert = SyncPush.entry(
                upsert(300, at: 5), stored: Stamped(stored.document, deleted: true, stamp: s(5, phone)),
                userID: "u1", stamp: s(5, phone), now: now)
        else { return XCTFail() }
    }

    func testRetriedDeleteOfATombstoneIsUnchanged() {
        let tomb = Stamped(entry(version: 2, deleted: true), deleted: true, stamp: s(5, phone))
        let del = SyncMutation(collection: "water_entries", id: "e1", write: .delete, clientUpdatedAt: 5)
        let step = SyncPush.entry(del, stored: tomb, userID: "u1", stamp: s(5, phone), now: now)
        guard case .unchanged(2, _, nil) = step else { return XCTFail("\(step)") }
        guard
            case .applied(let change) = SyncPush.applied(
                step, collection: "water_entries", id: "e1", position: 9, now: now,
                wrap: SyncDocument.waterEntry)
        else { return XCTFail() }
        XCTAssertTrue(change.deleted)
        XCTAssertNil(change.document)
        let bill = Stamped(
            Bill(id: "b1", userID: "u1", content: billContent(), createdAt: 10, updatedAt: 10, version: 2),
            deleted: true, stamp: s(5, phone))
        guard
            case .unchanged(2, _, nil) = SyncPush.bill(
                SyncMutation(
                    collection: "bills", id: "b1", write: .delete,
                    clientUpdatedAt: 5),
                stored: bill, userID: "u1", stamp: s(5, phone), now: now)
        else { return XCTFail() }
    }

    func testIdenticalBillDayAndProfileMutationsAreUnchanged() throws {
        let bill = Stamped(
            Bill(id: "b1", userID: "u1", content: billContent(), createdAt: 10, updatedAt: 10, version: 2),
            stamp: s(5, watch))
        let up = SyncMutation(collection: "bills", id: "b1", write: .upsertBill(billContent()), clientUpdatedAt: 5)
        guard case .unchanged(2, 10, let b?) = SyncPush.bill(up, stored: bill, userID: "u1", stamp: s(5, watch), now: now)
        else { return XCTFail() }
        XCTAssertEqual(b, bill.document)

        let date = LocalDate(parsing: "2026-06-01") ?? LocalDate(dayNumber: 0)
        let hot = DayContextContent(maxTemperatureC: 33, activeMinutes: nil)
        let day = Stamped(DayContext(date: date, content: hot, createdAt: 10, updatedAt: 10, version: 4), stamp: s(8, phone))
        guard case .unchanged(4, 10, _) = SyncPush.day(date: date, content: hot, stored: day, stamp: s(8, phone), now: now)
        else { return XCTFail() }
        guard case .upsert = SyncPush.day(date: date, content: DayContextContent(), stored: day, stamp: s(8, phone), now: now)
        else { return XCTFail() }

        var named = profile()
        named.displayName = "Ayşe"
        let stored = Stamped(named, stamp: s(5, phone))
        let same = try SyncPush.profile(patch: .object([]), stored: stored, stamp: s(5, phone), now: now) { _, p in
            var q = p
            q.displayName = "Ayşe"
            return q
        }
        guard case .unchanged(3, _, let p?) = same else { return XCTFail("\(same)") }
        XCTAssertEqual(p, named)
        let renamed = try SyncPush.profile(patch: .object([]), stored: stored, stamp: s(5, phone), now: now) { _, p in
            var q = p
            q.displayName = "Ali"
            return q
        }
        guard case .upsert(let next) = renamed else { return XCTFail("\(renamed)") }
        XCTAssertEqual(next.version, 4)
    }

    // MARK: - bills

    func billContent(_ amount: Int64 = 100) -> BillContent {
        BillContent(
            provider: "ISKI", subscriberNo: "1234567", period: YearMonth(parsing: "2026-05")!,
            consumptionMilliM3: 12_000, amountMinor: amount, currency: "TRY",
            dueDate: LocalDate(parsing: "2026-06-15") ?? LocalDate(dayNumber: 0), paidAt: nil)
    }

    func testBillStepsFollowTheSameOrder() {
        let stored = Stamped(
            Bill(id: "b1", userID: "u1", content: billContent(), createdAt: 10, updatedAt: 10, version: 2),
            stamp: s(5, watch))
        let up = SyncMutation(collection: "bills", id: "b1", write: .upsertBill(billContent(200)), clientUpdatedAt: 5)
        // Equal clock, smaller device: loses.
        guard
            case .answer(.superseded(.bill(let current)?)) =
                SyncPush.bill(up, stored: stored, userID: "u1", stamp: s(5, "0"), now: now)
        else { return XCTFail() }
        XCTAssertEqual(current.content.amountMinor, 100)
        // Equal pair: wins, version + 1, createdAt kept.
        guard case .upsert(let bill) = SyncPush.bill(up, stored: stored, userID: "u1", stamp: s(5, watch), now: now)
        else { return XCTFail() }
        XCTAssertEqual(bill.version, 3)
        XCTAssertEqual(bill.createdAt, 10)
        XCTAssertEqual(bill.updatedAt, now)
        XCTAssertEqual(bill.content.amountMinor, 200)
        // Delete of a tombstone with a later stamp: another tombstone version.
        let tomb = Stamped(stored.document, deleted: true, stamp: s(6, watch))
        let del = SyncMutation(collection: "bills", id: "b1", write: .delete, clientUpdatedAt: 7)
        guard case .tombstone(let v) = SyncPush.bill(del, stored: tomb, userID: "u1", stamp: s(7, phone), now: now)
        else { return XCTFail() }
        XCTAssertEqual(v, 3)
        // Losing against a tombstone: superseded with no document.
        guard case .answer(.superseded(nil)) = SyncPush.bill(up, stored: tomb, userID: "u1", stamp: s(5, phone), now: now)
        else { return XCTFail() }
        // A write of another collection.
        let bad = SyncMutation(collection: "bills", id: "b1", write: .patchProfile(.object([])), clientUpdatedAt: 9)
        guard case .answer(.rejected(let r)) = SyncPush.bill(bad, stored: nil, userID: "u1", stamp: s(9, phone), now: now)
        else { return XCTFail() }
        XCTAssertEqual(r.code, "invalid_mutation")
    }

    // MARK: - days

    func testDayTargetValidatesTheIdAndTurnsADeleteIntoAnEmptyContext() throws {
        let bad = SyncMutation(collection: "days", id: "2026-13-01", write: .delete, clientUpdatedAt: 1)
        guard case .failure(let r) = SyncPush.dayTarget(bad) else { return XCTFail() }
        XCTAssertEqual(r.code, "validation_failed")
        XCTAssertEqual(r.errors.map(\.pointer), ["/id"])

        let del = SyncMutation(collection: "days", id: "2026-06-01", write: .delete, clientUpdatedAt: 1)
        let target = try SyncPush.dayTarget(del).get()
        XCTAssertEqual(target.date.description, "2026-06-01")
        XCTAssertEqual(target.content, DayContextContent())

        let wrong = SyncMutation(collection: "days", id: "2026-06-01", write: .upsertBill(billContent()), clientUpdatedAt: 1)
        guard case .failure(let r2) = SyncPush.dayTarget(wrong) else { return XCTFail() }
        XCTAssertEqual(r2.code, "invalid_mutation")
    }

    func testDayIsReplacedOrSuperseded() {
        let date = LocalDate(parsing: "2026-06-01") ?? LocalDate(dayNumber: 0)
        let hot = DayContextContent(maxTemperatureC: 33, activeMinutes: nil)
        guard case .upsert(let fresh) = SyncPush.day(date: date, content: hot, stored: nil, stamp: s(1, phone), now: now)
        else { return XCTFail() }
        XCTAssertEqual(fresh.version, 1)
        XCTAssertEqual(fresh.createdAt, now)

        let stored = Stamped(DayContext(date: date, content: hot, createdAt: 10, updatedAt: 10, version: 4), stamp: s(8, phone))
        guard
            case .answer(.superseded(.day(let current)?)) =
                SyncPush.day(date: date, content: DayContextContent(), stored: stored, stamp: s(7, watch), now: now)
        else { return XCTFail() }
        XCTAssertEqual(current.version, 4)
        guard
            case .upsert(let cleared) =
                SyncPush.day(date: date, content: DayContextContent(), stored: stored, stamp: s(9, watch), now: now)
        else { return XCTFail() }
        XCTAssertEqual(cleared.version, 5)
        XCTAssertEqual(cleared.createdAt, 10)
        XCTAssertEqual(cleared.content, DayContextContent())
    }

    // MARK: - profile

    func profile() -> UserProfile {
        var p = UserProfile(id: "u1", email: "a@example.com", displayName: nil, now: 10)
        p.version = 3
        p.emailVerified = true
        return p
    }

    func testProfileTargetChecksOwnerAndOperation() {
        let other = SyncMutation(collection: "profile", id: "u2", write: .patchProfile(.object([])), clientUpdatedAt: 1)
        guard case .failure(let r) = SyncPush.profileTarget(other, userID: "u1") else { return XCTFail() }
        XCTAssertEqual(r.code, "permission_denied")
        let del = SyncMutation(collection: "profile", id: "u1", write: .delete, clientUpdatedAt: 1)
        guard case .failure(let r2) = SyncPush.profileTarget(del, userID: "u1") else { return XCTFail() }
        XCTAssertEqual(r2.code, "operation_not_allowed")
    }

    func testProfilePatchKeepsIdentityAndBumpsTheVersion() throws {
        let stored = Stamped(profile(), stamp: s(5, phone))
        let step = try SyncPush.profile(patch: .object([]), stored: stored, stamp: s(6, phone), now: now) { _, p in
            var q = p
            q.id = "hijack"
            q.email = "evil@example.com"
            q.emailVerified = false
            q.createdAt = 0
            q.displayName = "Ayşe"
            return q
        }
        guard case .upsert(let next) = step else { return XCTFail("\(step)") }
        XCTAssertEqual(next.id, "u1")
        XCTAssertEqual(next.email, "a@example.com")
        XCTAssertTrue(next.emailVerified)
        XCTAssertEqual(next.createdAt, 10)
        XCTAssertEqual(next.displayName, "Ayşe")
        XCTAssertEqual(next.version, 4)
        XCTAssertEqual(next.updatedAt, now)
    }

    func testProfileLosesOrIsRejectedWithoutApplying() throws {
        let stored = Stamped(profile(), stamp: s(5, watch))
        let lost = try SyncPush.profile(patch: .object([]), stored: stored, stamp: s(5, "0"), now: now) { _, _ in
            XCTFail("a losing patch is not applied")
            return self.profile()
        }
        guard case .answer(.superseded(.profile(let p)?)) = lost else { return XCTFail("\(lost)") }
        XCTAssertEqual(p.version, 3)

        let invalid = try SyncPush.profile(patch: .object([]), stored: stored, stamp: s(6, watch), now: now) { _, _ in
            throw ValidationFailure([FieldError("/weightKg", .outOfRange, "too heavy")])
        }
        guard case .answer(.rejected(let r)) = invalid else { return XCTFail("\(invalid)") }
        XCTAssertEqual(r.code, "validation_failed")
        XCTAssertEqual(r.errors.map(\.pointer), ["/weightKg"])

        struct Boom: Error {}
        XCTAssertThrowsError(
            try SyncPush.profile(patch: .object([]), stored: stored, stamp: s(6, watch), now: now) { _, _ in
                throw Boom()
            })
    }
}
