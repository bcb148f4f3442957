import Foundation
import XCTest

@testable import SuplashKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Devices heal a server restored from an older backup (spec §5, 410
/// `sync_history_changed`): they keep their local data, read the snapshot and push back
/// what it lacks or holds older, so the server ends at the newest state again.
final class RestoreHealingTests: XCTestCase {
    /// `suplash-server backup --to FILE` against the test server's data dir.
    func backup(_ server: KitTestServer, to path: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: KitTestServer.executable)
        p.arguments = ["backup", "--to", path, "--data-dir", server.dataDir]
        p.currentDirectoryURL = URL(fileURLWithPath: KitTestServer.packageRoot)
        p.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        p.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "backup")
    }

    func testTwoDevicesHealAServerRestoredFromAnOlderBackup() async throws {
        let server = try KitTestServer()
        let phone = try server.client("phone")
        let watch = try server.client("watch")
        let email = testEmail()
        try await phone.signUp(email: email, password: testPassword)
        try await watch.signIn(email: email, password: testPassword)
        let a = try await phone.logWater(400, at: Date().addingTimeInterval(-7200))
        let b = try await phone.logWater(300, at: Date().addingTimeInterval(-3600))
        _ = try await phone.sync()
        _ = try await watch.sync()

        // The backup holds A (400 ml) and B.
        let snapshot = server.dataDir + "/older.sqlite"
        try backup(server, to: snapshot)

        // After the backup: the phone edits A and logs C, the watch deletes B and logs D;
        // both devices see everything.
        var editedA = a
        editedA.amountMl = 500
        try await phone.save(editedA)
        let c = try await phone.logWater(250)
        try await watch.deleteEntry(id: b.id)
        let d = try await watch.logWater(330, source: .watch)
        _ = try await phone.sync()
        _ = try await watch.sync()
        _ = try await phone.sync()
        let newest = Set(try await phone.entries(from: .distantPast, to: .distantFuture).map { "\($0.id) \($0.amountMl)" })
        XCTAssertEqual(newest, ["\(a.id) 500", "\(c.id) 250", "\(d.id) 330"])

        // The disaster: the server is restored from the older backup. Meanwhile the phone
        // logs E offline (its outbox must survive the heal).
        server.stop()
        let e = try await phone.logWater(120)
        let database = server.dataDir + "/suplash.sqlite"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
        try FileManager.default.moveItem(atPath: snapshot, toPath: database)
        try server.restart()

        let phoneReport = try await phone.sync()
        XCTAssertTrue(phoneReport.healedServer)
        XCTAssertGreaterThan(phoneReport.pushedBack, 0)
        let watchReport = try await watch.sync()
        XCTAssertTrue(watchReport.healedServer)
        _ = try await phone.sync()
        _ = try await watch.sync()

        let expected = newest.union(["\(e.id) 120"])
        let phoneFinal = try await phone.entries(from: .distantPast, to: .distantFuture)
        let watchFinal = try await watch.entries(from: .distantPast, to: .distantFuture)
        XCTAssertEqual(Set(phoneFinal.map { "\($0.id) \($0.amountMl)" }), expected, "the phone kept its data")
        XCTAssertEqual(Set(watchFinal.map { "\($0.id) \($0.amountMl)" }), expected, "the watch kept its data")
        XCTAssertTrue(phoneFinal.allSatisfy { !$0.isPending })
        let pending = try await phone.pendingCount()
        XCTAssertEqual(pending, 0)

        // The server holds the newest state again: B deleted, A edited, C, D and E present.
        let token = try await phone.currentAccessToken()
        let (status, list, _) = try await server.request("GET", "/v1/water_logs/me/entries?pageSize=100", token: token)
        XCTAssertEqual(status, 200)
        let onServer = Set(
            ((list?["entries"] as? [[String: Any]]) ?? []).map {
                "\(JSONRead.string($0["id"]) ?? "") \(JSONRead.int($0["amountMl"]) ?? 0)"
            })
        XCTAssertEqual(onServer, expected)
    }
    /// A device that missed the newest writes heals first: what it pushes back is written
    /// at the restored server's time, but last write wins must still follow the writes'
    /// own stamps. An edit made after the backup must not be lost, and a deliberate
    /// delete must not be undone, because a stale device healed before the others.
    func testAStaleDeviceHealingFirstLosesNoEditAndUndoesNoDelete() async throws {
        try await healWithAStaleDevice(staleDeviceFirst: true)
    }

    /// The same, with the stale device healing last: the up-to-date devices give back the
    /// delete the restored server lacks, so the stale device's push-back of the entry loses.
    func testAStaleDeviceHealingLastUndoesNoDelete() async throws {
        try await healWithAStaleDevice(staleDeviceFirst: false)
    }

    private func healWithAStaleDevice(staleDeviceFirst: Bool) async throws {
        let server = try KitTestServer()
        let phone = try server.client("phone")
        let watch = try server.client("watch")
        let tablet = try server.client("tablet")
        let email = testEmail()
        try await phone.signUp(email: email, password: testPassword)
        try await watch.signIn(email: email, password: testPassword)
        try await tablet.signIn(email: email, password: testPassword)
        _ = try await phone.logWater(100, at: Date().addingTimeInterval(-9000))
        _ = try await phone.sync()

        // The backup holds neither G nor F.
        let snapshot = server.dataDir + "/older.sqlite"
        try backup(server, to: snapshot)

        // After the backup: G and F are logged and every device sees them ...
        let g = try await phone.logWater(600, at: Date().addingTimeInterval(-3600))
        let f = try await watch.logWater(200, at: Date().addingTimeInterval(-1800), source: .watch)
        for device in [phone, watch, tablet, phone] { _ = try await device.sync() }
        // ... then the phone edits G and the watch deletes F on purpose; the tablet is offline.
        var editedG = g
        editedG.amountMl = 700
        try await phone.save(editedG)
        try await watch.deleteEntry(id: f.id)
        for device in [phone, watch, phone] { _ = try await device.sync() }

        // The server is restored from the backup; the stale tablet syncs first.
        server.stop()
        let database = server.dataDir + "/suplash.sqlite"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
        try FileManager.default.moveItem(atPath: snapshot, toPath: database)
        try server.restart()
        let order = staleDeviceFirst ? [tablet, phone, watch] : [phone, watch, tablet]
        for device in order + order { _ = try await device.sync() }

        for (name, device) in [("phone", phone), ("watch", watch), ("tablet", tablet)] {
            let amounts = Dictionary(
                uniqueKeysWithValues: try await device.entries(from: .distantPast, to: .distantFuture)
                    .map { ($0.id, $0.amountMl) })
            XCTAssertEqual(amounts[g.id], 700, "\(name): the edit made after the backup is kept")
            XCTAssertNil(amounts[f.id], "\(name): the delete made after the backup stays done")
        }
        let token = try await phone.currentAccessToken()
        let (status, list, _) = try await server.request("GET", "/v1/water_logs/me/entries?pageSize=100", token: token)
        XCTAssertEqual(status, 200)
        let onServer = Dictionary(
            uniqueKeysWithValues: ((list?["entries"] as? [[String: Any]]) ?? []).map {
                (JSONRead.string($0["id"]) ?? "", JSONRead.int($0["amountMl"]) ?? 0)
            })
        XCTAssertEqual(onServer[g.id], 700, "the server holds the edit")
        XCTAssertNil(onServer[f.id], "the server keeps the delete")
    }
}
