import Foundation
import SuplashJSON
import XCTest

/// The profile's `reminders` (spec §9): a merge patch inside the profile's merge patch, through
/// REST and sync, kept by the store and shown with the profile.
final class ReminderSettingsRoutesTests: XCTestCase {
    nonisolated(unsafe) static var server: TestServer?

    override class func setUp() {
        server = try? TestServer()
    }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer { try XCTUnwrap(Self.server, "server did not start") }

    func testDefaultsPatchResetAndValidation() throws {
        let s = try srv()
        let u = try s.signUp()
        let fresh = try s.request("GET", "/v1/users/me", token: u.token)
        XCTAssertEqual(
            fresh.json?["reminders"],
            ["enabled": true, "mode": "adaptive", "intervalMinutes": 90, "maxPerDay": 8, "billReminders": true])
        let r = try s.request(
            "PATCH", "/v1/users/me",
            json: ["reminders": ["mode": "fixed", "intervalMinutes": 120, "quietStart": "22:00", "quietEnd": "07:00"]],
            token: u.token)
        XCTAssertEqual(r.status, 200, r.text)
        let stored = try s.request("GET", "/v1/users/me", token: u.token).json?["reminders"]
        XCTAssertEqual(
            stored,
            [
                "enabled": true, "mode": "fixed", "intervalMinutes": 120, "maxPerDay": 8, "quietStart": "22:00",
                "quietEnd": "07:00", "billReminders": true,
            ])
        // A merge inside the merge: one member changes, one resets, the rest stay.
        let merged = try s.request(
            "PATCH", "/v1/users/me", json: ["reminders": ["maxPerDay": 3, "mode": .null]], token: u.token)
        XCTAssertEqual(merged.json?["reminders"]?["maxPerDay"]?.int64Value, 3)
        XCTAssertEqual(merged.json?["reminders"]?["mode"]?.stringValue, "adaptive")
        XCTAssertEqual(merged.json?["reminders"]?["quietStart"]?.stringValue, "22:00")
        // Every bad field at once, with pointers under /reminders, next to the profile's own.
        let bad = try s.request(
            "PATCH", "/v1/users/me",
            json: ["wakeTime": "25:00", "reminders": ["maxPerDay": 0, "quietEnd": .null, "volume": 3]], token: u.token)
        XCTAssertEqual(bad.status, 422)
        let errors = (bad.json?["errors"]?.arrayValue ?? []).compactMap { e in
            e["pointer"]?.stringValue.map { "\($0) \(e["code"]?.stringValue ?? "")" }
        }
        XCTAssertEqual(
            Set(errors),
            [
                "/wakeTime invalid_format", "/reminders/maxPerDay out_of_range", "/reminders/volume unknown_field",
                "/reminders/quietEnd required",
            ])
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: u.token).json?["reminders"]?["maxPerDay"]?.int64Value, 3)
        // null resets every field.
        let reset = try s.request("PATCH", "/v1/users/me", json: ["reminders": .null], token: u.token)
        XCTAssertEqual(reset.json?["reminders"], fresh.json?["reminders"])
    }

    func testSyncedWithTheProfile() throws {
        let s = try srv()
        let u = try s.signUp()
        let results = try s.push(
            token: u.token,
            [
                [
                    "collection": "profile", "id": .string(u.id), "op": "upsert",
                    "data": ["reminders": ["enabled": false, "billReminders": false]],
                    "clientUpdatedAt": .string(rfc3339(Date())),
                ]
            ])
        XCTAssertEqual(results.first?["status"]?.stringValue, "applied", "\(results)")
        let reminders = try s.request("GET", "/v1/users/me", token: u.token).json?["reminders"]
        XCTAssertEqual(reminders?["enabled"], false)
        XCTAssertEqual(reminders?["billReminders"], false)
        XCTAssertEqual(reminders?["maxPerDay"]?.int64Value, 8)
    }
}
