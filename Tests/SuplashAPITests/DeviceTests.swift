import Foundation
import SuplashJSON
import SuplashStorage
import XCTest

/// The device registry against the real server on SQLite (spec §9 "Devices"): registration
/// (201 / 200), validation problems, token moves, the 20-device bound, logout, export, erasure.
final class DeviceTests: XCTestCase {
    static let bundleIDs = "app.suplash.ios, app.suplash.ios.watchkitapp"
    nonisolated(unsafe) static var server: TestServer?
    /// The sealing key (`security.sealingKeyFile`): push tokens are kept sealed only.
    static let keyFile = TestServer.makeSealingKeyFile()
    static var environment: [String: String] {
        ["SUPLASH_APNS_BUNDLE_IDS": bundleIDs, "SUPLASH_SECURITY_SEALING_KEY_FILE": keyFile]
    }

    override class func setUp() {
        server = try? TestServer(environment: environment)
    }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer { try XCTUnwrap(Self.server, "server did not start") }

    /// A fresh device id (lower case, as the server outputs it).
    func newDevice() -> String { UUID().uuidString.lowercased() }

    /// A random 32-byte token as hex.
    func newToken() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    func body(
        platform: String = "ios", bundleID: String = "app.suplash.ios", tokens: [(String, String)]
    ) -> JSONValue {
        .object([
            ("platform", .string(platform)), ("bundleId", .string(bundleID)), ("environment", "production"),
            ("locale", "tr-TR"), ("appVersion", "1.4.2"),
            ("tokens", .array(tokens.map { .object([("pushType", .string($0.0)), ("token", .string($0.1))]) })),
        ])
    }

    @discardableResult
    func put(
        _ s: TestServer, _ uid: String, _ device: String, _ json: JSONValue, token: String, headers: [(String, String)] = [],
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> TestResponse {
        try s.request("PUT", "/v1/users/\(uid)/devices/\(device)", json: json, token: token, headers: headers)
    }

    /// The push types `device` of the caller holds tokens for (nil when it is not registered).
    func pushTypes(_ s: TestServer, _ device: String, token: String) throws -> [String]? {
        let r = try s.request("GET", "/v1/users/me/devices/\(device)", token: token)
        guard r.status == 200 else { return nil }
        return r.json?["pushTypes"]?.arrayValue?.compactMap(\.stringValue)
    }

    func testRegisterCreatesThenReplacesAndNeverReturnsTokens() throws {
        let s = try srv()
        let u = try s.signUp()
        let device = newDevice()
        let alert = newToken()
        let created = try put(s, "me", device.uppercased(), body(tokens: [("alert", alert), ("background", alert)]), token: u.token)
        XCTAssertEqual(created.status, 201, created.text)
        XCTAssertEqual(created.header("Location"), "/v1/users/\(u.id)/devices/\(device)")
        XCTAssertEqual(created.json?["id"]?.stringValue, device)
        XCTAssertEqual(created.json?["pushTypes"]?.arrayValue?.compactMap(\.stringValue), ["alert", "background"])
        XCTAssertEqual(created.json?["platform"]?.stringValue, "ios")
        XCTAssertEqual(created.json?["environment"]?.stringValue, "production")
        XCTAssertEqual(created.json?["locale"]?.stringValue, "tr-TR")
        XCTAssertFalse(created.text.contains(alert), "a token is never returned")
        let createdAt = try XCTUnwrap(created.json?["createdAt"]?.stringValue)

        let widgets = newToken()
        let replaced = try put(
            s, u.id, device, body(tokens: [("widgets", widgets.uppercased())]), token: u.token, headers: [("X-Device-ID", device)])
        XCTAssertEqual(replaced.status, 200, replaced.text)
        XCTAssertNil(replaced.header("Location"))
        XCTAssertEqual(replaced.json?["pushTypes"]?.arrayValue?.compactMap(\.stringValue), ["widgets"], "the token set is replaced")
        XCTAssertEqual(replaced.json?["createdAt"]?.stringValue, createdAt)

        let read = try s.request("GET", "/v1/users/me/devices/\(device)", token: u.token)
        XCTAssertEqual(read.status, 200)
        XCTAssertEqual(read.json?["pushTypes"]?.arrayValue?.compactMap(\.stringValue), ["widgets"])
        let list = try s.request("GET", "/v1/users/\(u.id)/devices", token: u.token)
        XCTAssertEqual(list.status, 200)
        XCTAssertEqual(list.json?["devices"]?.arrayValue?.compactMap { $0["id"]?.stringValue }, [device])
        XCTAssertFalse(list.text.contains(widgets) || list.text.contains(widgets.uppercased()))

        XCTAssertEqual(try s.request("DELETE", "/v1/users/me/devices/\(device)", token: u.token).status, 204)
        XCTAssertEqual(try s.request("GET", "/v1/users/me/devices/\(device)", token: u.token).status, 404)
        XCTAssertEqual(try s.request("DELETE", "/v1/users/me/devices/\(device)", token: u.token).json?["code"]?.stringValue, "not_found")
        XCTAssertEqual(try s.request("GET", "/v1/users/me/devices/not-a-uuid", token: u.token).status, 404)
        XCTAssertEqual(try s.request("GET", "/v1/users/me/devices", token: u.token).json?["devices"]?.arrayValue?.count, 0)
    }

    func testAuthorizationIsThatOfEveryPerUserRoute() throws {
        let s = try srv()
        let alice = try s.signUp()
        let bob = try s.signUp()
        let device = newDevice()
        XCTAssertEqual(try put(s, alice.id, device, body(tokens: []), token: alice.token).status, 201)
        XCTAssertEqual(try s.request("GET", "/v1/users/\(alice.id)/devices").status, 401)
        let other = try s.request("GET", "/v1/users/\(alice.id)/devices", token: bob.token)
        XCTAssertEqual(other.status, 403)
        XCTAssertEqual(other.json?["code"]?.stringValue, "permission_denied")
        XCTAssertEqual(try put(s, alice.id, device, body(tokens: []), token: bob.token).status, 403)
        XCTAssertEqual(try s.request("DELETE", "/v1/users/\(alice.id)/devices/\(device)", token: bob.token).status, 403)
        // Bob's own list does not see Alice's device.
        XCTAssertEqual(try s.request("GET", "/v1/users/me/devices/\(device)", token: bob.token).status, 404)

        // An admin key registers for any user (no session: logouts do not touch it).
        let (status, key, _) = try TestServer.runCLI([
            "admin-key", "create", "--name", "devices-\(UUID().uuidString.prefix(6))", "--data-dir", s.dataDir,
        ])
        XCTAssertEqual(status, 0)
        let admin = key.trimmingCharacters(in: .whitespacesAndNewlines)
        let adminDevice = newDevice()
        XCTAssertEqual(try put(s, alice.id, adminDevice, body(tokens: [("alert", newToken())]), token: admin).status, 201)
        XCTAssertEqual(try put(s, "me", newDevice(), body(tokens: []), token: admin).json?["code"]?.stringValue, "me_requires_user")
        XCTAssertEqual(try s.request("POST", "/v1/auth/logout", token: alice.token).status, 204)
        let list = try s.request("GET", "/v1/users/\(alice.id)/devices", token: admin)
        let pushTypes = list.json?["devices"]?.arrayValue?.first { $0["id"]?.stringValue == adminDevice }?["pushTypes"]
        XCTAssertEqual(pushTypes?.arrayValue?.compactMap(\.stringValue), ["alert"])
        XCTAssertEqual(try put(s, UUID().uuidString, newDevice(), body(tokens: []), token: admin).status, 404)
    }

    func testValidationProblems() throws {
        let s = try srv()
        let u = try s.signUp()
        let device = newDevice()
        let secret = newToken()
        func problem(_ json: JSONValue, device: String? = nil, headers: [(String, String)] = []) throws -> TestResponse {
            let r = try put(s, "me", device ?? self.newDevice(), json, token: u.token, headers: headers)
            XCTAssertEqual(r.header("Content-Type"), "application/problem+json")
            XCTAssertFalse(r.text.contains(secret) || r.text.contains(String(secret.prefix(16))), "a problem never echoes a token")
            return r
        }
        func fieldCodes(_ r: TestResponse) -> [String: String] {
            var out: [String: String] = [:]
            for e in r.json?["errors"]?.arrayValue ?? [] {
                if let p = e["pointer"]?.stringValue, let c = e["code"]?.stringValue { out[p] = c }
            }
            return out
        }
        let missing = try problem([:])
        XCTAssertEqual(missing.status, 422)
        XCTAssertEqual(missing.json?["code"]?.stringValue, "validation_failed")
        XCTAssertEqual(
            fieldCodes(missing), ["/platform": "required", "/bundleId": "required", "/environment": "required", "/tokens": "required"])

        let bad = try problem(
            .object([
                ("platform", "android"), ("bundleId", "app.elsewhere.ios"), ("environment", "staging"), ("locale", "x"),
                ("appVersion", .string(String(repeating: "9", count: 40))), ("id", .string(device)), ("colour", "blue"),
                (
                    "tokens",
                    .array([
                        .object([("pushType", "alert"), ("token", .string(secret + "0"))]),
                        .object([("pushType", "alert"), ("token", .string(secret))]),
                        .object([("pushType", "complication"), ("token", .string(secret))]),
                        .object([("pushType", "widgets"), ("token", .string(secret)), ("note", "x")]),
                    ])
                ),
            ]))
        XCTAssertEqual(bad.status, 422)
        XCTAssertEqual(
            fieldCodes(bad),
            [
                "/platform": "invalid_format", "/bundleId": "invalid_format", "/environment": "invalid_format",
                "/locale": "invalid_format", "/appVersion": "too_long", "/id": "read_only_field", "/colour": "unknown_field",
                "/tokens/0/token": "invalid_format", "/tokens/3/note": "unknown_field",
            ], "complication on an unknown platform and the repeat of the failed alert are not reported")

        let repeated = try problem(
            body(tokens: [("alert", secret), ("alert", secret), ("complication", secret), ("widgets", String(secret.prefix(14)))]))
        XCTAssertEqual(
            fieldCodes(repeated),
            ["/tokens/1/pushType": "invalid_format", "/tokens/2/pushType": "invalid_format", "/tokens/3/token": "invalid_format"])
        let tooMany = try problem(body(tokens: Array(repeating: ("alert", secret), count: 5)))
        XCTAssertEqual(fieldCodes(tooMany), ["/tokens": "too_long"])

        let notJSONObject = try problem(.array([]))
        XCTAssertEqual(notJSONObject.status, 422)
        let badPath = try problem(body(tokens: []), device: "watch-1")
        XCTAssertEqual(badPath.status, 400)
        XCTAssertEqual(badPath.json?["code"]?.stringValue, "invalid_device_id")
        let mismatch = try problem(body(tokens: []), device: device, headers: [("X-Device-ID", newDevice())])
        XCTAssertEqual(mismatch.status, 422)
        XCTAssertEqual(mismatch.json?["code"]?.stringValue, "device_id_mismatch")
        XCTAssertEqual(mismatch.json?["type"]?.stringValue, "https://suplash.app/problems/device-id-mismatch")
        let badHeader = try problem(body(tokens: []), device: device, headers: [("X-Device-ID", "nope")])
        XCTAssertEqual(badHeader.json?["code"]?.stringValue, "invalid_device_id")
        let text = try s.request(
            "PUT", "/v1/users/me/devices/\(device)", body: Array("{}".utf8), token: u.token, headers: [("Content-Type", "text/plain")])
        XCTAssertEqual(text.status, 415)
        XCTAssertEqual(try pushTypes(s, device, token: u.token), nil, "nothing was registered")
        XCTAssertFalse(s.serverLog.contains(secret), "the log never holds a token")
    }

    func testTokenMovesToTheDeviceAndAccountThatRegistersItLast() throws {
        let s = try srv()
        let alice = try s.signUp()
        let bob = try s.signUp()
        let phone = newDevice()
        let ipad = newDevice()
        let appToken = newToken()
        let widgetToken = newToken()
        XCTAssertEqual(
            try put(s, "me", phone, body(tokens: [("alert", appToken), ("background", appToken), ("widgets", widgetToken)]), token: alice.token)
                .status, 201)
        // Another device of the same account registers the app token (a restored backup):
        // it moves; the widget token stays.
        XCTAssertEqual(try put(s, "me", ipad, body(platform: "ipados", tokens: [("alert", appToken)]), token: alice.token).status, 201)
        XCTAssertEqual(try pushTypes(s, phone, token: alice.token), ["background", "widgets"])
        XCTAssertEqual(try pushTypes(s, ipad, token: alice.token), ["alert"])
        // The same phone signed in to Bob's account: the tokens move to Bob.
        let moved = try put(s, "me", phone, body(tokens: [("alert", appToken), ("background", appToken)]), token: bob.token)
        XCTAssertEqual(moved.status, 201, "a device new to Bob's account")
        XCTAssertEqual(try pushTypes(s, phone, token: bob.token), ["alert", "background"])
        XCTAssertEqual(try pushTypes(s, phone, token: alice.token), ["widgets"], "Alice's rows keep only what was not taken")
        XCTAssertEqual(try pushTypes(s, ipad, token: alice.token), [])
    }

    func testRegisteringA21stDeviceEvictsTheLeastRecentlySeen() throws {
        let s = try srv()
        let u = try s.signUp()
        // Ids chosen so that even registrations within one millisecond evict the same device:
        // on equal times the lower id goes first.
        let first = "ffffffff-0000-4000-8000-000000000000"
        let devices = [first] + (1...19).map { String(format: "00000000-0000-4000-8000-%012d", $0) }
        let tokens = devices.map { _ in newToken() }
        for (device, token) in zip(devices, tokens) {
            XCTAssertEqual(try put(s, "me", device, body(tokens: [("alert", token)]), token: u.token).status, 201)
        }
        // The first device is seen again; the second is now the least recently seen.
        XCTAssertEqual(try put(s, "me", first, body(tokens: [("alert", tokens[0])]), token: u.token).status, 200)
        let list = try s.request("GET", "/v1/users/me/devices", token: u.token)
        XCTAssertEqual(list.json?["devices"]?.arrayValue?.first?["id"]?.stringValue, first, "most recently seen first")
        XCTAssertEqual(list.json?["devices"]?.arrayValue?.count, 20)

        let newcomer = "77777777-0000-4000-8000-000000000000"
        XCTAssertEqual(try put(s, "me", newcomer, body(tokens: [("alert", newToken())]), token: u.token).status, 201)
        let after = try s.request("GET", "/v1/users/me/devices", token: u.token)
        let ids = Set(after.json?["devices"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
        XCTAssertEqual(ids.count, 20)
        XCTAssertFalse(ids.contains(devices[1]), "the least recently seen was evicted")
        XCTAssertTrue(ids.contains(first) && ids.contains(newcomer) && ids.contains(devices[2]))
        XCTAssertNil(try pushTypes(s, devices[1], token: u.token))
        // Re-registering a known device never evicts.
        XCTAssertEqual(try put(s, "me", devices[2], body(tokens: []), token: u.token).status, 200)
        XCTAssertEqual(try s.request("GET", "/v1/users/me/devices", token: u.token).json?["devices"]?.arrayValue?.count, 20)
    }

    func testLoggingOutTheRegisteringSessionRemovesItsDevicesTokens() throws {
        let s = try srv()
        let u = try s.signUp()
        func login() throws -> (access: String, refresh: String) {
            let r = try s.request("POST", "/v1/auth/login", json: ["email": .string(u.email), "password": "correct horse battery"])
            return (
                try XCTUnwrap(r.json?["session"]?["accessToken"]?.stringValue),
                try XCTUnwrap(r.json?["session"]?["refreshToken"]?.stringValue)
            )
        }
        let second = try login()
        let phone = newDevice()
        let watch = newDevice()
        XCTAssertEqual(try put(s, "me", phone, body(tokens: [("alert", newToken())]), token: u.token).status, 201)
        XCTAssertEqual(
            try put(
                s, "me", watch, body(platform: "watchos", bundleID: "app.suplash.ios.watchkitapp", tokens: [("complication", newToken())]),
                token: second.access
            ).status, 201)

        // Logout with the bearer token of the first session: only the phone loses its tokens.
        XCTAssertEqual(try s.request("POST", "/v1/auth/logout", token: u.token).status, 204)
        XCTAssertEqual(try pushTypes(s, phone, token: second.access), [], "the device stays, without tokens")
        XCTAssertEqual(try pushTypes(s, watch, token: second.access), ["complication"])

        // Logout with the refresh token of the second session.
        XCTAssertEqual(try s.request("POST", "/v1/auth/logout", json: ["refreshToken": .string(second.refresh)]).status, 204)
        let third = try login()
        XCTAssertEqual(try pushTypes(s, watch, token: third.access), [])

        // A reused refresh token revokes its session: the tokens go too.
        XCTAssertEqual(try put(s, "me", watch, body(tokens: [("background", newToken())]), token: third.access).status, 200)
        XCTAssertEqual(try s.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(third.refresh)]).status, 200)
        XCTAssertEqual(try s.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(third.refresh)]).status, 401)
        let fourth = try login()
        XCTAssertEqual(try pushTypes(s, watch, token: fourth.access), [])
        // Registering again with a live session brings the tokens back.
        XCTAssertEqual(try put(s, "me", watch, body(tokens: [("background", newToken())]), token: fourth.access).status, 200)
        XCTAssertEqual(try pushTypes(s, watch, token: fourth.access), ["background"])
    }

    func testAPasswordResetRemovesTheTokensOfEveryDeviceItsRevokedSessionsRegistered() throws {
        let s = try srv()
        let u = try s.signUp()
        let phone = newDevice()
        XCTAssertEqual(try put(s, "me", phone, body(tokens: [("alert", newToken())]), token: u.token).status, 201)
        XCTAssertNotNil(MailFiles.latestCode(dataDir: s.dataDir, to: u.email, wait: 10), "the signup mail")
        let before = MailFiles.messages(dataDir: s.dataDir, to: u.email).count
        XCTAssertEqual(try s.request("POST", "/v1/auth/password/forgot", json: ["email": .string(u.email)]).status, 202)
        let code = try XCTUnwrap(MailFiles.latestCode(dataDir: s.dataDir, to: u.email, after: before, wait: 10))
        let reset = try s.request(
            "POST", "/v1/auth/password/reset",
            json: ["email": .string(u.email), "code": .string(code), "newPassword": "new password 456"])
        XCTAssertEqual(reset.status, 204, reset.text)
        let login = try s.request("POST", "/v1/auth/login", json: ["email": .string(u.email), "password": "new password 456"])
        let access = try XCTUnwrap(login.json?["session"]?["accessToken"]?.stringValue)
        XCTAssertEqual(try pushTypes(s, phone, token: access), [], "the device stays, without tokens")
    }

    func testExportListsDevicesWithoutTokensAndErasureDeletesThem() throws {
        let s = try TestServer(environment: Self.environment)
        let u = try s.signUp()
        let device = newDevice()
        let token = newToken()
        XCTAssertEqual(try put(s, "me", device, body(tokens: [("alert", token), ("background", token)]), token: u.token).status, 201)
        let export = try s.request("GET", "/v1/users/me/export", token: u.token)
        XCTAssertEqual(export.status, 200)
        let devices = try XCTUnwrap(export.json?["devices"]?.arrayValue)
        XCTAssertEqual(devices.compactMap { $0["id"]?.stringValue }, [device])
        XCTAssertEqual(devices.first?["pushTypes"]?.arrayValue?.compactMap(\.stringValue), ["alert", "background"])
        XCTAssertFalse(export.text.lowercased().contains(token), "the export holds no token")

        XCTAssertEqual(try s.request("DELETE", "/v1/users/me", token: u.token).status, 204)
        XCTAssertEqual(s.stop(), 0)
        let db = try SQLiteDatabase(path: s.dataDir + "/suplash.sqlite", readers: 1)
        defer { db.close() }
        let counts = try db.read { c in
            (
                try c.query("SELECT count(*) FROM devices").first?[0].int64,
                try c.query("SELECT count(*) FROM device_tokens").first?[0].int64
            )
        }
        XCTAssertEqual(counts.0, 0)
        XCTAssertEqual(counts.1, 0)
    }
}
