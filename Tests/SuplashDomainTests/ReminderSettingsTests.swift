import SuplashDomain
import SuplashJSON
import XCTest

/// The profile's `reminders` object as a JSON merge patch (spec §9, RFC 7396).
final class ReminderSettingsTests: XCTestCase {
    private func patch(_ text: String, to settings: ReminderSettings = ReminderSettings()) throws -> ReminderSettings {
        try ReminderSettingsValidation.applyMergePatch(json(text), to: settings)
    }

    private func errors(
        _ text: String, to settings: ReminderSettings = ReminderSettings(),
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> [String: FieldErrorCode] {
        let body = try json(text, file: file, line: line)
        return codesByPointer(
            fieldErrors(
                { () throws(ValidationFailure) -> ReminderSettings in
                    try ReminderSettingsValidation.applyMergePatch(body, to: settings)
                }, file: file, line: line), file: file, line: line)
    }

    func testDefaults() throws {
        let s = ReminderSettings()
        XCTAssertTrue(s.enabled)
        XCTAssertEqual(s.mode, .adaptive)
        XCTAssertEqual(s.intervalMinutes, 90)
        XCTAssertEqual(s.maxPerDay, 8)
        XCTAssertNil(s.quietStart)
        XCTAssertNil(s.quietEnd)
        XCTAssertNil(s.quietHours)
        XCTAssertTrue(s.billReminders)
        XCTAssertEqual(
            s.json.serializedString(),
            #"{"enabled":true,"mode":"adaptive","intervalMinutes":90,"maxPerDay":8,"billReminders":true}"#)
        XCTAssertEqual(try patch("{}"), s)
    }

    func testFullPatchThenResets() throws {
        let s = try patch(
            """
            {"enabled": false, "mode": "fixed", "intervalMinutes": 60.0, "maxPerDay": 12, "quietStart": "22:30",
             "quietEnd": "07:15", "billReminders": false}
            """)
        XCTAssertEqual(
            s,
            ReminderSettings(
                enabled: false, mode: .fixed, intervalMinutes: 60, maxPerDay: 12,
                quietStart: clockTime("22:30"), quietEnd: clockTime("07:15"), billReminders: false))
        XCTAssertEqual(
            s.json.serializedString(),
            #"{"enabled":false,"mode":"fixed","intervalMinutes":60,"maxPerDay":12,"quietStart":"22:30","quietEnd":"07:15","billReminders":false}"#)
        // Only what the patch names changes.
        XCTAssertEqual(try patch(#"{"maxPerDay": 3}"#, to: s).maxPerDay, 3)
        XCTAssertEqual(try patch(#"{"maxPerDay": 3}"#, to: s).mode, .fixed)
        // null resets one field …
        let reset = try patch(
            """
            {"enabled": null, "mode": null, "intervalMinutes": null, "maxPerDay": null,
             "quietStart": null, "quietEnd": null, "billReminders": null}
            """, to: s)
        XCTAssertEqual(reset, ReminderSettings())
        // … and the whole member.
        XCTAssertEqual(try ReminderSettingsValidation.applyMergePatch(.null, to: s), ReminderSettings())
        // Bounds are inclusive.
        XCTAssertEqual(try patch(#"{"intervalMinutes": 30, "maxPerDay": 1}"#).intervalMinutes, 30)
        XCTAssertEqual(try patch(#"{"intervalMinutes": 240, "maxPerDay": 24}"#).maxPerDay, 24)
    }

    func testStoredJSONReadsBackAsAPatchOnTheDefaults() throws {
        let s = ReminderSettings(
            enabled: true, mode: .fixed, intervalMinutes: 45, maxPerDay: 3,
            quietStart: clockTime("21:00"), quietEnd: clockTime("08:00"), billReminders: false)
        XCTAssertEqual(try ReminderSettingsValidation.applyMergePatch(s.json, to: ReminderSettings()), s)
        XCTAssertEqual(
            try ReminderSettingsValidation.applyMergePatch(ReminderSettings().json, to: s),
            ReminderSettings(
                enabled: true, mode: .adaptive, intervalMinutes: 90, maxPerDay: 8, quietStart: clockTime("21:00"),
                quietEnd: clockTime("08:00"), billReminders: true))
    }

    func testStoredTextRoundTripsForDefaultsAndChangedSettings() {
        XCTAssertEqual(ReminderSettings(stored: ReminderSettings().json.serializedString()), ReminderSettings())
        XCTAssertEqual(ReminderSettings(stored: "{}"), ReminderSettings())
        XCTAssertEqual(ReminderSettings(stored: nil), ReminderSettings())
        let changed = ReminderSettings(
            enabled: false, mode: .fixed, intervalMinutes: 60, maxPerDay: 4,
            quietStart: clockTime("22:00"), quietEnd: clockTime("07:00"), billReminders: false)
        XCTAssertEqual(ReminderSettings(stored: changed.json.serializedString()), changed)
        XCTAssertEqual(ReminderSettings(stored: #"{"maxPerDay": 3}"#).maxPerDay, 3)
    }

    func testEveryBadFieldIsReportedWithItsPointer() throws {
        let e = try errors(
            """
            {"enabled": "yes", "mode": "hourly", "intervalMinutes": 29, "maxPerDay": 25, "quietStart": "7:00",
             "quietEnd": 700, "billReminders": 1, "snoozeMinutes": 10, "interval~/Minutes": 1}
            """)
        XCTAssertEqual(
            e,
            [
                "/reminders/enabled": .invalidType, "/reminders/mode": .invalidFormat,
                "/reminders/intervalMinutes": .outOfRange, "/reminders/maxPerDay": .outOfRange,
                "/reminders/quietStart": .invalidFormat, "/reminders/quietEnd": .invalidType,
                "/reminders/billReminders": .invalidType, "/reminders/snoozeMinutes": .unknownField,
                "/reminders/interval~0~1Minutes": .unknownField,
            ])
        XCTAssertEqual(
            try errors(#"{"intervalMinutes": 241, "maxPerDay": 0}"#),
            ["/reminders/intervalMinutes": .outOfRange, "/reminders/maxPerDay": .outOfRange])
        XCTAssertEqual(
            try errors(#"{"intervalMinutes": 90.5, "maxPerDay": "8"}"#),
            ["/reminders/intervalMinutes": .invalidType, "/reminders/maxPerDay": .invalidType])
        XCTAssertEqual(
            try errors(#"{"quietStart": "24:00", "quietEnd": "23:60"}"#),
            ["/reminders/quietStart": .invalidFormat, "/reminders/quietEnd": .invalidFormat])
        // Not an object.
        for text in ["[]", "true", "\"adaptive\"", "90"] {
            XCTAssertEqual(try errors(text), ["/reminders": .invalidType])
        }
    }

    func testQuietHoursComeInPairs() throws {
        XCTAssertEqual(try errors(#"{"quietStart": "22:00"}"#), ["/reminders/quietEnd": .required])
        XCTAssertEqual(try errors(#"{"quietEnd": "07:00"}"#), ["/reminders/quietStart": .required])
        XCTAssertEqual(try errors(#"{"quietStart": "22:00", "quietEnd": "22:00"}"#), ["/reminders/quietEnd": .outOfRange])
        let quiet = try patch(#"{"quietStart": "22:00", "quietEnd": "07:00"}"#)
        XCTAssertEqual(try errors(#"{"quietStart": null}"#, to: quiet), ["/reminders/quietStart": .required])
        XCTAssertEqual(try patch(#"{"quietEnd": "06:00"}"#, to: quiet).quietEnd, clockTime("06:00"))
        XCTAssertNil(try patch(#"{"quietStart": null, "quietEnd": null}"#, to: quiet).quietHours)
    }

    func testPointerPrefixIsTheCallers() throws {
        let body = try json(#"{"maxPerDay": 0}"#)
        let e = fieldErrors({ () throws(ValidationFailure) -> ReminderSettings in
            try ReminderSettingsValidation.applyMergePatch(body, to: ReminderSettings(), pointer: "/data/reminders")
        })
        assertSingleError(e, "/data/reminders/maxPerDay", .outOfRange)
    }

    func testQuietHoursContainment() throws {
        let night = try XCTUnwrap(QuietHours(start: clockTime("22:00"), end: clockTime("07:00")))
        XCTAssertTrue(night.contains(minuteOfDay: 22 * 60))
        XCTAssertTrue(night.contains(minuteOfDay: 0))
        XCTAssertTrue(night.contains(minuteOfDay: 6 * 60 + 59))
        XCTAssertFalse(night.contains(minuteOfDay: 7 * 60))
        XCTAssertFalse(night.contains(minuteOfDay: 21 * 60 + 59))
        let lunch = try XCTUnwrap(QuietHours(start: clockTime("12:00"), end: clockTime("13:00")))
        XCTAssertTrue(lunch.contains(minuteOfDay: 12 * 60 + 30))
        XCTAssertFalse(lunch.contains(minuteOfDay: 13 * 60))
        XCTAssertNil(QuietHours(start: clockTime("12:00"), end: clockTime("12:00")))
        // The end of a quiet period that crosses midnight is on the next local day.
        let ist = try zone("Europe/Istanbul")
        XCTAssertEqual(
            night.firstAllowedInstant(atOrAfter: at("2026-06-01T23:10:00+03:00"), clock: ist),
            at("2026-06-02T07:00:00+03:00"))
        XCTAssertEqual(
            night.firstAllowedInstant(atOrAfter: at("2026-06-02T03:10:00+03:00"), clock: ist),
            at("2026-06-02T07:00:00+03:00"))
        XCTAssertEqual(
            night.firstAllowedInstant(atOrAfter: at("2026-06-02T09:10:00+03:00"), clock: ist),
            at("2026-06-02T09:10:00+03:00"))
        // Quiet 01:00–02:45 in Berlin on the autumn night: the second pass of 02:00–02:45 is quiet too and ends at the
        // second 02:45 (01:45Z).
        let berlin = try zone("Europe/Berlin")
        let early = try XCTUnwrap(QuietHours(start: clockTime("01:00"), end: clockTime("02:45")))
        XCTAssertEqual(
            early.firstAllowedInstant(atOrAfter: at("2026-10-25T00:10:00Z"), clock: berlin),
            at("2026-10-25T00:45:00Z"))
        XCTAssertEqual(
            early.firstAllowedInstant(atOrAfter: at("2026-10-25T01:10:00Z"), clock: berlin),
            at("2026-10-25T01:45:00Z"))
    }

    func testClockTimeParsing() {
        XCTAssertEqual(ClockTime(parsing: "07:05")?.minuteOfDay, 425)
        XCTAssertEqual(ClockTime(parsing: "23:59")?.description, "23:59")
        XCTAssertNil(ClockTime(parsing: "24:00"))
        XCTAssertNil(ClockTime(parsing: "7:05"))
        XCTAssertNil(ClockTime(parsing: "07:5"))
        XCTAssertNil(ClockTime(parsing: "٠٧:٠٥"))
        XCTAssertNil(ClockTime(hour: 3, minute: 60))
    }
}
