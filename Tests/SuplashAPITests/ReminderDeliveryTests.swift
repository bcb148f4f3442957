import Foundation
import SuplashJSON
import XCTest

/// Reminders end to end (spec §9; docs/reminders.md, "Scheduler"): the real server, its
/// reminder scheduler on the wall clock and `apns.*` pointed at the mock APNs server
/// (scripts/with-apns-mock; skipped without it). The profile is set, then the devices
/// registered, so that a reminder is due at once: it reaches the phone as an alert, not the watch. A glass logged on the watch before
/// a later reminder is due cancels it. Waits on the mock's request log, never on a time.
final class ReminderDeliveryTests: XCTestCase {
    nonisolated(unsafe) static var server: TestServer?
    nonisolated(unsafe) static var requestLog = ""
    nonisolated(unsafe) static var bundleID = ""
    nonisolated(unsafe) static var startError: String?

    override class func setUp() {
        guard let mock = MockAPNs.running() else { return }
        requestLog = mock.requestLog
        bundleID = mock.bundleID
        do {
            server = try TestServer(
                environment: mock.environment.merging([
                    "SUPLASH_REMINDERS_POLL_INTERVAL_MS": "50", "SUPLASH_RATELIMIT_ENABLED": "false",
                    "SUPLASH_SECURITY_SEALING_KEY_FILE": TestServer.makeSealingKeyFile(),
                ]) { $1 })
        } catch {
            startError = "\(error)"
        }
    }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer {
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_APNS_MOCK"] != nil else {
            throw XCTSkip("SUPLASH_TEST_APNS_MOCK is not set (run under scripts/with-apns-mock)")
        }
        return try XCTUnwrap(Self.server, "server did not start: \(Self.startError ?? "mock.json unreadable")")
    }

    func newToken() -> String { "f" + (0..<31).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() + "f" }

    func register(_ s: TestServer, _ token: String, device: String, platform: String, alert: String) throws {
        let body: JSONValue = .object([
            ("platform", .string(platform)), ("bundleId", .string(Self.bundleID)), ("environment", "production"),
            ("tokens", .array([.object([("pushType", "alert"), ("token", .string(alert))])])),
        ])
        let r = try s.request("PUT", "/v1/users/me/devices/\(device)", json: body, token: token, headers: [("X-Device-ID", device)])
        XCTAssertEqual(r.status, 201, r.text)
    }

    func records(_ token: String) throws -> [JSONValue] {
        let text = (try? String(contentsOfFile: Self.requestLog, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").compactMap { line in
            let record = try JSONParser.parse(Array(line.utf8))
            guard record["event"]?.stringValue == "request", record["token"]?.stringValue == token else { return nil }
            return record
        }
    }

    func eventually(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: 120)
        while try !condition() {
            guard Date() < deadline else { return XCTFail("never happened: \(what)") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// The hours east of UTC of a zone whose local time now is between 12:00 and 13:00, and its
    /// `Etc/GMT±N` id (no daylight saving time): the test's waking day then never crosses
    /// midnight, whatever hour it runs at (in UTC, a run at 23:00 put a glass "an hour before the
    /// window opens" on the day before the reminder's).
    static let midday: (hours: Int, zone: String) = {
        let hours = 12 - Int(Date().timeIntervalSince1970) / 3600 % 24
        return (hours, hours == 0 ? "Etc/GMT" : hours > 0 ? "Etc/GMT-\(hours)" : "Etc/GMT+\(-hours)")
    }()

    /// `HH:MM` in `midday.zone`, `minutes` from now.
    func wall(_ minutes: Int) -> String {
        let t = Int(Date().timeIntervalSince1970 / 60) + Self.midday.hours * 60 + minutes
        let m = ((t % 1440) + 1440) % 1440
        return String(format: "%02d:%02d", m / 60, m % 60)
    }

    /// A user with a phone and a watch (each with an alert token) whose waking day in
    /// `midday.zone` started `awakeMinutes` ago: (server, token, phone token, watch token, watch id).
    func user(awakeMinutes: Int) throws -> (TestServer, String, String, String, String) {
        let s = try srv()
        let u = try s.signUp()
        let (phone, watch) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let (phoneToken, watchToken) = (newToken(), newToken())
        // The profile first: a reminder the sign-up's default profile made due has no device to
        // go to (cancelled); registering the phone plans the next one from this profile.
        let patch = try s.request(
            "PATCH", "/v1/users/me",
            json: [
                "timezone": .string(Self.midday.zone), "locale": "en-US", "wakeTime": .string(wall(-awakeMinutes)),
                "sleepTime": .string(wall(-awakeMinutes + 16 * 60)),
            ], token: u.token)
        XCTAssertEqual(patch.status, 200, patch.text)
        try register(s, u.token, device: phone, platform: "ios", alert: phoneToken)
        try register(s, u.token, device: watch, platform: "watchos", alert: watchToken)
        return (s, u.token, phoneToken, watchToken, watch)
    }

    func testADueReminderReachesThePhoneNotTheWatch() throws {
        // Awake for two hours with nothing logged: behind, so due at once.
        let (s, token, phoneToken, watchToken, _) = try user(awakeMinutes: 120)
        try eventually("the reminder reached the phone") { try !records(phoneToken).isEmpty }
        let push = try XCTUnwrap(try records(phoneToken).first)
        XCTAssertEqual(push["status"]?.int64Value, 200)
        XCTAssertEqual(push["pushType"]?.stringValue, "alert")
        XCTAssertEqual(push["priority"]?.stringValue, "10")
        XCTAssertEqual(push["topic"]?.stringValue, Self.bundleID)
        XCTAssertEqual(push["collapseId"]?.stringValue?.hasPrefix("suplash-reminder-"), true, push.serializedString())
        let expiration = try XCTUnwrap(push["expiration"]?.stringValue.flatMap { Int64($0) })
        let now = Int64(Date().timeIntervalSince1970)
        XCTAssertTrue((now + 60)...(now + 1800) ~= expiration, "about 30 minutes after due: \(expiration) vs \(now)")
        XCTAssertEqual(try records(watchToken).count, 0, "the watch gets the phone's alert from the system")
        let o = try XCTUnwrap(try s.request("GET", "/v1/users/me/reminders", token: token).json)
        let sent = o["recent"]?.arrayValue?.filter { $0["sentAt"] != nil } ?? []
        XCTAssertEqual(sent.count, 1, o.serializedString())
        XCTAssertEqual(sent.first?["kind"]?.stringValue, "hydration")
        XCTAssertNotEqual(o["next"]?["id"], sent.first?["id"], "the following reminder is planned")
        let metrics = try s.request("GET", "/metrics").text
        XCTAssertTrue(metrics.contains("suplash_reminders_total{event=\"sent\"}"), metrics)
    }

    func testAWatchGlassBeforeDueCancelsTheReminder() throws {
        // The waking window opens in an hour: the first reminder is due then.
        let (s, token, phoneToken, _, watch) = try user(awakeMinutes: -60)
        let before = try XCTUnwrap(try s.request("GET", "/v1/users/me/reminders", token: token).json)
        let pending = try XCTUnwrap(before["next"]?["id"]?.stringValue, before.serializedString())
        let r = try s.request(
            "POST", "/v1/water_logs/me/entries",
            json: ["amountMl": 3000, "loggedAt": .string(rfc3339(Date())), "source": "watch"], token: token,
            headers: [("X-Device-ID", watch)])
        XCTAssertEqual(r.status, 201, r.text)
        let after = try XCTUnwrap(try s.request("GET", "/v1/users/me/reminders", token: token).json)
        XCTAssertEqual(after["next"], .null, after.serializedString())
        XCTAssertEqual(
            after["recent"]?.arrayValue?.first { $0["id"]?.stringValue == pending }?["outcome"]?.stringValue, "cancelled")
        XCTAssertEqual(try records(phoneToken).count, 0)
    }
}
