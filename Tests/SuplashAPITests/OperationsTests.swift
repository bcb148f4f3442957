import Foundation
import XCTest

/// CLI, migrations and process lifecycle (docs/operations.md).
final class OperationsTests: XCTestCase {
    func testSigtermDrainsAndExitsZero() throws {
        let server = try TestServer()
        XCTAssertEqual(try server.request("GET", "/healthz").status, 200)
        XCTAssertEqual(server.stop(), 0)
        XCTAssertTrue(server.serverLog.contains("\"event\":\"stopped\""), server.serverLog)
    }

    func testLogsCarryNoUserContent() throws {
        let server = try TestServer()
        let u = try server.signUp(password: "secret-password-xyz")
        _ = try server.request(
            "POST", "/v1/water_logs/me/entries",
            json: ["amountMl": 250, "loggedAt": .string(rfc3339(Date())), "note": "private-note-text"],
            token: u.token)
        server.stop()
        let log = server.serverLog
        XCTAssertTrue(log.contains("/v1/water_logs/{uid}/entries"), "route templates are logged")
        for secret in [u.email, "secret-password-xyz", "private-note-text", u.token, u.id] {
            XCTAssertFalse(log.contains(secret), "log leaks user content")
        }
    }

    func testChangedMigrationChecksumRefusesStart() throws {
        let data = TestServer.makeDataDir()
        let migrations = data + "/migrations"
        try FileManager.default.copyItem(atPath: TestServer.packageRoot + "/Migrations/sqlite", toPath: migrations)
        let env = ["SUPLASH_STORAGE_MIGRATIONS_DIR": migrations]
        let (ok, out, _) = try TestServer.runCLI(["migrate", "--data-dir", data], environment: env)
        XCTAssertEqual(ok, 0)
        XCTAssertTrue(out.contains("schema at version"))
        let file = migrations + "/0001_initial.sql"
        let original = try String(contentsOfFile: file, encoding: .utf8)
        try (original + "\n-- edited after it was applied\n").write(toFile: file, atomically: true, encoding: .utf8)
        let (status, _, err) = try TestServer.runCLI(["migrate", "--data-dir", data], environment: env)
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(err.contains("checksum") && err.contains("initial"), err)
        let (serveStatus, _, _) = try TestServer.runCLI(["serve", "--port", "0", "--data-dir", data], environment: env)
        XCTAssertNotEqual(serveStatus, 0)
    }

    func testRevokedAdminKeyStopsWorkingWithinASecond() throws {
        let server = try TestServer()
        let (_, key, _) = try TestServer.runCLI(["admin-key", "create", "--name", "temp", "--data-dir", server.dataDir])
        let adminKey = key.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try server.request("GET", "/v1/admin/users", token: adminKey).status, 200)
        let (listStatus, listing, _) = try TestServer.runCLI(["admin-key", "list", "--data-dir", server.dataDir])
        XCTAssertEqual(listStatus, 0)
        XCTAssertTrue(listing.contains("temp"))
        XCTAssertFalse(listing.contains(adminKey), "keys are shown once, never listed")
        XCTAssertEqual(try TestServer.runCLI(["admin-key", "revoke", "temp", "--data-dir", server.dataDir]).0, 0)
        Thread.sleep(forTimeInterval: 1.0)
        XCTAssertEqual(try server.request("GET", "/v1/admin/users", token: adminKey).status, 401)
        server.stop()
    }

    func testConfigurationKeysMapToEnvironmentNames() throws {
        // Unknown SUPLASH_* names are ignored; a bad value for a known key is refused.
        let data = TestServer.makeDataDir()
        let (ok, _, _) = try TestServer.runCLI(["migrate", "--data-dir", data], environment: ["SUPLASH_NOT_A_KEY": "x"])
        XCTAssertEqual(ok, 0)
        let (bad, _, err) = try TestServer.runCLI(["migrate", "--data-dir", data], environment: ["SUPLASH_STORAGE_READERS": "many"])
        XCTAssertNotEqual(bad, 0)
        XCTAssertTrue(err.contains("storage.readers"), err)
    }
}

/// `config/suplash.json` documents exactly the built-in defaults.
final class ConfigurationFileTests: XCTestCase {
    /// `ratelimit.store`: `database` needs PostgreSQL (SQLite is one process); unknown values
    /// are refused at start-up.
    func testRateLimitStoreIsCheckedAtStartUp() throws {
        let (status, _, err) = try TestServer.runCLI(
            ["serve", "--port", "0", "--data-dir", TestServer.makeDataDir()],
            environment: ["SUPLASH_RATELIMIT_STORE": "database"])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(err.contains("ratelimit.store=database needs storage.driver=postgres"), err)
        let (bad, _, err2) = try TestServer.runCLI(
            ["serve", "--port", "0", "--data-dir", TestServer.makeDataDir()],
            environment: ["SUPLASH_RATELIMIT_STORE": "redis"])
        XCTAssertNotEqual(bad, 0)
        XCTAssertTrue(err2.contains("ratelimit.store must be"), err2)
    }

    func testShippedConfigFileEqualsTheBuiltInDefaults() throws {
        let (s1, effective, e1) = try TestServer.runCLI(["config"], environment: [:])
        let (s2, defaults, e2) = try TestServer.runCLI(["config", "defaults"], environment: [:])
        XCTAssertEqual(s1, 0, e1)
        XCTAssertEqual(s2, 0, e2)
        XCTAssertEqual(effective, defaults)
        XCTAssertTrue(defaults.contains("\"ratelimit\""))
    }

    func testEnvironmentOverridesAKey() throws {
        let (_, out, _) = try TestServer.runCLI(["config"], environment: ["SUPLASH_RATELIMIT_USER_PER_MINUTE": "7"])
        XCTAssertTrue(out.contains("\"userPerMinute\":7"), out)
    }
}

/// Spec §7 privacy: markers planted in every kind of user content never reach the log.
final class LogPrivacyTests: XCTestCase {
    func testMarkersInUserContentNeverReachTheLog() throws {
        let server = try TestServer(environment: ["SUPLASH_LOG_LEVEL": "debug"])
        let marker = "mk\(UUID().uuidString.prefix(8).lowercased())"
        let email = "\(marker)-mail@example.test"
        let password = "\(marker)-password"
        let signup = try server.request(
            "POST", "/v1/auth/signup",
            json: [
                "email": .string(email), "password": .string(password),
                "displayName": .string("\(marker)-name"),
            ])
        XCTAssertEqual(signup.status, 201)
        let token = try XCTUnwrap(signup.json?["session"]?["accessToken"]?.stringValue)
        let refresh = try XCTUnwrap(signup.json?["session"]?["refreshToken"]?.stringValue)
        let device = UUID().uuidString
        _ = try server.request("POST", "/v1/auth/login", json: ["email": .string(email), "password": .string(password)])
        _ = try server.request("POST", "/v1/auth/login", json: ["email": .string(email), "password": .string("\(marker)-wrong")])
        _ = try server.request("PATCH", "/v1/users/me", json: ["displayName": .string("\(marker)-renamed")], token: token)
        let entry = try server.request(
            "POST", "/v1/water_logs/me/entries",
            json: [
                "amountMl": 250, "loggedAt": .string(rfc3339(Date())),
                "note": .string("\(marker)-note"),
            ],
            token: token, headers: [("X-Device-ID", device), ("Idempotency-Key", "\(marker)-key")])
        let entryID = entry.json?["id"]?.stringValue ?? ""
        _ = try server.request(
            "PATCH", "/v1/water_logs/me/entries/\(entryID)", json: ["note": .string("\(marker)-note2")],
            token: token)
        _ = try server.request(
            "POST", "/v1/water_logs/me/entries:batch",
            json: [
                "entries": [
                    [
                        "amountMl": 100, "loggedAt": .string(rfc3339(Date())),
                        "note": .string("\(marker)-batch"),
                    ]
                ]
            ], token: token)
        _ = try server.request(
            "POST", "/v1/water_logs/me/entries", json: ["amountMl": 1, "note": .string("\(marker)-bad")],
            token: token)
        _ = try server.request(
            "POST", "/v1/sync",
            json: [
                "mutations": [
                    [
                        "collection": "water_entries", "id": .string(UUID().uuidString),
                        "op": "upsert", "clientUpdatedAt": .string(rfc3339(Date())),
                        "data": [
                            "amountMl": 200, "loggedAt": .string(rfc3339(Date())),
                            "note": .string("\(marker)-sync"),
                        ],
                    ]
                ]
            ],
            token: token, headers: [("X-Device-ID", device)])
        let bill = try server.request(
            "POST", "/v1/invoices/me/bills",
            json: [
                "provider": "ISKI", "subscriberNo": .string("\(marker)-sub"), "period": "2026-10",
                "consumptionM3": 12.5, "amountMinor": 60000, "dueDate": "2026-11-20",
            ],
            token: token)
        XCTAssertEqual(bill.status, 201, bill.text)
        _ = try server.request("GET", "/v1/invoices/me/estimate?provider=ISKI&subscriberNo=\(marker)-sub", token: token)
        _ = try server.request("GET", "/v1/users/me/export", token: token)
        _ = try server.request("GET", "/v1/water_logs/me/entries?from=\(marker)", token: token)
        _ = try server.request("POST", "/v1/auth/password/forgot", json: ["email": .string(email)])
        _ = try server.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(refresh)])
        _ = try server.request("GET", "/v1/users/me", token: "\(marker)-not-a-token")
        _ = try server.request("GET", "/v1/\(marker)-no-such-route")
        server.stop()
        let log = server.serverLog
        XCTAssertTrue(log.contains("\"event\":\"request\""), "requests are logged")
        XCTAssertFalse(log.contains(marker), "a user-supplied marker reached the log")
        for secret in [token, refresh, entryID] where !secret.isEmpty {
            XCTAssertFalse(log.contains(secret), "a token or document id reached the log")
        }
    }
}

/// `suplash-server backup --to FILE` while a server runs on the same data dir.
final class BackupCommandTests: XCTestCase {
    func testOnlineBackupFromTheCLIHoldsTheData() throws {
        let server = try TestServer()
        let u = try server.signUp()
        XCTAssertEqual(
            try server.request(
                "POST", "/v1/water_logs/me/entries",
                json: ["amountMl": 250, "loggedAt": .string(rfc3339(Date()))], token: u.token
            ).status, 201)
        let destination = TestServer.makeDataDir() + "/snapshot.sqlite"
        let (status, out, err) = try TestServer.runCLI(["backup", "--to", destination, "--data-dir", server.dataDir])
        XCTAssertEqual(status, 0, err)
        XCTAssertTrue(out.contains("bytes"))
        let (again, _, _) = try TestServer.runCLI(["backup", "--to", destination, "--data-dir", server.dataDir])
        XCTAssertNotEqual(again, 0, "an existing file is never overwritten")
        server.stop()
        // The snapshot is a working data dir: a server started on it sees the user.
        let restoredDir = TestServer.makeDataDir()
        try FileManager.default.copyItem(atPath: destination, toPath: restoredDir + "/suplash.sqlite")
        try FileManager.default.copyItem(atPath: server.dataDir + "/jwt-secret", toPath: restoredDir + "/jwt-secret")
        let restored = try TestServer(dataDir: restoredDir)
        let login = try restored.request(
            "POST", "/v1/auth/login",
            json: ["email": .string(u.email), "password": "correct horse battery"])
        XCTAssertEqual(login.status, 200)
        let token = try XCTUnwrap(login.json?["session"]?["accessToken"]?.stringValue)
        XCTAssertEqual(try restored.request("GET", "/v1/water_logs/me/entries", token: token).json?["entries"]?.arrayValue?.count, 1)
        restored.stop()
    }
}

/// CORS is off by default; configured origins get the Fetch-standard headers and preflights.
final class CORSTests: XCTestCase {
    func testCORSIsOffByDefaultAndExactWhenConfigured() throws {
        let plain = try TestServer()
        let off = try plain.request("GET", "/healthz", headers: [("Origin", "https://app.suplash.test")])
        XCTAssertNil(off.header("Access-Control-Allow-Origin"))
        plain.stop()

        let server = try TestServer(environment: ["SUPLASH_SERVER_CORS_ORIGINS": "https://app.suplash.test"])
        let allowed = try server.request("GET", "/healthz", headers: [("Origin", "https://app.suplash.test")])
        XCTAssertEqual(allowed.header("Access-Control-Allow-Origin"), "https://app.suplash.test")
        XCTAssertTrue((allowed.header("Access-Control-Expose-Headers") ?? "").contains("ETag"))
        let other = try server.request("GET", "/healthz", headers: [("Origin", "https://evil.test")])
        XCTAssertNil(other.header("Access-Control-Allow-Origin"))
        let preflight = try server.request(
            "OPTIONS", "/v1/water_logs/me/entries",
            headers: [
                ("Origin", "https://app.suplash.test"),
                ("Access-Control-Request-Method", "POST"),
            ])
        XCTAssertEqual(preflight.status, 204)
        XCTAssertTrue((preflight.header("Access-Control-Allow-Methods") ?? "").contains("POST"))
        XCTAssertTrue((preflight.header("Access-Control-Allow-Headers") ?? "").contains("Idempotency-Key"))
        let refused = try server.request(
            "OPTIONS", "/v1/water_logs/me/entries",
            headers: [("Origin", "https://evil.test"), ("Access-Control-Request-Method", "POST")])
        XCTAssertEqual(refused.status, 405)
        server.stop()
    }
}
