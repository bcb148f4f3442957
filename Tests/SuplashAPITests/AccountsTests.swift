import Foundation
import SuplashJSON
import XCTest

/// Accounts, sessions and authorization against the real server (spec §3).
final class AccountsTests: XCTestCase {
    nonisolated(unsafe) static var server: TestServer?

    override class func setUp() {
        server = try? TestServer()
    }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer { try XCTUnwrap(Self.server, "server did not start") }

    func testHealthAndReadiness() throws {
        let s = try srv()
        XCTAssertEqual(try s.request("GET", "/healthz").status, 200)
        XCTAssertEqual(try s.request("GET", "/readyz").status, 200)
        let r = try s.request("GET", "/healthz", headers: [("X-Request-ID", "abc-123")])
        XCTAssertEqual(r.header("X-Request-ID"), "abc-123")
        let generated = try s.request("GET", "/healthz", headers: [("X-Request-ID", "bad id with spaces")])
        XCTAssertNotEqual(generated.header("X-Request-ID"), "bad id with spaces")
        XCTAssertFalse((generated.header("X-Request-ID") ?? "").isEmpty)
    }

    func testUnknownRouteAndMethodAreProblems() throws {
        let s = try srv()
        let notFound = try s.request("GET", "/v1/nope")
        XCTAssertEqual(notFound.status, 404)
        XCTAssertEqual(notFound.header("Content-Type"), "application/problem+json")
        let wrong = try s.request("PUT", "/v1/auth/login", json: [:])
        XCTAssertEqual(wrong.status, 405)
        XCTAssertEqual(wrong.header("Allow"), "POST")
    }

    func testSignupLoginRefreshRotationAndReuse() throws {
        let s = try srv()
        let user = try s.signUp()
        let taken = try s.request(
            "POST", "/v1/auth/signup",
            json: ["email": .string("  " + user.email.uppercased()), "password": "another password"])
        XCTAssertEqual(taken.status, 409)
        XCTAssertEqual(taken.json?["code"]?.stringValue, "email_taken")

        let login = try s.request("POST", "/v1/auth/login", json: ["email": .string(user.email), "password": "correct horse battery"])
        XCTAssertEqual(login.status, 200)
        let first = try XCTUnwrap(login.json?["session"]?["refreshToken"]?.stringValue)
        let rotated = try s.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(first)])
        XCTAssertEqual(rotated.status, 200)
        let second = try XCTUnwrap(rotated.json?["session"]?["refreshToken"]?.stringValue)
        let access = try XCTUnwrap(rotated.json?["session"]?["accessToken"]?.stringValue)
        XCTAssertNotEqual(first, second)
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: access).status, 200)

        let reuse = try s.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(first)])
        XCTAssertEqual(reuse.status, 401)
        XCTAssertEqual(reuse.json?["code"]?.stringValue, "refresh_token_reused")
        XCTAssertEqual(try s.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(second)]).status, 401)
        // The family's access token is revoked at once.
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: access).status, 401)
    }

    func testWrongPasswordAndUnknownEmailLookTheSame() throws {
        let s = try srv()
        let user = try s.signUp()
        let wrong = try s.request("POST", "/v1/auth/login", json: ["email": .string(user.email), "password": "wrong password!"])
        let unknown = try s.request("POST", "/v1/auth/login", json: ["email": "nobody@example.test", "password": "wrong password!"])
        XCTAssertEqual(wrong.status, 401)
        XCTAssertEqual(wrong.body, unknown.body)
    }

    func testLogoutRevokesAtOnce() throws {
        let s = try srv()
        let user = try s.signUp()
        XCTAssertEqual(try s.request("POST", "/v1/auth/logout", json: ["refreshToken": .string(user.refresh)], token: user.token).status, 204)
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: user.token).status, 401)
        XCTAssertEqual(try s.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(user.refresh)]).status, 401)
    }

    func testTokensAreChecked() throws {
        let s = try srv()
        let user = try s.signUp()
        let missing = try s.request("GET", "/v1/users/me")
        XCTAssertEqual(missing.status, 401)
        XCTAssertTrue((missing.header("WWW-Authenticate") ?? "").hasPrefix("Bearer"))
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: "garbage").status, 401)
        let parts = user.token.split(separator: ".")
        let none = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.\(parts[1])."
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: none).status, 401)
        let tampered = String(user.token.dropLast(4)) + (user.token.hasSuffix("AAAA") ? "BBBB" : "AAAA")
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: tampered).status, 401)
    }

    func testUsersSeeOnlyTheirOwnData() throws {
        let s = try srv()
        let a = try s.signUp()
        let b = try s.signUp()
        let r = try s.request("GET", "/v1/users/\(a.id)", token: b.token)
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(r.json?["code"]?.stringValue, "permission_denied")
        XCTAssertEqual(try s.request("GET", "/v1/water_logs/\(a.id)/entries", token: b.token).status, 403)
    }

    func testProfileMergePatchAndValidation() throws {
        let s = try srv()
        let u = try s.signUp()
        let r = try s.request(
            "PATCH", "/v1/users/me", json: ["displayName": "Ayşe", "weightKg": 62.5, "timezone": "Europe/Kiev"],
            token: u.token)
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertEqual(r.json?["timezone"]?.stringValue, "Europe/Kiev")
        XCTAssertEqual(r.json?["recommendedGoalMl"]?.int64Value, 2400)
        let bad = try s.request(
            "PATCH", "/v1/users/me",
            json: ["timezone": "GMT+3", "wakeTime": "25:00", "cupSizesMl": [10], "email": "x@y.z"],
            token: u.token)
        XCTAssertEqual(bad.status, 422)
        let pointers = Set((bad.json?["errors"]?.arrayValue ?? []).compactMap { $0["pointer"]?.stringValue })
        XCTAssertEqual(pointers, ["/timezone", "/wakeTime", "/cupSizesMl/0", "/email"])
        let merge = try s.request(
            "PATCH", "/v1/users/me", body: Array(#"{"weightKg": null}"#.utf8),
            token: u.token, headers: [("Content-Type", "application/merge-patch+json")])
        XCTAssertEqual(merge.status, 200)
        XCTAssertEqual(merge.json?["weightKg"], .null)
        XCTAssertEqual(merge.json?["displayName"]?.stringValue, "Ayşe")
    }

    func testAdminKeysFromTheCLI() throws {
        let s = try srv()
        let u = try s.signUp()
        let (status, key, _) = try TestServer.runCLI([
            "admin-key", "create", "--name", "ops-\(UUID().uuidString.prefix(6))",
            "--data-dir", s.dataDir,
        ])
        XCTAssertEqual(status, 0)
        let adminKey = key.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(adminKey.hasPrefix("sk_admin_"))
        let list = try s.request("GET", "/v1/admin/users?email=\(u.email)", token: adminKey)
        XCTAssertEqual(list.status, 200, list.text)
        XCTAssertEqual(list.json?["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue }, [u.id])
        XCTAssertEqual(try s.request("GET", "/v1/water_logs/\(u.id)/entries", token: adminKey).status, 200)
        XCTAssertEqual(try s.request("GET", "/v1/water_logs/me/entries", token: adminKey).status, 400)
        XCTAssertEqual(try s.request("GET", "/v1/admin/users", token: u.token).status, 403)
    }
}
