import Foundation
import XCTest

@testable import SuplashKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

final class SyncEngineTests: XCTestCase {
    /// The acceptance scenario: phone and watch both offline, both write (new entries, and
    /// conflicting edits/deletes of shared ones), both reconnect, both converge to the
    /// server's state with nothing lost and nothing doubled.
    func testPhoneAndWatchOfflineWritesConverge() async throws {
        let server = try KitTestServer()
        let phone = try server.client("phone")
        let watch = try server.client("watch")
        let email = testEmail()
        try await phone.signUp(email: email, password: testPassword)
        try await watch.signIn(email: email, password: testPassword)
        XCTAssertNotEqual(phone.deviceID, watch.deviceID)

        // Two shared entries, known to both.
        let x = try await phone.logWater(400, at: Date().addingTimeInterval(-3600))
        let y = try await phone.logWater(300, at: Date().addingTimeInterval(-1800))
        _ = try await phone.sync()
        _ = try await watch.sync()
        let watchSeesShared = try await watch.entries(from: .distantPast, to: .distantFuture).map(\.id)
        XCTAssertEqual(Set(watchSeesShared), [x.id, y.id])

        // Outage: the server goes away; both keep writing.
        server.stop()
        let a = try await phone.logWater(250, source: .phone)
        let b = try await phone.logWater(330, source: .phone)
        var editedX = x
        editedX.amountMl = 500
        try await phone.save(editedX)  // phone edits X …
        try await Task.sleep(nanoseconds: 5_000_000)
        try await watch.deleteEntry(id: x.id)  // … the watch deletes it later: the delete wins
        var yByPhone = y
        yByPhone.amountMl = 350
        try await phone.save(yByPhone)
        try await Task.sleep(nanoseconds: 5_000_000)
        var yByWatch = y
        yByWatch.amountMl = 450
        try await watch.save(yByWatch)  // later clock: the watch's Y wins
        let c = try await watch.logWater(200, source: .watch)
        do {
            _ = try await phone.sync()
            XCTFail("sync must fail while the server is down")
        } catch SuplashError.offline {}
        let phonePending = try await phone.pendingCount()
        let watchPending = try await watch.pendingCount()
        XCTAssertEqual(phonePending, 4)
        XCTAssertEqual(watchPending, 3)
        // Offline writes are visible at once, marked pending.
        let phoneOffline = try await phone.entries(from: .distantPast, to: .distantFuture)
        XCTAssertEqual(phoneOffline.count, 4)
        XCTAssertTrue(phoneOffline.first(where: { $0.id == a.id })?.isPending ?? false)

        // Reconnect: both sync (twice, so each sees the other's pushes).
        try server.restart()
        let phoneReport = try await phone.sync()
        let watchReport = try await watch.sync()
        _ = try await phone.sync()
        XCTAssertEqual(phoneReport.applied, 4)
        XCTAssertEqual(watchReport.applied + watchReport.superseded, 3)

        let phoneFinal = try await phone.entries(from: .distantPast, to: .distantFuture)
        let watchFinal = try await watch.entries(from: .distantPast, to: .distantFuture)
        XCTAssertEqual(phoneFinal, watchFinal, "both devices converge to the same state")
        let byID = Dictionary(uniqueKeysWithValues: phoneFinal.map { ($0.id, $0) })
        XCTAssertEqual(Set(byID.keys), [a.id, b.id, c.id, y.id], "X deleted, nothing lost, nothing doubled")
        XCTAssertEqual(byID[y.id]?.amountMl, 450)
        XCTAssertEqual(byID[c.id]?.source, .watch)
        XCTAssertTrue(phoneFinal.allSatisfy { !$0.isPending })

        // The server agrees: the same entries, each once.
        let token = try await phone.currentAccessToken()
        let (status, list, _) = try await server.request("GET", "/v1/water_logs/me/entries?pageSize=100", token: token)
        XCTAssertEqual(status, 200)
        let serverEntries = (list?["entries"] as? [[String: Any]]) ?? []
        XCTAssertEqual(serverEntries.count, 4)
        let serverAmounts = Dictionary(
            uniqueKeysWithValues: serverEntries.map {
                (JSONRead.string($0["id"]) ?? "", JSONRead.int($0["amountMl"]) ?? 0)
            })
        XCTAssertEqual(serverAmounts, Dictionary(uniqueKeysWithValues: phoneFinal.map { ($0.id, $0.amountMl) }))
    }

    /// A kill between the outbox commit and the push: the write survives in SQLite and the
    /// next process pushes it. And a kill after the server applied a batch but before its
    /// answer was recorded: the batch goes again with the same Idempotency-Key and bytes,
    /// and nothing is doubled.
    func testKillBetweenOutboxCommitAndPushRecovers() async throws {
        let server = try KitTestServer()
        let credentials = MemoryCredentialStore()
        let path = server.dataDir + "/phone.sqlite"
        var first: SuplashClient? = try server.client("phone", credentials: credentials, databasePath: path)
        try await first?.signUp(email: testEmail(), password: testPassword)
        let e1 = try await first?.logWater(250)
        let e2 = try await first?.logWater(500)
        // "Crash": the process dies right after the commits (nothing pushed).
        first = nil

        let second = try server.client("phone", credentials: credentials, databasePath: path)
        let pendingAfterRestart = try await second.pendingCount()
        XCTAssertEqual(pendingAfterRestart, 2)
        // The batch is formed and sent, the server applies it, then the process dies before
        // recording the answer (the request is replayed here by hand).
        let batch = try await second.formBatchForTest()
        let token = try await second.currentAccessToken()
        let (status, body, _) = try await server.request(
            "POST", "/v1/sync", body: batch.body, token: token,
            headers: ["Idempotency-Key": batch.key, "X-Device-ID": second.deviceID])
        XCTAssertEqual(status, 200)
        XCTAssertEqual((body?["results"] as? [[String: Any]])?.count, 2)

        let third = try server.client("phone", credentials: credentials, databasePath: path)
        let report = try await third.sync()
        XCTAssertEqual(report.applied, 2)
        let pending = try await third.pendingCount()
        XCTAssertEqual(pending, 0)
        let (_, list, _) = try await server.request("GET", "/v1/water_logs/me/entries", token: token)
        let ids = ((list?["entries"] as? [[String: Any]]) ?? []).compactMap { JSONRead.string($0["id"]) }
        XCTAssertEqual(ids.sorted(), [e1?.id ?? "", e2?.id ?? ""].sorted(), "each write exactly once")
    }

    /// 410 `sync_token_expired` → a full snapshot replaces the local copy, and writes still
    /// in the outbox survive it (and are pushed afterwards).
    func testExpiredTokenRestartsFromSnapshotKeepingOutbox() async throws {
        let server = try KitTestServer(environment: [
            "SUPLASH_SYNC_TOMBSTONE_RETENTION_DAYS": "0",
            "SUPLASH_SYNC_MAINTENANCE_INTERVAL_SECONDS": "1",
        ])
        let phone = try server.client("phone")
        let watch = try server.client("watch")
        let email = testEmail()
        try await phone.signUp(email: email, password: testPassword)
        try await watch.signIn(email: email, password: testPassword)
        let e1 = try await phone.logWater(100)
        let e2 = try await phone.logWater(200)
        _ = try await phone.sync()
        _ = try await watch.sync()
        // The watch deletes e1; the purge job drops the tombstone: the phone's token is now
        // older than the purge horizon.
        try await watch.deleteEntry(id: e1.id)
        _ = try await watch.sync()
        try await Task.sleep(nanoseconds: 2_500_000_000)

        let e3 = try await phone.logWater(300)  // unsent
        let report = try await phone.pull()
        XCTAssertTrue(report.restartedFromSnapshot)
        let local = try await phone.entries(from: .distantPast, to: .distantFuture)
        XCTAssertEqual(Set(local.map(\.id)), [e2.id, e3.id], "deleted e1 gone, unsent e3 kept")
        XCTAssertTrue(local.first(where: { $0.id == e3.id })?.isPending ?? false)
        let pending = try await phone.pendingCount()
        XCTAssertEqual(pending, 1)
        let after = try await phone.sync()
        XCTAssertEqual(after.applied, 1)
        _ = try await watch.sync()
        let watchEntries = try await watch.entries(from: .distantPast, to: .distantFuture)
        XCTAssertEqual(Set(watchEntries.map(\.id)), [e2.id, e3.id])
    }

    /// `refresh_token_reused` (the refresh token was rotated elsewhere) ends the session
    /// cleanly: the credentials are removed, the error says so, local writes are kept.
    func testRefreshTokenReuseEndsSessionCleanly() async throws {
        let server = try KitTestServer()
        let credentials = MemoryCredentialStore()
        let client = try server.client("phone", credentials: credentials)
        try await client.signUp(email: testEmail(), password: testPassword)
        try await client.refreshSession()  // an ordinary rotation works
        _ = try await client.logWater(250)
        guard let stolen = try credentials.load()?.refreshToken else { return XCTFail("no session") }
        // Someone else rotates the same refresh token first.
        let (status, _, _) = try await server.request(
            "POST", "/v1/auth/refresh",
            body: "{\"refreshToken\":\"\(stolen)\"}")
        XCTAssertEqual(status, 200)
        do {
            try await client.refreshSession()
            XCTFail("the reuse must end the session")
        } catch SuplashError.sessionEnded(let code) {
            XCTAssertEqual(code, "refresh_token_reused")
        }
        let signedIn = await client.isSignedIn
        XCTAssertFalse(signedIn)
        XCTAssertNil(try credentials.load())
        let pending = try await client.pendingCount()
        XCTAssertEqual(pending, 1, "the unsent write is kept for the next sign-in")
        do {
            _ = try await client.sync()
            XCTFail("no session")
        } catch SuplashError.notSignedIn {}
    }

    /// An expired access token is refreshed on demand; concurrent requests share one refresh.
    func testExpiredAccessTokenIsRefreshedOnce() async throws {
        let server = try KitTestServer(environment: ["SUPLASH_AUTH_ACCESS_TOKEN_TTL_SECONDS": "1"])
        let credentials = MemoryCredentialStore()
        let client = try server.client("phone", credentials: credentials)
        try await client.signUp(email: testEmail(), password: testPassword)
        try await Task.sleep(nanoseconds: 1_200_000_000)
        _ = try await client.logWater(250)
        async let one = client.sync()
        async let two = client.get("/v1/water_logs/me/summary")
        _ = try await (one, two)
        let signedIn = await client.isSignedIn
        XCTAssertTrue(signedIn)
    }

    /// Long poll: a live client learns of another device's write without polling.
    func testLiveSyncPicksUpOtherDevicesWrites() async throws {
        let server = try KitTestServer()
        let phone = try server.client("phone")
        let watch = try server.client("watch")
        let email = testEmail()
        try await phone.signUp(email: email, password: testPassword)
        try await watch.signIn(email: email, password: testPassword)
        _ = try await phone.sync()
        await phone.startLiveSync(waitSeconds: 20)
        try await Task.sleep(nanoseconds: 300_000_000)
        let entry = try await watch.logWater(275, source: .watch)
        _ = try await watch.sync()
        var seen = false
        for _ in 0..<50 where !seen {
            try await Task.sleep(nanoseconds: 100_000_000)
            seen = try await phone.entry(id: entry.id) != nil
        }
        await phone.stopLiveSync()
        XCTAssertTrue(seen, "the long poll delivered the watch's entry")
    }

    func testLocalValidationAndRejectedMutationsAreSurfaced() async throws {
        let server = try KitTestServer()
        let client = try server.client("phone")
        try await client.signUp(email: testEmail(), password: testPassword)
        do {
            _ = try await client.logWater(0)
            XCTFail("0 ml is refused locally")
        } catch SuplashError.invalidArgument {}
        _ = try await client.logWater(250, at: Date().addingTimeInterval(3600))  // the server refuses the future
        let report = try await client.sync()
        XCTAssertEqual(report.rejected, 1)
        let rejected = try await client.rejectedMutations()
        XCTAssertEqual(rejected.first?.code, "validation_failed")
        let local = try await client.entries(from: .distantPast, to: .distantFuture)
        XCTAssertTrue(local.isEmpty, "a refused new entry leaves the local view")
    }

    func testTimestampsAndGzip() throws {
        XCTAssertEqual(Timestamp.format(millis: 0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(Timestamp.parse("2024-03-31T03:00:00+02:00"), Timestamp.parse("2024-03-31T01:00:00.000Z"))
        XCTAssertEqual(Timestamp.format(millis: Timestamp.parse("2026-11-29T08:15:00.123456Z") ?? 0), "2026-11-29T08:15:00.123Z")
        XCTAssertNil(Timestamp.parse("2026-13-29T08:15:00Z"))
        let gz = try Gzip.compress(Data(repeating: 0x41, count: 10_000))
        XCTAssertEqual(Array(gz.prefix(2)), [0x1F, 0x8B])
        XCTAssertLessThan(gz.count, 200)
    }

    func testCredentialsFileIsOwnerOnly() throws {
        let dir = NSTemporaryDirectory() + "suplash-cred-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = FileCredentialStore.default(environment: ["XDG_CONFIG_HOME": dir, "HOME": "/nonexistent"])
        XCTAssertEqual(store.path, dir + "/suplash/credentials.json")
        let session = Session(
            serverURL: URL(fileURLWithPath: "/"), userID: "u", accessToken: "a", refreshToken: "r",
            accessTokenExpiresAt: Date(timeIntervalSince1970: 1_700_000_000))
        try store.save(session)
        let mode = (try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? NSNumber)?.intValue
        XCTAssertEqual(mode, 0o600)
        XCTAssertEqual(try store.load(), session)
        try store.save(nil)
        XCTAssertNil(try store.load())
    }
}
