import SuplashDomain
import SuplashJSON
import XCTest

/// Device registrations (spec §9 "Devices"): every rule, without I/O.
final class DeviceValidationTests: XCTestCase {
    static let bundles: Set<String> = ["app.suplash.ios", "app.suplash.ios.watchkitapp"]
    static let token = String(repeating: "5f1c", count: 16)

    func register(_ text: String, bundles: Set<String> = bundles) throws -> DeviceRegistration {
        try DeviceValidation.registration(try json(text), allowedBundleIDs: bundles)
    }

    func errors(_ text: String, bundles: Set<String> = bundles, file: StaticString = #filePath, line: UInt = #line) throws
        -> [String: FieldErrorCode]
    {
        let body = try json(text, file: file, line: line)
        return codesByPointer(
            fieldErrors(
                { () throws(ValidationFailure) -> DeviceRegistration in
                    try DeviceValidation.registration(body, allowedBundleIDs: bundles)
                }, file: file, line: line), file: file, line: line)
    }

    func testAFullRegistrationParses() throws {
        let r = try register(
            """
            {"platform": "watchos", "bundleId": "app.suplash.ios.watchkitapp", "environment": "sandbox",
             "locale": "tr-TR", "appVersion": "1.4.2 (210)",
             "tokens": [{"pushType": "background", "token": "\(Self.token.uppercased())"},
                        {"pushType": "complication", "token": "00ff00ff00ff00ff"}]}
            """)
        XCTAssertEqual(r.platform, .watchos)
        XCTAssertEqual(r.bundleID, "app.suplash.ios.watchkitapp")
        XCTAssertEqual(r.environment, .sandbox)
        XCTAssertEqual(r.locale, "tr-TR")
        XCTAssertEqual(r.appVersion, "1.4.2 (210)")
        XCTAssertEqual(r.tokens.map(\.pushType), [.background, .complication])
        XCTAssertEqual(r.tokens[0].token, [UInt8](repeating: 0, count: 16).enumerated().flatMap { _ in [0x5f, 0x1c] })
        XCTAssertEqual(r.tokens[1].token, [0, 255, 0, 255, 0, 255, 0, 255])
    }

    func testOptionalFieldsMayBeAbsentOrNullAndTokensEmpty() throws {
        let r = try register(
            #"{"platform": "ios", "bundleId": "app.suplash.ios", "environment": "production", "locale": null, "tokens": []}"#)
        XCTAssertNil(r.locale)
        XCTAssertNil(r.appVersion)
        XCTAssertTrue(r.tokens.isEmpty)
    }

    func testRequiredFieldsAndTypes() throws {
        XCTAssertEqual(
            try errors("{}"),
            ["/platform": .required, "/bundleId": .required, "/environment": .required, "/tokens": .required])
        XCTAssertEqual(
            try errors(#"{"platform": 1, "bundleId": true, "environment": "prod", "tokens": {}}"#),
            ["/platform": .invalidType, "/bundleId": .invalidType, "/environment": .invalidFormat, "/tokens": .invalidType])
        XCTAssertEqual(
            fieldErrors { () throws(ValidationFailure) -> DeviceRegistration in
                try DeviceValidation.registration(.array([]), allowedBundleIDs: [])
            }.map(\.pointer), [""])
    }

    func testEnumsAreExactAndUnknownOrServerFieldsAreRefused() throws {
        XCTAssertEqual(
            try errors(
                #"{"platform": "iOS", "bundleId": "app.suplash.ios", "environment": "Sandbox", "tokens": [], "id": "x", "pushTypes": [], "colour": 1}"#
            ),
            [
                "/platform": .invalidFormat, "/environment": .invalidFormat, "/id": .readOnlyField, "/pushTypes": .readOnlyField,
                "/colour": .unknownField,
            ])
    }

    func testBundleIDMustBeWellFormedAndConfigured() throws {
        let base = #""platform": "ios", "environment": "sandbox", "tokens": []"#
        XCTAssertEqual(try errors("{\(base), \"bundleId\": \"app.other.ios\"}"), ["/bundleId": .invalidFormat])
        XCTAssertEqual(try errors("{\(base), \"bundleId\": \"APP.SUPLASH.IOS\"}"), ["/bundleId": .invalidFormat])
        for bad in ["suplash", "app..suplash", ".app.suplash", "app.suplash.", "app.sup lash", "app.süplash"] {
            XCTAssertEqual(try errors("{\(base), \"bundleId\": \"\(bad)\"}", bundles: []), ["/bundleId": .invalidFormat], bad)
        }
        XCTAssertEqual(try errors("{\(base), \"bundleId\": \"\"}"), ["/bundleId": .required])
        XCTAssertEqual(
            try errors("{\(base), \"bundleId\": \"a.\(String(repeating: "b", count: 154))\"}"), ["/bundleId": .tooLong])
        // With no configured list, any well-formed bundle id registers.
        XCTAssertEqual(try register("{\(base), \"bundleId\": \"app.other.ios\"}", bundles: []).bundleID, "app.other.ios")
    }

    func testTokensAreHexOfSaneLengthOnePerPushType() throws {
        func tokens(_ list: String, platform: String = "ios") throws -> [String: FieldErrorCode] {
            try errors(
                #"{"platform": "\#(platform)", "bundleId": "app.suplash.ios", "environment": "sandbox", "tokens": \#(list)}"#)
        }
        let t = Self.token
        XCTAssertEqual(try tokens(#"[{"pushType": "alert", "token": "abc"}]"#), ["/tokens/0/token": .invalidFormat])
        XCTAssertEqual(try tokens(#"[{"pushType": "alert", "token": "\#(t)0"}]"#), ["/tokens/0/token": .invalidFormat])
        XCTAssertEqual(try tokens(#"[{"pushType": "alert", "token": "00112233445566"}]"#), ["/tokens/0/token": .invalidFormat])
        XCTAssertEqual(
            try tokens(#"[{"pushType": "alert", "token": "\#(String(repeating: "ab", count: 101))"}]"#),
            ["/tokens/0/token": .invalidFormat])
        XCTAssertEqual(try tokens(#"[{"pushType": "alert", "token": "zz\#(t.dropFirst(2))"}]"#), ["/tokens/0/token": .invalidFormat])
        XCTAssertEqual(try tokens(#"[{"pushType": "alert", "token": 12}]"#), ["/tokens/0/token": .invalidType])
        XCTAssertEqual(try tokens(#"[{"pushType": "voip", "token": "\#(t)"}]"#), ["/tokens/0/pushType": .invalidFormat])
        XCTAssertEqual(try tokens(#"[{"token": "\#(t)", "extra": 1}]"#), ["/tokens/0/pushType": .required, "/tokens/0/extra": .unknownField])
        XCTAssertEqual(try tokens(#"["\#(t)"]"#), ["/tokens/0": .invalidType])
        XCTAssertEqual(
            try tokens(#"[{"pushType": "alert", "token": "\#(t)"}, {"pushType": "alert", "token": "\#(t)"}]"#),
            ["/tokens/1/pushType": .invalidFormat])
        XCTAssertEqual(
            try tokens(#"[{"pushType": "complication", "token": "\#(t)"}]"#), ["/tokens/0/pushType": .invalidFormat])
        let five = Array(repeating: #"{"pushType": "alert", "token": "\#(t)"}"#, count: 5).joined(separator: ",")
        XCTAssertEqual(try tokens("[\(five)]"), ["/tokens": .tooLong])
        // Alert and background share the app's token; all four types at once.
        let all = try register(
            #"{"platform": "watchos", "bundleId": "app.suplash.ios.watchkitapp", "environment": "production", "tokens": [{"pushType": "widgets", "token": "\#(t)"}, {"pushType": "alert", "token": "\#(t)"}, {"pushType": "background", "token": "\#(t)"}, {"pushType": "complication", "token": "\#(t)"}]}"#
        )
        XCTAssertEqual(all.tokens.map(\.pushType), [.widgets, .alert, .background, .complication])
        XCTAssertEqual(Device(id: "d", registration: all, createdAt: 1, now: 2).pushTypes, [.alert, .background, .complication, .widgets])
    }

    func testMessagesNeverEchoTheToken() throws {
        let secret = "5f1c5f1c5f1c5f1c5f1cZZ"
        let body = try json(
            #"{"platform": "ios", "bundleId": "app.suplash.ios", "environment": "sandbox", "tokens": [{"pushType": "alert", "token": "\#(secret)"}]}"#
        )
        let errors = fieldErrors { () throws(ValidationFailure) -> DeviceRegistration in
            try DeviceValidation.registration(body, allowedBundleIDs: Self.bundles)
        }
        XCTAssertFalse(errors.contains { $0.message.contains("5f1c") })
    }

    func testLocaleAndAppVersion() throws {
        let base = #""platform": "ios", "bundleId": "app.suplash.ios", "environment": "sandbox", "tokens": []"#
        for good in ["tr", "en-US", "zh-Hans-CN", "en_GB", "ast"] {
            XCTAssertEqual(try register("{\(base), \"locale\": \"\(good)\"}").locale, good)
        }
        for bad in ["t", "1r-TR", "tr--TR", "tr-", "tr TR", "tr-abcdefghi", "türk"] {
            XCTAssertEqual(try errors("{\(base), \"locale\": \"\(bad)\"}"), ["/locale": .invalidFormat], bad)
        }
        XCTAssertEqual(try errors("{\(base), \"locale\": \"en-\(String(repeating: "a1-", count: 12))x\"}"), ["/locale": .tooLong])
        XCTAssertEqual(try errors("{\(base), \"appVersion\": \"1.0\\n\"}"), ["/appVersion": .invalidFormat])
        XCTAssertEqual(try errors("{\(base), \"appVersion\": \"\(String(repeating: "1", count: 33))\"}"), ["/appVersion": .tooLong])
        XCTAssertEqual(try errors("{\(base), \"appVersion\": \"\"}"), ["/appVersion": .required])
    }

    func testTokenBytes() {
        XCTAssertEqual(DeviceValidation.tokenBytes("00FFaB0123456789"), [0x00, 0xFF, 0xAB, 0x01, 0x23, 0x45, 0x67, 0x89])
        XCTAssertNil(DeviceValidation.tokenBytes("00FFaB012345678g"))
        XCTAssertNil(DeviceValidation.tokenBytes(""))
        XCTAssertEqual(DeviceValidation.tokenBytes(String(repeating: "a", count: 200))?.count, 100)
    }
}
