import SuplashSQL
import XCTest

/// `MigrationPlan.applyPending`, the one migration loop both engines run, against a recording
/// session: each pending migration in its own transaction with its record, a failing script
/// rolled back with the earlier ones kept, and nothing applied when the recorded history
/// disagrees with the files.
final class ApplyPendingTests: XCTestCase {
    private final class FakeSession: MigrationSession {
        var log: [String] = []
        var applied: [AppliedMigration] = []
        var failing: String?

        let beginSQL = "BEGIN"
        var isInTransaction = false
        func execute(_ sql: String) throws {
            switch sql {
            case "BEGIN": isInTransaction = true
            case "COMMIT", "ROLLBACK": isInTransaction = false
            case failing: throw CancellationError()
            default: break
            }
            log.append(sql == "BEGIN" || sql == "COMMIT" || sql == "ROLLBACK" ? sql.lowercased() : "run \(sql)")
        }
        func recorded() throws -> [AppliedMigration] { applied }
        func record(_ m: Migration) throws {
            applied.append(AppliedMigration(version: m.version, name: m.name, checksum: m.checksum, appliedAt: "t"))
            log.append("record \(m.version)")
        }
    }

    private let migrations = [
        Migration(version: 1, name: "a", sql: "A", checksum: "ca"), Migration(version: 2, name: "b", sql: "B", checksum: "cb"),
    ]

    func testEachPendingMigrationCommitsWithItsRecord() throws {
        let session = FakeSession()
        XCTAssertEqual(try MigrationPlan.applyPending(migrations, on: session), 2)
        XCTAssertEqual(
            session.log, ["begin", "run A", "record 1", "commit", "begin", "run B", "record 2", "commit", "begin", "commit"])
        XCTAssertEqual(try MigrationPlan.applyPending(migrations, on: session), 0, "up to date")
    }

    func testAFailingScriptRollsBackAndKeepsTheEarlierOnes() {
        let session = FakeSession()
        session.failing = "B"
        XCTAssertThrowsError(try MigrationPlan.applyPending(migrations, on: session)) { error in
            guard case MigrationError.failed(let version, _, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(version, 2)
        }
        XCTAssertEqual(session.log, ["begin", "run A", "record 1", "commit", "begin", "rollback"])
        XCTAssertEqual(session.applied.map(\.version), [1])
    }

    func testAChangedAppliedMigrationAppliesNothing() {
        let session = FakeSession()
        session.applied = [AppliedMigration(version: 1, name: "a", checksum: "other", appliedAt: "t")]
        XCTAssertThrowsError(try MigrationPlan.applyPending(migrations, on: session))
        XCTAssertEqual(session.log, ["begin", "rollback"])
    }
}
