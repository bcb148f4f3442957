import Foundation
import SuplashSQL
import XCTest

final class MigrationPlanTests: XCTestCase {
    private func migration(_ version: Int, _ name: String, _ checksum: String = "c") -> Migration {
        Migration(version: version, name: name, sql: "SELECT \(version);", checksum: checksum)
    }

    private func applied(_ m: Migration) -> AppliedMigration {
        AppliedMigration(version: m.version, name: m.name, checksum: m.checksum, appliedAt: "2026-01-01T00:00:00.000Z")
    }

    func testPendingAreTheUnappliedInOrder() throws {
        let all = [migration(1, "a"), migration(2, "b"), migration(3, "c")]
        XCTAssertEqual(try MigrationPlan.plan(recorded: [], all).map(\.version), [1, 2, 3])
        XCTAssertEqual(try MigrationPlan.plan(recorded: [applied(all[0])], all).map(\.version), [2, 3])
        XCTAssertEqual(try MigrationPlan.plan(recorded: all.map(applied), all), [])
    }

    func testChangedRenamedMissingAndOutOfOrderAreRefused() {
        let all = [migration(1, "a"), migration(2, "b")]
        XCTAssertThrowsError(try MigrationPlan.plan(recorded: [applied(migration(1, "a", "other"))], all)) {
            guard case MigrationError.checksumMismatch(version: 1, name: "a") = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try MigrationPlan.plan(recorded: [applied(migration(1, "old"))], all)) {
            guard case MigrationError.nameMismatch(version: 1, applied: "old", file: "a") = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try MigrationPlan.plan(recorded: [applied(migration(3, "c"))], all)) {
            guard case MigrationError.missingMigration(version: 3, name: "c") = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try MigrationPlan.plan(recorded: [applied(all[1])], all)) {
            guard case MigrationError.outOfOrder(version: 1, name: "a", latestApplied: 2) = $0 else { return XCTFail("\($0)") }
        }
    }

    func testCheckedSortedRefusesDuplicateVersions() throws {
        XCTAssertEqual(try MigrationPlan.checkedSorted([migration(2, "b"), migration(1, "a")]).map(\.version), [1, 2])
        XCTAssertThrowsError(try MigrationPlan.checkedSorted([migration(1, "a"), migration(1, "b")])) {
            guard case MigrationError.duplicateVersion(1, files: ["a", "b"]) = $0 else { return XCTFail("\($0)") }
        }
    }

    func testLoadReadsSQLFilesInVersionOrderWithTheGivenChecksum() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("suplash-sql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("CREATE TABLE b (x);".utf8).write(to: directory.appendingPathComponent("0010_second.sql"))
        try Data("CREATE TABLE a (x);".utf8).write(to: directory.appendingPathComponent("0002_first.sql"))
        try Data("ignored".utf8).write(to: directory.appendingPathComponent("README.md"))

        let loaded = try MigrationPlan.load(directory: directory.path) { "len\($0.count)" }
        XCTAssertEqual(loaded.map(\.version), [2, 10])
        XCTAssertEqual(loaded.map(\.name), ["first", "second"])
        XCTAssertEqual(loaded.map(\.checksum), ["len19", "len19"])
        XCTAssertEqual(loaded.first?.sql, "CREATE TABLE a (x);")

        try Data("x".utf8).write(to: directory.appendingPathComponent("12_short.sql"))
        XCTAssertThrowsError(try MigrationPlan.load(directory: directory.path) { _ in "" }) {
            guard case MigrationError.badFileName("12_short.sql") = $0 else { return XCTFail("\($0)") }
        }
    }

    func testFailedDescriptionAppendsOnlySafelyDescribedErrors() {
        struct Safe: SafelyDescribedError { var description: String { "Safe(kind)" } }
        struct Unsafe: Error, CustomStringConvertible { var description: String { "secret value" } }
        let safe = MigrationError.failed(version: 3, name: "x", underlying: Safe()).description
        let unsafe = MigrationError.failed(version: 3, name: "x", underlying: Unsafe()).description
        XCTAssertTrue(safe.hasSuffix(" Safe(kind)"), safe)
        XCTAssertFalse(unsafe.contains("secret"), unsafe)
    }
}
