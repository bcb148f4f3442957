import SuplashDomain
import XCTest

/// REST write decisions shared by the store adapters (spec §4 CRUD, §5 REST stamps).
final class DocumentWritesTests: XCTestCase {
    let content = WaterEntryContent(amountMl: 250, loggedAt: 1_000)

    func entry(_ c: WaterEntryContent, version: Int64 = 2, deleted: Bool = false) -> WaterEntry {
        WaterEntry(id: "e1", userID: "u1", content: c, createdAt: 10, updatedAt: 20, version: version, deleted: deleted)
    }

    func conflictCode(_ body: () throws -> Any?) -> String? {
        do {
            _ = try body()
            return nil
        } catch RepositoryError.conflict(code: let code) {
            return code
        } catch {
            return "unexpected \(error)"
        }
    }

    func testCreateWithAClientID() throws {
        let stamp = WriteStamp(at: 20, device: "")
        // Nothing stored: insert.
        XCTAssertNil(
            try DocumentWrites.existing(
                nil as Stamped<WaterEntry>?, content: content, storedContent: \.content,
                deletedCode: "entry_deleted", existsCode: "entry_exists"))
        // The same live content: the stored entry (identical re-post).
        let same = Stamped(entry(content), stamp: stamp)
        XCTAssertEqual(
            try DocumentWrites.existing(
                same, content: content, storedContent: \.content,
                deletedCode: "entry_deleted", existsCode: "entry_exists"), same.document)
        // Other content or a tombstone: the collection's conflict codes.
        let other = Stamped(entry(WaterEntryContent(amountMl: 300, loggedAt: 1_000)), stamp: stamp)
        XCTAssertEqual(
            conflictCode {
                try DocumentWrites.existing(
                    other, content: self.content, storedContent: \.content,
                    deletedCode: "entry_deleted", existsCode: "entry_exists")
            }, "entry_exists")
        let tomb = Stamped(entry(content, deleted: true), deleted: true, stamp: stamp)
        XCTAssertEqual(
            conflictCode {
                try DocumentWrites.existing(
                    tomb, content: self.content, storedContent: \.content,
                    deletedCode: "bill_deleted", existsCode: "bill_id_exists")
            }, "bill_deleted", "a tombstone wins over equal content")
    }

    func testTargetOfAnUpdateOrDelete() throws {
        let stamp = WriteStamp(at: 20, device: "")
        XCTAssertThrowsError(try DocumentWrites.target(nil as Stamped<WaterEntry>?) { _ in true }) {
            XCTAssertEqual($0 as? RepositoryError, .notFound)
        }
        let tomb = Stamped(entry(content, deleted: true), deleted: true, stamp: stamp)
        XCTAssertThrowsError(try DocumentWrites.target(tomb) { _ in true }) {
            XCTAssertEqual($0 as? RepositoryError, .notFound, "a tombstone is not found, even before If-Match")
        }
        let live = Stamped(entry(content), stamp: stamp)
        XCTAssertThrowsError(try DocumentWrites.target(live) { $0.version == 1 }) {
            XCTAssertEqual($0 as? RepositoryError, .preconditionFailed)
        }
        XCTAssertEqual(try DocumentWrites.target(live) { $0.version == 2 }, live.document)
    }

    func testRESTStampAndRevisions() {
        XCTAssertEqual(DocumentWrites.stamp(now: 100, stored: nil, deviceID: nil), WriteStamp(at: 100, device: ""))
        XCTAssertEqual(
            DocumentWrites.stamp(now: 100, stored: WriteStamp(at: 500, device: "x"), deviceID: "d"),
            WriteStamp(at: 501, device: "d"))
        let next = DocumentWrites.revised(entry(content), content: WaterEntryContent(amountMl: 1, loggedAt: 2), now: 99)
        XCTAssertEqual(next.version, 3)
        XCTAssertEqual(next.updatedAt, 99)
        XCTAssertEqual(next.createdAt, 10)
        XCTAssertEqual(next.content.amountMl, 1)
    }

    func testProfileRevisionKeepsIdentity() {
        var current = UserProfile(id: "u1", email: "a@example.com", displayName: nil, now: 10)
        current.emailVerified = true
        current.version = 4
        var patched = current
        patched.id = "u2"
        patched.email = "b@example.com"
        patched.emailVerified = false
        patched.createdAt = 0
        patched.timezone = "Europe/Istanbul"
        let next = DocumentWrites.revised(current, patched: patched, now: 50)
        XCTAssertEqual(next.id, "u1")
        XCTAssertEqual(next.email, "a@example.com")
        XCTAssertTrue(next.emailVerified)
        XCTAssertEqual(next.createdAt, 10)
        XCTAssertEqual(next.timezone, "Europe/Istanbul")
        XCTAssertEqual(next.updatedAt, 50)
        XCTAssertEqual(next.version, 5)
    }

    func testPutDayIsCreatedOnceThenReplaced() {
        let date = LocalDate(parsing: "2026-06-01") ?? LocalDate(dayNumber: 0)
        let hot = DayContextContent(maxTemperatureC: 31, activeMinutes: 60)
        let first = DocumentWrites.putDay(date: date, content: hot, stored: nil, now: 100)
        XCTAssertTrue(first.created)
        XCTAssertEqual(first.day, DayContext(date: date, content: hot, createdAt: 100, updatedAt: 100, version: 1))
        let again = DocumentWrites.putDay(
            date: date, content: DayContextContent(), stored: (createdAt: 100, version: 1),
            now: 200)
        XCTAssertFalse(again.created)
        XCTAssertEqual(
            again.day,
            DayContext(
                date: date, content: DayContextContent(), createdAt: 100, updatedAt: 200,
                version: 2))
    }
}
