import Foundation
import SuplashDomain
import SuplashJSON
import XCTest

/// The reminder routes against the real server on SQLite (spec §9 "Reminders"): the next
/// reminder and the history, `:drink` once however often it is sent, `:snooze`, `:dismiss`,
/// `:open`, their problems, admin-key access and the export.
final class ReminderRoutesTests: XCTestCase {
    nonisolated(unsafe) static var server: TestServer?

    override class func setUp() {
        server = try? TestServer()
    }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer { try XCTUnwrap(Self.server, "server did not start") }

    nonisolated(unsafe) static var admin: String?

    /// One admin key for the class (a running server picks up a new key at most so often).
    func adminKey(_ s: TestServer) throws -> String {
        if let key = Self.admin { return key }
        let (status, key, _) = try TestServer.runCLI([
            "admin-key", "create", "--name", "reminders-\(UUID().uuidString.prefix(6))", "--data-dir", s.dataDir,
        ])
        XCTAssertEqual(status, 0)
        Self.admin = key.trimmingCharacters(in: .whitespacesAndNewlines)
        return try XCTUnwrap(Self.admin)
    }

    func overview(_ s: TestServer, _ uid: String = "me", token: String) throws -> JSONValue {
        let r = try s.request("GET", "/v1/users/\(uid)/reminders", token: token)
        XCTAssertEqual(r.status, 200, r.text)
        return try XCTUnwrap(r.json)
    }

    func act(_ s: TestServer, _ id: String, _ verb: String, _ json: JSONValue? = nil, token: String, uid: String = "me") throws
        -> TestResponse
    {
        try s.request("POST", "/v1/users/\(uid)/reminders/\(id):\(verb)", json: json, token: token)
    }

    /// Signs up a user whose zone puts the current time between 10:00 and 11:00 (`Etc/GMT±N`:
    /// no daylight saving time), so the waking window (07:00–23:00) has room for every reminder
    /// the test plans at whatever hour it runs (in the default `Europe/Istanbul` an evening run
    /// planned past bedtime).
    func signUpMidMorning(_ s: TestServer) throws -> (id: String, token: String) {
        let u = try s.signUp()
        var offset = 10 - Int(Date().timeIntervalSince1970) / 3600 % 24
        if offset < -12 { offset += 24 }
        let zone = offset == 0 ? "Etc/GMT" : offset > 0 ? "Etc/GMT-\(offset)" : "Etc/GMT+\(-offset)"
        let r = try s.request("PATCH", "/v1/users/me", json: ["timezone": .string(zone)], token: u.token)
        XCTAssertEqual(r.status, 200, r.text)
        return (u.id, u.token)
    }

    func testDrinkLogsOnceAndTheHistoryShowsIt() throws {
        let s = try srv()
        let u = try signUpMidMorning(s)
        // Sign-up (and the zone's change) planned the first hydration reminder.
        let first = try overview(s, token: u.token)
        let next = try XCTUnwrap(first["next"].flatMap { $0.isNull ? nil : $0 }, first.serializedString())
        let id = try XCTUnwrap(next["id"]?.stringValue)
        let suggested = try XCTUnwrap(next["suggestedAmountMl"]?.int64Value)
        XCTAssertNotNil(next["dueAt"]?.stringValue.flatMap(RFC3339.parse))
        XCTAssertEqual(first["recent"]?.arrayValue?.first?["outcome"]?.stringValue, "pending")

        let drunk = try act(s, id.uppercased(), "drink", token: u.token)
        XCTAssertEqual(drunk.status, 201, drunk.text)
        XCTAssertEqual(drunk.json?["id"]?.stringValue, id)
        XCTAssertEqual(drunk.json?["source"]?.stringValue, "notification")
        XCTAssertEqual(drunk.json?["amountMl"]?.int64Value, suggested)
        // A repeat (another amount, no body) answers the same entry.
        let again = try act(s, id, "drink", ["amountMl": 500], token: u.token)
        XCTAssertEqual(again.status, 200, again.text)
        XCTAssertEqual(again.json?["amountMl"]?.int64Value, suggested)
        XCTAssertEqual(again.json?["loggedAt"], drunk.json?["loggedAt"])
        let entries = try s.request("GET", "/v1/water_logs/me/entries", token: u.token)
        XCTAssertEqual(entries.json?["entries"]?.arrayValue?.count, 1, entries.text)

        let after = try overview(s, token: u.token)
        let recent = after["recent"]?.arrayValue ?? []
        let record = try XCTUnwrap(recent.first { $0["id"]?.stringValue == id })
        XCTAssertEqual(record["outcome"]?.stringValue, "acted")
        XCTAssertEqual(record["kind"]?.stringValue, "hydration")
        XCTAssertNil(record["sentAt"], "never sent")
        XCTAssertNotEqual(after["next"]?["id"]?.stringValue, id, "the next one is planned after the glass")

        // The entry deleted: the reminder cannot log it again.
        XCTAssertEqual(try s.request("DELETE", "/v1/water_logs/me/entries/\(id)", token: u.token).status, 204)
        let gone = try act(s, id, "drink", token: u.token)
        XCTAssertEqual(gone.status, 409)
        XCTAssertEqual(gone.json?["code"]?.stringValue, "reminder_entry_deleted")

        // `/metrics` counts the action rate's numerator (this instance, since start).
        let metrics = try s.request("GET", "/metrics").text
        let acted = metrics.split(separator: "\n").first { $0.hasPrefix("suplash_reminders_total{event=\"acted\"}") }
        XCTAssertGreaterThanOrEqual(Double(acted?.split(separator: " ").last ?? "") ?? 0, 1, metrics)

        let export = try s.request("GET", "/v1/users/me/export", token: u.token)
        let exported = export.json?["reminders"]?.arrayValue ?? []
        XCTAssertTrue(exported.contains { $0["id"]?.stringValue == id && $0["outcome"]?.stringValue == "acted" }, export.text)
    }

    func testSnoozeDismissOpenAndProblems() throws {
        let s = try srv()
        let u = try signUpMidMorning(s)
        let id = try XCTUnwrap(try overview(s, token: u.token)["next"]?["id"]?.stringValue)
        for (body, pointer, code) in [
            (JSONValue.object([("minutes", 5)]), "/minutes", "out_of_range"),
            (["minutes": 121], "/minutes", "out_of_range"),
            (["minutes": 30.5], "/minutes", "invalid_type"),
            (["minutes": .null], "/minutes", "invalid_type"),
            (["minute": 30], "/minute", "unknown_field"),
        ] {
            let r = try act(s, id, "snooze", body, token: u.token)
            XCTAssertEqual(r.status, 422, r.text)
            XCTAssertEqual(r.json?["code"]?.stringValue, "validation_failed")
            XCTAssertEqual(r.json?["errors"]?.arrayValue?.first?["pointer"]?.stringValue, pointer, r.text)
            XCTAssertEqual(r.json?["errors"]?.arrayValue?.first?["code"]?.stringValue, code, r.text)
        }
        let badDrink = try act(s, id, "drink", ["amountMl": 0], token: u.token)
        XCTAssertEqual(badDrink.json?["errors"]?.arrayValue?.first?["code"]?.stringValue, "out_of_range", badDrink.text)
        XCTAssertEqual(try act(s, id, "dismiss", ["why": "x"], token: u.token).status, 422)
        XCTAssertEqual(try act(s, id, "drink", .array([]), token: u.token).status, 422)

        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let snoozed = try act(s, id, "snooze", ["minutes": 45], token: u.token)
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        XCTAssertEqual(snoozed.status, 200, snoozed.text)
        let due = try XCTUnwrap(snoozed.json?["dueAt"]?.stringValue.flatMap(RFC3339.parse))
        XCTAssertTrue((before + 45 * 60_000)...(after + 45 * 60_000) ~= due, snoozed.text)
        let newID = try XCTUnwrap(snoozed.json?["id"]?.stringValue)
        XCTAssertNotEqual(newID, id)
        let o = try overview(s, token: u.token)
        XCTAssertEqual(o["next"]?["id"]?.stringValue, newID)
        XCTAssertEqual(o["recent"]?.arrayValue?.first { $0["id"]?.stringValue == id }?["outcome"]?.stringValue, "snoozed")
        // Default 30 minutes with no body.
        let twice = try act(s, newID, "snooze", token: u.token)
        XCTAssertEqual(twice.status, 200, twice.text)

        // :dismiss / :open record the first outcome; later ones keep it.
        let third = try XCTUnwrap(twice.json?["id"]?.stringValue)
        let thirdDue = try XCTUnwrap(twice.json?["dueAt"]?.stringValue.flatMap(RFC3339.parse))
        XCTAssertEqual(try act(s, third, "dismiss", token: u.token).status, 204)
        // Dismissed before it was sent: it counts as seen, and the next keeps the gap after it.
        let afterDismiss = try overview(s, token: u.token)
        let nextDue = try XCTUnwrap(afterDismiss["next"]?["dueAt"]?.stringValue.flatMap(RFC3339.parse), afterDismiss.serializedString())
        XCTAssertGreaterThanOrEqual(nextDue, thirdDue + 90 * 60_000)
        XCTAssertNotNil(afterDismiss["recent"]?.arrayValue?.first { $0["id"]?.stringValue == third }?["sentAt"])
        XCTAssertEqual(try act(s, third, "open", .object([]), token: u.token).status, 204)
        XCTAssertEqual(
            try overview(s, token: u.token)["recent"]?.arrayValue?.first { $0["id"]?.stringValue == third }?["outcome"]?.stringValue,
            "dismissed")

        // Not the caller's, malformed, unknown: 404; another action: route_not_found.
        let other = try s.signUp()
        let notMine = try act(s, id, "open", token: other.token)
        XCTAssertEqual(notMine.status, 404)
        XCTAssertEqual(notMine.json?["code"]?.stringValue, "not_found")
        XCTAssertEqual(try act(s, "nope", "open", token: u.token).status, 404)
        XCTAssertEqual(try act(s, UUID().uuidString, "drink", token: u.token).status, 404)
        let verb = try act(s, id, "water", token: u.token)
        XCTAssertEqual(verb.status, 404)
        XCTAssertEqual(verb.json?["code"]?.stringValue, "route_not_found")
        XCTAssertEqual(try s.request("GET", "/v1/users/\(u.id)/reminders", token: other.token).status, 403)

        // An admin key reads and acts for any user.
        let admin = try adminKey(s)
        let viaAdmin = try overview(s, u.id, token: admin)
        XCTAssertEqual(viaAdmin["recent"]?.arrayValue?.count, try overview(s, token: u.token)["recent"]?.arrayValue?.count)
        XCTAssertEqual(try act(s, third, "open", token: admin, uid: u.id).status, 204)
    }

    /// A sync push recomputes once for all its mutations: a glass meeting the goal, pushed from
    /// the watch, cancels the pending reminder; a bill pushed with it gets its reminder.
    func testASyncPushRecomputes() throws {
        let s = try srv()
        let u = try signUpMidMorning(s)
        let pending = try XCTUnwrap(try overview(s, token: u.token)["next"]?["id"]?.stringValue)
        let now = rfc3339(Date())
        let watch = UUID().uuidString.lowercased()
        let r = try s.request(
            "POST", "/v1/sync",
            json: .object([
                (
                    "mutations",
                    .array([
                        .object([
                            ("collection", "water_entries"), ("id", .string(UUID().uuidString.lowercased())), ("op", "upsert"),
                            ("data", .object([("amountMl", 5000), ("loggedAt", .string(now)), ("source", "watch")])),
                            ("clientUpdatedAt", .string(now)),
                        ])
                    ])
                )
            ]), token: u.token, headers: [("X-Device-ID", watch)])
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertEqual(r.json?["results"]?.arrayValue?.first?["status"]?.stringValue, "applied", r.text)
        let after = try overview(s, token: u.token)
        XCTAssertEqual(after["next"], .null, after.serializedString())
        XCTAssertEqual(
            after["recent"]?.arrayValue?.first { $0["id"]?.stringValue == pending }?["outcome"]?.stringValue, "cancelled")
    }

    /// `POST /v1/admin/notifications` (spec §8): admin keys only, strict validation, 202 with
    /// the id, then its counts.
    func testCampaignRoutes() throws {
        let s = try srv()
        let u = try s.signUp()
        let admin = try adminKey(s)
        let body: JSONValue = ["segment": "morning", "texts": ["tr": "Serin kal", "en": "Stay cool"]]
        XCTAssertEqual(try s.request("POST", "/v1/admin/notifications", json: body, token: u.token).status, 403)
        for (bad, pointer, code) in [
            (JSONValue.object([("segment", "night"), ("texts", ["en": "x"])]), "/segment", "invalid_format"),
            (["segment": "all"], "/texts", "required"),
            (["segment": "all", "texts": [:]], "/texts", "required"),
            (["segment": "all", "texts": ["EN": "x"]], "/texts/EN", "invalid_format"),
            (["segment": "all", "texts": ["en": 5]], "/texts/en", "invalid_type"),
            (["segment": "all", "texts": ["en": .string(String(repeating: "x", count: 241))]], "/texts/en", "too_long"),
            (["segment": "all", "texts": ["en": "x"], "sendAt": "tomorrow"], "/sendAt", "invalid_format"),
            (["segment": "all", "texts": ["en": "x"], "when": "now"], "/when", "unknown_field"),
        ] {
            let r = try s.request("POST", "/v1/admin/notifications", json: bad, token: admin)
            XCTAssertEqual(r.status, 422, r.text)
            XCTAssertEqual(r.json?["errors"]?.arrayValue?.first?["pointer"]?.stringValue, pointer, r.text)
            XCTAssertEqual(r.json?["errors"]?.arrayValue?.first?["code"]?.stringValue, code, r.text)
        }
        let created = try s.request("POST", "/v1/admin/notifications", json: body, token: admin)
        XCTAssertEqual(created.status, 202, created.text)
        let id = try XCTUnwrap(created.json?["id"]?.stringValue)
        let figures = try s.request("GET", "/v1/admin/notifications/\(id)", token: admin)
        XCTAssertEqual(figures.status, 200, figures.text)
        XCTAssertNotNil(figures.json?["queued"]?.int64Value, figures.text)
        XCTAssertNotNil(figures.json?["sent"]?.int64Value)
        XCTAssertNotNil(figures.json?["failed"]?.int64Value)
        XCTAssertEqual(try s.request("GET", "/v1/admin/notifications/\(UUID().uuidString)", token: admin).status, 404)
        XCTAssertEqual(try s.request("GET", "/v1/admin/notifications/\(id)", token: u.token).status, 403)
    }
}
