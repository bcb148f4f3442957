import Foundation
import SuplashJSON
import XCTest

/// A restored server tells devices their history changed (410 `sync_history_changed`,
/// spec §5), and a paged full snapshot lists live documents only (own servers).
final class SyncHistoryTests: XCTestCase {
    func entry(_ ml: Int) -> JSONValue { ["amountMl": .number(JSONNumber(ml)), "loggedAt": .string(rfc3339(Date()))] }

    func create(_ server: TestServer, _ token: String, _ ml: Int) throws -> String {
        let r = try server.request("POST", "/v1/water_logs/me/entries", json: entry(ml), token: token)
        XCTAssertEqual(r.status, 201, r.text)
        return try XCTUnwrap(r.json?["id"]?.stringValue)
    }

    func testPagedSnapshotListsNoTombstonesOnAnyPage() throws {
        let server = try TestServer()
        defer { server.stop() }
        let user = try server.signUp()
        var ids: [String] = []
        for ml in [100, 200, 300, 400, 500, 600] { ids.append(try create(server, user.token, ml)) }
        for id in [ids[1], ids[3]] {
            XCTAssertEqual(try server.request("DELETE", "/v1/water_logs/me/entries/\(id)", token: user.token).status, 204)
        }
        _ = try create(server, user.token, 700)
        var since: String?
        var changes: [JSONValue] = []
        var pages = 0
        repeat {
            let r = try server.request("GET", "/v1/sync?limit=1" + (since.map { "&since=\($0)" } ?? ""), token: user.token)
            XCTAssertEqual(r.status, 200, r.text)
            guard case .array(let page)? = r.json?["changes"] else { return XCTFail("no changes: \(r.text)") }
            changes += page
            since = r.json?["nextToken"]?.stringValue
            pages += 1
            if r.json?["hasMore"] != .bool(true) { break }
        } while pages < 50
        XCTAssertGreaterThan(pages, 3)
        XCTAssertEqual(changes.filter { $0["deleted"] == .bool(true) }.count, 0, "a snapshot lists no tombstones")
        let entries = changes.filter { $0["collection"]?.stringValue == "water_entries" }.compactMap { $0["id"]?.stringValue }
        XCTAssertEqual(entries.count, 5, "four live entries and the last one, each once")
        XCTAssertTrue(Set([ids[0], ids[2], ids[4], ids[5]]).isSubset(of: Set(entries)))
        XCTAssertFalse(entries.contains(ids[1]) || entries.contains(ids[3]))

        // The last page's token is incremental: a later delete shows as a tombstone.
        XCTAssertEqual(try server.request("DELETE", "/v1/water_logs/me/entries/\(ids[0])", token: user.token).status, 204)
        let next = try server.request("GET", "/v1/sync?since=\(try XCTUnwrap(since))", token: user.token)
        guard case .array(let later)? = next.json?["changes"] else { return XCTFail(next.text) }
        XCTAssertEqual(later.first?["deleted"], .bool(true), next.text)
    }

    /// A cold copy of the database (same database id) put back after more writes is refused
    /// behind the WAL position file; accepted by deleting that file, its id is forked, so
    /// every earlier token is 410 `sync_history_changed`. A snapshot made with `backup` is a
    /// fork of the history (a new database id): every earlier token is `sync_history_changed`.
    func testTokensAheadOfARestoredDatabaseAreHistoryChanged() throws {
        let secret = ["SUPLASH_AUTH_JWT_SECRET": String(repeating: "s", count: 64)]
        let first = try TestServer(environment: secret)
        let user = try first.signUp()
        _ = try create(first, user.token, 100)
        let (_, early) = try first.pullAll(token: user.token)
        XCTAssertEqual(first.stop(), 0)
        let database = first.dataDir + "/suplash.sqlite"
        let coldCopy = first.dataDir + "/cold-copy.sqlite"
        try FileManager.default.copyItem(atPath: database, toPath: coldCopy)

        let second = try TestServer(dataDir: first.dataDir, environment: secret)
        _ = try create(second, user.token, 200)
        let (_, late) = try second.pullAll(token: user.token)
        let backup = first.dataDir + "/forked.sqlite"
        let (status, _, err) = try TestServer.runCLI(["backup", "--to", backup, "--data-dir", first.dataDir])
        XCTAssertEqual(status, 0, err)
        XCTAssertEqual(second.stop(), 0)

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
        try FileManager.default.moveItem(atPath: coldCopy, toPath: database)
        // A copy that kept the database id is behind the WAL position file: refused until the
        // operator deletes that file on purpose (docs/operations.md "The WAL position file").
        XCTAssertThrowsError(try TestServer(dataDir: first.dataDir, environment: secret))
        try FileManager.default.removeItem(atPath: database + "-position")
        // Accepted so, its id is forked: no earlier token can resume in the reused positions.
        let restored = try TestServer(dataDir: first.dataDir, environment: secret)
        for token in [early, late] {
            let r = try restored.request("GET", "/v1/sync?since=\(token)", token: user.token)
            XCTAssertEqual(r.status, 410)
            XCTAssertEqual(r.json?["code"]?.stringValue, "sync_history_changed")
        }
        XCTAssertEqual(restored.stop(), 0)

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
        try FileManager.default.moveItem(atPath: backup, toPath: database)
        // A backup's forked id: the position file (which names the copy's id) is not compared.
        let fromBackup = try TestServer(dataDir: first.dataDir, environment: secret)
        defer { fromBackup.stop() }
        for token in [early, late] {
            let r = try fromBackup.request("GET", "/v1/sync?since=\(token)", token: user.token)
            XCTAssertEqual(r.status, 410)
            XCTAssertEqual(r.json?["code"]?.stringValue, "sync_history_changed")
        }
        let (snapshot, _) = try fromBackup.pullAll(token: user.token)
        XCTAssertEqual(
            snapshot.filter { $0["collection"]?.stringValue == "water_entries" }.count, 2,
            "the backup holds both entries")
    }
    /// A database accepted behind its WAL position file (the operator deleted the file, as
    /// told, after a damaged WAL or a cold copy) reuses the change positions of the lost
    /// commits. A device whose token came from the lost history must be told its history
    /// changed even after new writes took those positions — else it resumes past them and
    /// never sees the new writes, nor pushes back what the server lost.
    func testADatabaseAcceptedBehindItsPositionFileForksItsHistory() throws {
        let secret = ["SUPLASH_AUTH_JWT_SECRET": String(repeating: "s", count: 64)]
        let first = try TestServer(environment: secret)
        let user = try first.signUp()
        _ = try create(first, user.token, 100)
        XCTAssertEqual(first.stop(), 0)
        let database = first.dataDir + "/suplash.sqlite"
        let coldCopy = first.dataDir + "/cold-copy.sqlite"
        try FileManager.default.copyItem(atPath: database, toPath: coldCopy)

        let second = try TestServer(dataDir: first.dataDir, environment: secret)
        _ = try create(second, user.token, 200)
        let (_, late) = try second.pullAll(token: user.token)
        XCTAssertEqual(second.stop(), 0)

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
        try FileManager.default.moveItem(atPath: coldCopy, toPath: database)
        XCTAssertThrowsError(try TestServer(dataDir: first.dataDir, environment: secret))
        try FileManager.default.removeItem(atPath: database + "-position")
        let restored = try TestServer(dataDir: first.dataDir, environment: secret)
        defer { restored.stop() }
        // Another device writes first: its entry takes the position the lost entry had.
        let newer = try create(restored, user.token, 300)
        let r = try restored.request("GET", "/v1/sync?since=\(late)", token: user.token)
        let seen = (r.json?["changes"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
        XCTAssertEqual(r.status, 410, "a token from the lost history resumed past \(newer): it sees \(seen)")
        XCTAssertEqual(r.json?["code"]?.stringValue, "sync_history_changed")
    }
}
