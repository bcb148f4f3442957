import Foundation
import SuplashJSON
import XCTest

/// Push delivery end to end (spec §9; docs/push.md): the real server with `apns.*` pointed at
/// the mock APNs server (Tests/Mocks/apns_mock.py, started by scripts/with-apns-mock, which
/// exports SUPLASH_TEST_APNS_MOCK; skipped without it). Waits on the mock's request log and the
/// server's queue depth, never on a time.
final class PushDeliveryTests: XCTestCase {
    nonisolated(unsafe) static var server: TestServer?
    nonisolated(unsafe) static var wakeServer: TestServer?
    nonisolated(unsafe) static var requestLog = ""
    nonisolated(unsafe) static var bundleID = ""
    nonisolated(unsafe) static var startError: String?

    override class func setUp() {
        guard let mock = MockAPNs.running() else { return }
        requestLog = mock.requestLog
        bundleID = mock.bundleID
        let environment = mock.environment.merging([
            "SUPLASH_APNS_BACKGROUND_WINDOW_SECONDS": "10", "SUPLASH_RATELIMIT_ENABLED": "false",
            "SUPLASH_SECURITY_SEALING_KEY_FILE": TestServer.makeSealingKeyFile(),
            // Reminder alerts are ReminderDeliveryTests' subject, not these tests'.
            "SUPLASH_REMINDERS_SCHEDULER_ENABLED": "false",
        ]) { $1 }
        do {
            server = try TestServer(environment: environment)
            // Polling once an hour: only the wake-up after a commit can send within a test.
            wakeServer = try TestServer(
                environment: environment.merging([
                    "SUPLASH_APNS_POLL_INTERVAL_MS": "3600000", "SUPLASH_APNS_BACKGROUND_WINDOW_SECONDS": "0",
                ]) { $1 })
        } catch {
            startError = "\(error)"
        }
    }

    override class func tearDown() {
        server?.stop()
        server = nil
        wakeServer?.stop()
        wakeServer = nil
    }

    func srv() throws -> TestServer {
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_APNS_MOCK"] != nil else {
            throw XCTSkip("SUPLASH_TEST_APNS_MOCK is not set (run under scripts/with-apns-mock)")
        }
        return try XCTUnwrap(Self.server, "server did not start: \(Self.startError ?? "mock.json unreadable")")
    }

    /// A random 32-byte token as hex, starting with `f` (the mock scripts answers by prefixes
    /// starting with 0 and 1).
    func newToken() -> String { "f" + (0..<31).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() + "f" }

    func register(
        _ s: TestServer, _ token: String, device: String, platform: String, _ tokens: [(String, String)]
    ) throws {
        let body: JSONValue = .object([
            ("platform", .string(platform)), ("bundleId", .string(Self.bundleID)), ("environment", "production"),
            ("tokens", .array(tokens.map { .object([("pushType", .string($0.0)), ("token", .string($0.1))]) })),
        ])
        let r = try s.request("PUT", "/v1/users/me/devices/\(device)", json: body, token: token, headers: [("X-Device-ID", device)])
        XCTAssertEqual(r.status, 201, r.text)
    }

    /// One water entry pushed through `POST /v1/sync` by `device`.
    func postEntry(_ s: TestServer, _ token: String, device: String) throws {
        let now = rfc3339(Date())
        let results = try s.push(
            token: token,
            [
                [
                    "collection": "water_entries", "id": .string(UUID().uuidString.lowercased()), "op": "upsert",
                    "data": ["amountMl": 250, "loggedAt": .string(now)], "clientUpdatedAt": .string(now),
                ]
            ],
            device: device)
        XCTAssertEqual(results.first?["status"]?.stringValue, "applied")
    }

    /// The mock's answered requests to `token`.
    func records(_ token: String) throws -> [JSONValue] {
        let text = (try? String(contentsOfFile: Self.requestLog, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").compactMap { line in
            let record = try JSONParser.parse(Array(line.utf8))
            guard record["event"]?.stringValue == "request", record["token"]?.stringValue == token else { return nil }
            return record
        }
    }

    /// The server's `suplash_push_queue_depth`.
    func queueDepth(_ s: TestServer) throws -> Int? {
        let text = try s.request("GET", "/metrics").text
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("suplash_push_queue_depth ") }) else { return nil }
        return Double(line.split(separator: " ").last ?? "").map { Int($0) }
    }

    /// Waits until `condition` holds (a generous bound only against a hang; nothing is timed).
    func eventually(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: 120)
        while try !condition() {
            guard Date() < deadline else { return XCTFail("never happened: \(what)") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// A new user with a phone (alert and background sharing one token) and a watch
    /// (background) registered: (server, access token, phone id, phone token, watch token).
    func phoneAndWatch(on server: TestServer? = nil) throws -> (TestServer, String, String, String, String) {
        let s = try server ?? srv()
        let u = try s.signUp()
        let (phone, watch) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let (phoneToken, watchToken) = (newToken(), newToken())
        try register(s, u.token, device: phone, platform: "ios", [("alert", phoneToken), ("background", phoneToken)])
        try register(s, u.token, device: watch, platform: "watchos", [("background", watchToken)])
        return (s, u.token, phone, phoneToken, watchToken)
    }

    func testAnEntryFromThePhoneReachesTheWatchOnly() throws {
        let (s, token, phone, phoneToken, watchToken) = try phoneAndWatch()
        XCTAssertEqual(try s.request("GET", "/readyz").json?["push"]?.stringValue, "sending")

        try postEntry(s, token, device: phone)
        try eventually("the watch's push reached the mock") { try !records(watchToken).isEmpty }
        try eventually("the push outbox drained") { try queueDepth(s) == 0 }
        let watchPushes = try records(watchToken)
        XCTAssertEqual(watchPushes.count, 1)
        XCTAssertEqual(watchPushes.first?["status"]?.int64Value, 200)
        XCTAssertEqual(watchPushes.first?["pushType"]?.stringValue, "background")
        XCTAssertEqual(watchPushes.first?["priority"]?.stringValue, "5")
        XCTAssertEqual(watchPushes.first?["collapseId"]?.stringValue, "suplash-sync")
        XCTAssertEqual(try records(phoneToken).count, 0, "the writer's device gets no push")
        XCTAssertTrue(try s.request("GET", "/metrics").text.contains("suplash_push_sent_total{push_type=\"background\"}"))
    }

    /// The same through the REST route: `POST /v1/water_logs/me/entries` with the phone's
    /// `X-Device-ID` pushes to the watch only.
    func testARESTEntryFromThePhoneReachesTheWatchOnly() throws {
        let (s, token, phone, phoneToken, watchToken) = try phoneAndWatch()
        let r = try s.request(
            "POST", "/v1/water_logs/me/entries", json: ["amountMl": 250, "loggedAt": .string(rfc3339(Date()))], token: token,
            headers: [("X-Device-ID", phone)])
        XCTAssertEqual(r.status, 201, r.text)
        try eventually("the watch's push reached the mock") { try !records(watchToken).isEmpty }
        try eventually("the push outbox drained") { try queueDepth(s) == 0 }
        XCTAssertEqual(try records(watchToken).count, 1)
        XCTAssertEqual(try records(phoneToken).count, 0, "the writer's device gets no push")
    }

    func testABurstOfTwentyEntriesIsCoalesced() throws {
        let (s, token, phone, phoneToken, watchToken) = try phoneAndWatch()
        for _ in 0..<20 { try postEntry(s, token, device: phone) }
        try eventually("the watch's first push reached the mock") { try !records(watchToken).isEmpty }
        // The trailing push, if any, waits for the window (10 s here); the queue then drains.
        try eventually("the push outbox drained") { try queueDepth(s) == 0 }
        let pushes = try records(watchToken).count
        XCTAssertTrue((1...2).contains(pushes), "the leading push plus at most one trailing push, got \(pushes)")
        XCTAssertEqual(try records(phoneToken).count, 0)
    }
}

extension PushDeliveryTests {
    /// A commit that queued pushes wakes the sender: on a server that polls once an hour the
    /// second entry's push (the first may meet the start-up claim) still reaches the watch.
    func testACommitWakesTheSenderBeforeItsPoll() throws {
        _ = try srv()
        let wakeServer = try XCTUnwrap(Self.wakeServer)
        let (s, token, phone, _, watchToken) = try phoneAndWatch(on: wakeServer)
        try postEntry(s, token, device: phone)
        try eventually("the first push reached the mock") { try records(watchToken).count == 1 }
        try eventually("the push outbox drained") { try queueDepth(s) == 0 }
        try postEntry(s, token, device: phone)
        try eventually("the second push reached the mock") { try records(watchToken).count == 2 }
    }

    /// A glass from the phone moves today's progress by ≥ 5 % of the goal: the iPad's widget
    /// gets a `content-changed` push.
    func testProgressReloadsTheOtherDevicesWidgets() throws {
        let (s, token, phone, _, _) = try phoneAndWatch()
        let (ipad, widgets) = (UUID().uuidString.lowercased(), newToken())
        try register(s, token, device: ipad, platform: "ipados", [("widgets", widgets)])
        try postEntry(s, token, device: phone)
        try eventually("the iPad's widget push reached the mock") { try !records(widgets).isEmpty }
        try eventually("the push outbox drained") { try queueDepth(s) == 0 }
        let pushes = try records(widgets)
        XCTAssertEqual(pushes.count, 1)
        XCTAssertEqual(pushes.first?["pushType"]?.stringValue, "widgets")
        XCTAssertEqual(pushes.first?["topic"]?.stringValue, Self.bundleID + ".push-type.widgets")
        XCTAssertEqual(pushes.first?["status"]?.int64Value, 200)
    }

    /// APNs answers `Unregistered` (the mock's `0410` tokens): the device loses that token (alert
    /// and background share it), the row is given up, the registry keeps the device.
    func testUnregisteredDropsTheToken() throws {
        let s = try srv()
        let u = try s.signUp()
        let (phone, watch) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let stale = "0410" + String(newToken().dropFirst(4))
        try register(s, u.token, device: phone, platform: "ios", [("alert", newToken())])
        try register(s, u.token, device: watch, platform: "watchos", [("alert", stale), ("background", stale)])
        try postEntry(s, u.token, device: phone)
        try eventually("the watch's token was dropped") {
            try s.request("GET", "/v1/users/me/devices/\(watch)", token: u.token).json?["pushTypes"]?.arrayValue == []
        }
        XCTAssertEqual(try records(stale).first?["reason"]?.stringValue, "Unregistered")
        XCTAssertTrue(try s.request("GET", "/metrics").text.contains("suplash_push_failed_total{reason=\"Unregistered\"}"))
    }
}

/// A provider key APNs refuses (here a key id the mock does not know: `InvalidProviderToken`)
/// pauses the sender: `/readyz` stays 200 and says so, the metric shows it, the row is kept.
final class PushPausedTests: XCTestCase {
    func testConfigurationErrorPausesAndKeepsTheRows() throws {
        guard let dir = ProcessInfo.processInfo.environment["SUPLASH_TEST_APNS_MOCK"], !dir.isEmpty else {
            throw XCTSkip("SUPLASH_TEST_APNS_MOCK is not set (run under scripts/with-apns-mock)")
        }
        let info = try JSONParser.parse(Array(try XCTUnwrap(FileManager.default.contents(atPath: dir + "/mock.json"))))
        let bundle = try XCTUnwrap(info["bundleIds"]?.arrayValue?.first?.stringValue)
        let s = try TestServer(environment: [
            "SUPLASH_APNS_KEY_FILE": try XCTUnwrap(info["keyFile"]?.stringValue), "SUPLASH_APNS_KEY_ID": "WRONGKEY00",
            "SUPLASH_APNS_TEAM_ID": try XCTUnwrap(info["teamId"]?.stringValue),
            "SUPLASH_APNS_PRODUCTION_URL": "https://127.0.0.1:\(try XCTUnwrap(info["productionPort"]?.int64Value))",
            "SUPLASH_APNS_SANDBOX_URL": "https://localhost:\(try XCTUnwrap(info["sandboxPort"]?.int64Value))",
            "SUPLASH_APNS_CA_FILE": try XCTUnwrap(info["caFile"]?.stringValue), "SUPLASH_APNS_BUNDLE_IDS": bundle,
            "SUPLASH_APNS_POLL_INTERVAL_MS": "50", "SUPLASH_SECURITY_SEALING_KEY_FILE": TestServer.makeSealingKeyFile(),
            "SUPLASH_REMINDERS_SCHEDULER_ENABLED": "false",
        ])
        defer { s.stop() }
        let u = try s.signUp()
        let (phone, watch) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        for (device, platform) in [(phone, "ios"), (watch, "watchos")] {
            let body: JSONValue = .object([
                ("platform", .string(platform)), ("bundleId", .string(bundle)), ("environment", "production"),
                ("tokens", .array([.object([("pushType", "background"), ("token", .string("f" + String(repeating: "e", count: 62) + "f"))])])),
            ])
            // The same token on both: the second registration takes it; the phone keeps none.
            _ = try s.request("PUT", "/v1/users/me/devices/\(device)", json: body, token: u.token, headers: [("X-Device-ID", device)])
        }
        _ = try s.push(
            token: u.token,
            [
                [
                    "collection": "water_entries", "id": .string(UUID().uuidString.lowercased()), "op": "upsert",
                    "data": ["amountMl": 250, "loggedAt": .string(rfc3339(Date()))], "clientUpdatedAt": .string(rfc3339(Date())),
                ]
            ], device: phone)
        let deadline = Date(timeIntervalSinceNow: 120)
        var ready = try s.request("GET", "/readyz")
        while ready.json?["push"]?.stringValue?.hasPrefix("paused:") != true && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            ready = try s.request("GET", "/readyz")
        }
        XCTAssertEqual(ready.status, 200)
        XCTAssertEqual(ready.json?["push"]?.stringValue?.hasPrefix("paused: InvalidProviderToken"), true, ready.text)
        let metrics = try s.request("GET", "/metrics").text
        XCTAssertTrue(metrics.contains("suplash_push_paused 1.0\n"), metrics)
        XCTAssertTrue(metrics.contains("suplash_push_queue_depth 1.0\n"), "the row is kept")
        XCTAssertEqual(
            try s.request("GET", "/v1/users/me/devices/\(watch)", token: u.token).json?["pushTypes"]?.arrayValue, ["background"],
            "a configuration error never drops a token")
    }
}

/// Without `apns.keyFile` devices register, nothing is sent and `/readyz` stays 200 and says so.
final class PushOffTests: XCTestCase {
    func testNoKeyMeansReadyAndOff() throws {
        let s = try TestServer(environment: ["SUPLASH_SECURITY_SEALING_KEY_FILE": TestServer.makeSealingKeyFile()])
        defer { s.stop() }
        let ready = try s.request("GET", "/readyz")
        XCTAssertEqual(ready.status, 200)
        XCTAssertEqual(ready.json?["push"]?.stringValue.map { $0.hasPrefix("off:") }, true, ready.text)
        let u = try s.signUp()
        let device = UUID().uuidString.lowercased()
        let body: JSONValue = .object([
            ("platform", "ios"), ("bundleId", "app.suplash.ios"), ("environment", "production"),
            ("tokens", .array([.object([("pushType", "background"), ("token", .string(String(repeating: "ab", count: 32)))])])),
        ])
        XCTAssertEqual(try s.request("PUT", "/v1/users/me/devices/\(device)", json: body, token: u.token).status, 201)
        _ = try s.push(
            token: u.token,
            [
                [
                    "collection": "water_entries", "id": .string(UUID().uuidString.lowercased()), "op": "upsert",
                    "data": ["amountMl": 250, "loggedAt": .string(rfc3339(Date()))], "clientUpdatedAt": .string(rfc3339(Date())),
                ]
            ])
        // Queued (one row per device at most) and never sent.
        let metrics = try s.request("GET", "/metrics").text
        XCTAssertTrue(metrics.contains("suplash_push_queue_depth 1.0\n"), metrics)
        XCTAssertFalse(metrics.contains("suplash_push_sent_total{"))
    }
}
