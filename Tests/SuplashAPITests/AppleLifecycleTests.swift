import Foundation
import SuplashCrypto
import SuplashJSON
import SuplashStorage
import XCTest

/// Sign in with Apple's lifecycle against the real server and the mock of Apple's token,
/// revoke and key endpoints (`scripts/with-apple-mock`, Tests/Mocks/apple_id_mock.py): the
/// code exchange, the sealed refresh token (never in plaintext in the data dir), revocation
/// on deletion (retried past 500s), Apple's account events, the start-up refusal without the
/// sealing key and `reseal` (spec §3, §9; docs/apple.md). Skipped without the mock.
final class AppleLifecycleTests: XCTestCase {
    static let audience = "app.suplash.ios"
    nonisolated(unsafe) static var server: TestServer?
    nonisolated(unsafe) static var mock: JSONValue?
    nonisolated(unsafe) static var environment: [String: String] = [:]
    nonisolated(unsafe) static var keyFile = ""

    static func writeKey(_ path: String) {
        _ = FileManager.default.createFile(
            atPath: path, contents: Data(SecureRandom.bytes(32)), attributes: [.posixPermissions: 0o600])
    }

    override class func setUp() {
        guard let dir = ProcessInfo.processInfo.environment["SUPLASH_TEST_APPLE_MOCK"],
            let data = FileManager.default.contents(atPath: dir + "/mock.json"),
            let info = try? JSONParser.parse(Array(data))
        else { return }
        mock = info
        let tls = info["tlsPort"]?.int64Value ?? 0
        let http = info["httpPort"]?.int64Value ?? 0
        keyFile = TestServer.makeDataDir() + "/sealing.key"
        writeKey(keyFile)
        environment = [
            "SUPLASH_APPLE_JWKS_URL": "http://127.0.0.1:\(http)/auth/keys",
            "SUPLASH_APPLE_AUDIENCES": audience,
            "SUPLASH_APPLE_TEAM_ID": info["teamId"]?.stringValue ?? "",
            "SUPLASH_APPLE_KEY_ID": info["keyId"]?.stringValue ?? "",
            "SUPLASH_APPLE_PRIVATE_KEY_FILE": info["keyFile"]?.stringValue ?? "",
            "SUPLASH_APPLE_CA_FILE": info["caFile"]?.stringValue ?? "",
            "SUPLASH_APPLE_TOKEN_URL": "https://127.0.0.1:\(tls)/auth/token",
            "SUPLASH_APPLE_REVOKE_URL": "https://127.0.0.1:\(tls)/auth/revoke",
            "SUPLASH_APPLE_REVOKE_RETRY_BASE_SECONDS": "1",
            "SUPLASH_SECURITY_SEALING_KEY_FILE": keyFile,
        ]
        server = try? TestServer(environment: environment)
    }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer {
        guard Self.mock != nil else { throw XCTSkip("needs the Apple mock: scripts/with-apple-mock") }
        return try XCTUnwrap(Self.server, "server did not start")
    }

    var now: Int64 { Int64(Date().timeIntervalSince1970) }
    var mockPort: Int { Int(Self.mock?["httpPort"]?.int64Value ?? 0) }

    /// A JWS of `claims` signed by the mock's Apple key (or, `forge`, another key with its kid).
    func sign(_ claims: JSONValue, forge: Bool = false) throws -> String {
        _ = try srv()
        let r = try HTTPTestClient.request(
            port: mockPort, "POST", "/test/sign", json: .object([("claims", claims), ("forge", .bool(forge))]))
        return try XCTUnwrap(r.json?["jws"]?.stringValue)
    }

    func mockState() throws -> JSONValue { try XCTUnwrap(HTTPTestClient.request(port: mockPort, "GET", "/test/state").json) }

    func revokedTags() throws -> [String] { try mockState()["revokedTags"]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    /// Waits (up to 30 s) until the mock has revoked a token of `tag`.
    func waitForRevocation(_ tag: String) throws -> Bool {
        let deadline = Date(timeIntervalSinceNow: 30)
        while Date() < deadline {
            if try revokedTags().contains(tag) { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    func identityToken(sub: String, email: String? = nil) throws -> String {
        var claims: [(String, JSONValue)] = [
            ("iss", "https://appleid.apple.com"), ("aud", .string(Self.audience)), ("exp", .int(now + 600)),
            ("iat", .int(now)), ("sub", .string(sub)),
        ]
        if let email { claims += [("email", .string(email)), ("email_verified", "true")] }
        return try sign(.object(claims))
    }

    /// Signs in as `sub`; `code` is issued to `sub` (the mock's `<code>~<sub>`) unless it names
    /// its Apple user itself.
    func signIn(sub: String, code: String? = nil, email: String? = nil) throws -> TestResponse {
        var body: [(String, JSONValue)] = [("identityToken", .string(try identityToken(sub: sub, email: email)))]
        if let code { body.append(("authorizationCode", .string(code.contains("~") ? code : "\(code)~\(sub)"))) }
        return try srv().request("POST", "/v1/auth/apple", json: .object(body))
    }

    func event(
        _ type: String, sub: String, email: String? = nil, jti: String = UUID().uuidString, aud: String = audience,
        eventTime: Int64? = nil
    ) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("type", .string(type)), ("sub", .string(sub)), ("event_time", .int(eventTime ?? now * 1000)),
        ]
        if let email { members += [("email", .string(email)), ("is_private_email", "true")] }
        let events = String(decoding: JSONValue.object(members).serialized(), as: UTF8.self)
        return .object([
            ("iss", "https://appleid.apple.com"), ("aud", .string(aud)), ("iat", .int(now)), ("jti", .string(jti)),
            ("events", .string(events)),
        ])
    }

    func notify(_ jws: String) throws -> TestResponse {
        try srv().request("POST", "/v1/apple/notifications", json: ["payload": .string(jws)])
    }

    func unique() -> String { UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "") }

    /// Every file under `dir` (database, WAL, backups) as bytes.
    func dataDirBytes(_ dir: String) -> [(String, [UInt8])] {
        let files = FileManager.default.enumerator(atPath: dir)?.compactMap { $0 as? String } ?? []
        return files.compactMap { name in FileManager.default.contents(atPath: dir + "/" + name).map { (name, Array($0)) } }
    }

    // MARK: Code exchange, sealing, revocation

    func testCodeExchangeSealsTheTokenAndDeletionRevokesIt() throws {
        let s = try srv()
        let tag = "plain" + unique().prefix(12)
        let sub = "000100.\(unique())"
        let r = try signIn(sub: sub, code: "\(tag).1")
        XCTAssertEqual(r.status, 201, r.text)
        let uid = try XCTUnwrap(r.json?["user"]?["id"]?.stringValue)
        let token = try XCTUnwrap(r.json?["session"]?["accessToken"]?.stringValue)
        // A backup while the server runs, then no file holds the refresh token (`rt.<tag>.…`) in plaintext.
        let backup = s.dataDir + "/backups/apple-test.sqlite"
        try FileManager.default.createDirectory(atPath: s.dataDir + "/backups", withIntermediateDirectories: true)
        let (status, _, err) = try TestServer.runCLI(["backup", "--to", backup, "--data-dir", s.dataDir])
        XCTAssertEqual(status, 0, err)
        let needle = Array("rt.\(tag)".utf8)
        let files = dataDirBytes(s.dataDir)
        XCTAssertTrue(files.contains { $0.0.hasSuffix("suplash.sqlite") }, "the database file was read")
        XCTAssertTrue(files.contains { $0.0.hasSuffix("apple-test.sqlite") }, "the backup was read")
        XCTAssertTrue(files.contains { $0.0.hasSuffix("suplash.sqlite-wal") }, "the WAL was read")
        // The sealed envelope is there (the value was stored), under the configured key's id.
        XCTAssertTrue(files.contains { $0.1.firstRange(of: Array("s1.".utf8)) != nil }, "an envelope is stored")
        for (name, bytes) in files {
            XCTAssertNil(bytes.firstRange(of: needle), "\(name) holds the Apple refresh token in plaintext")
            XCTAssertNil(bytes.firstRange(of: Array("\(tag).1".utf8)), "\(name) holds the authorization code")
        }
        // The export lists the Apple identity, without any token.
        let export = try s.request("GET", "/v1/users/\(uid)/export", token: token)
        XCTAssertEqual(export.status, 200, export.text)
        let identity = export.json?["appleIdentities"]?.arrayValue?.first
        XCTAssertEqual(identity?["sub"]?.stringValue, sub)
        XCTAssertEqual(identity?["clientId"]?.stringValue, Self.audience)
        XCTAssertEqual(identity?["refreshTokenKept"]?.boolValue, true)
        XCTAssertFalse(export.text.contains("rt.\(tag)") || export.text.contains("s1."), "no token, sealed or not")
        // The user deletes the account: 204 at once; the revoke job reaches Apple afterwards.
        XCTAssertEqual(try s.request("DELETE", "/v1/users/\(uid)", token: token).status, 204)
        XCTAssertTrue(try waitForRevocation(tag), "the refresh token was revoked at Apple")
        XCTAssertEqual(try mockState()["revokeAttempts"]?[tag]?.int64Value, 1)
        // The server's log holds no token, code or JWS, and no error-level line.
        let log = (try? String(contentsOfFile: s.stderrPath, encoding: .utf8)) ?? ""
        XCTAssertFalse(log.contains("rt.\(tag)") || log.contains("\(tag).1") || log.contains("eyJ"), log)
        XCTAssertFalse(log.contains("\"level\":\"error\""), log)
    }

    func testInvalidClientPausesRevokesUntilTheConfigurationIsFixed() throws {
        _ = try srv()
        let dir = TestServer.makeDataDir()
        let good = try TestServer(dataDir: dir, environment: Self.environment)
        let tag = "pause" + unique().prefix(8)
        let sub = "000900.\(unique())"
        let body: JSONValue = .object([
            ("identityToken", .string(try identityToken(sub: sub))), ("authorizationCode", .string("\(tag).1~\(sub)")),
        ])
        let r = try good.request("POST", "/v1/auth/apple", json: body)
        XCTAssertEqual(r.status, 201, r.text)
        let uid = try XCTUnwrap(r.json?["user"]?["id"]?.stringValue)
        let token = try XCTUnwrap(r.json?["session"]?["accessToken"]?.stringValue)
        good.stop()
        // A wrong team id: Apple answers invalid_client; the job pauses (a warning), never gives up.
        var wrong = Self.environment
        wrong["SUPLASH_APPLE_TEAM_ID"] = "WRONGTEAM1"
        wrong["SUPLASH_APPLE_CONFIGURATION_PAUSE_SECONDS"] = "1"
        let misconfigured = try TestServer(dataDir: dir, environment: wrong)
        XCTAssertEqual(try misconfigured.request("DELETE", "/v1/users/\(uid)", token: token).status, 204, "erasure never waits")
        let deadline = Date(timeIntervalSinceNow: 30)
        var log = ""
        while Date() < deadline, !log.contains("apple_revoke_paused") {
            Thread.sleep(forTimeInterval: 0.1)
            log = (try? String(contentsOfFile: misconfigured.stderrPath, encoding: .utf8)) ?? ""
        }
        XCTAssertTrue(log.contains("apple_revoke_paused") && log.contains("invalid_client"), log)
        XCTAssertFalse(log.contains("apple_revoke_given_up"), log)
        misconfigured.stop()
        XCTAssertNil(try mockState()["revokeAttempts"]?[tag], "Apple refused the client before looking at the token")
        // Fixed: the paused job is sent.
        let fixed = try TestServer(dataDir: dir, environment: Self.environment)
        defer { fixed.stop() }
        XCTAssertTrue(try waitForRevocation(tag), "the job resumed once the configuration was fixed")
    }

    func testACodeIssuedToAnotherAppleUserKeepsNoToken() throws {
        let s = try srv()
        let tag = "other" + unique().prefix(12)
        let sub = "000250.\(unique())"
        // Apple's answer names another Apple user in its id_token: that user's refresh token
        // must not be kept for this account (deleting it would revoke the other user's).
        let r = try signIn(sub: sub, code: "\(tag).1~000251.\(unique())")
        XCTAssertEqual(r.status, 201, r.text)
        let uid = try XCTUnwrap(r.json?["user"]?["id"]?.stringValue)
        let token = try XCTUnwrap(r.json?["session"]?["accessToken"]?.stringValue)
        let export = try s.request("GET", "/v1/users/\(uid)/export", token: token)
        XCTAssertEqual(export.json?["appleIdentities"]?.arrayValue?.first?["refreshTokenKept"]?.boolValue, false, export.text)
        // Apple's answer without a user in its id_token: nothing kept either.
        let tagless = "anon" + unique().prefix(12)
        let sub2 = "000252.\(unique())"
        let r2 = try signIn(sub: sub2, code: "\(tagless).1~")
        XCTAssertEqual(r2.status, 201, r2.text)
        let uid2 = try XCTUnwrap(r2.json?["user"]?["id"]?.stringValue)
        let token2 = try XCTUnwrap(r2.json?["session"]?["accessToken"]?.stringValue)
        let export2 = try s.request("GET", "/v1/users/\(uid2)/export", token: token2)
        XCTAssertEqual(export2.json?["appleIdentities"]?.arrayValue?.first?["refreshTokenKept"]?.boolValue, false, export2.text)
        let log = (try? String(contentsOfFile: s.stderrPath, encoding: .utf8)) ?? ""
        XCTAssertTrue(log.contains("subject_mismatch"), "the refusal is logged by its reason")
        XCTAssertFalse(log.contains("000251."), "the other Apple user is not logged")
    }

    func testAJobSealedUnderAKeyThisInstanceLacksWaitsInsteadOfGivingUp() throws {
        guard Self.mock != nil else { throw XCTSkip("needs the Apple mock: scripts/with-apple-mock") }
        // A rolling key rotation: another instance already seals with a new key this instance
        // has not been given yet. Its revoke job must wait for an instance that can open it.
        let dir = TestServer.makeDataDir()
        let own = try TestServer(dataDir: dir, environment: Self.environment)
        defer { _ = own.stop() }
        let newKey = dir + "/new-sealing.key"
        Self.writeKey(newKey)
        let sub = "000260.\(unique())"
        let envelope = try SealingKeyring.load(currentFile: newKey).seal(
            "rt.newkey.\(unique())", context: SealingContext(table: "apple_identities", column: "refresh_token", rowID: sub))
        let jobID = "1.\(sub)"
        do {
            let db = try SQLiteDatabase(path: dir + "/suplash.sqlite", readers: 1)
            defer { db.close() }
            _ = try db.write { context in
                try context.connection.run(
                    """
                    INSERT INTO apple_revoke_jobs (id, sub, client_id, refresh_token, created_at, attempts, next_attempt_at)
                    VALUES (?, ?, ?, ?, 1, 0, 1)
                    """, [.text(jobID), .text(sub), .text(Self.audience), .text(envelope)])
            }
        }
        // Another account's deletion wakes the revoke thread; its job is sent after the older one.
        let tag = "wake" + unique().prefix(8)
        let r = try own.request(
            "POST", "/v1/auth/apple",
            json: .object([
                ("identityToken", .string(try identityToken(sub: "000261.\(unique())"))),
                ("authorizationCode", .string("\(tag).1~000261.x")),
            ]))
        XCTAssertEqual(r.status, 201, r.text)
        let uid = try XCTUnwrap(r.json?["user"]?["id"]?.stringValue)
        let token = try XCTUnwrap(r.json?["session"]?["accessToken"]?.stringValue)
        XCTAssertEqual(try own.request("DELETE", "/v1/users/\(uid)", token: token).status, 204)
        let deadline = Date(timeIntervalSinceNow: 30)
        var log = ""
        while Date() < deadline, !log.contains("apple_revoke_token_unopenable") {
            Thread.sleep(forTimeInterval: 0.1)
            log = (try? String(contentsOfFile: own.stderrPath, encoding: .utf8)) ?? ""
        }
        XCTAssertTrue(log.contains("apple_revoke_token_unopenable"), log)
        XCTAssertEqual(own.stop(), 0)
        let db = try SQLiteDatabase(path: dir + "/suplash.sqlite", readers: 1)
        defer { db.close() }
        let row = try db.read { c in
            try c.query("SELECT failed_at, refresh_token FROM apple_revoke_jobs WHERE id = ?", [.text(jobID)]).first
        }
        XCTAssertTrue(row?["failed_at"].isNull ?? false, "not given up")
        XCTAssertEqual(row?["refresh_token"].text, envelope, "the sealed token is kept for an instance with the key")
    }

    func testARefusedCodeIs400AndStoresNothing() throws {
        let sub = "000200.\(unique())"
        let bad = try signIn(sub: sub, code: "bad.\(unique())")
        XCTAssertEqual(bad.status, 400, bad.text)
        XCTAssertEqual(bad.json?["code"]?.stringValue, "invalid_authorization_code")
        // Nothing was stored: the first successful sign-in creates the account.
        let code = "used\(unique().prefix(8)).1"
        XCTAssertEqual(try signIn(sub: sub, code: code).status, 201)
        // The same code again: Apple answers invalid_grant.
        let reused = try signIn(sub: sub, code: code)
        XCTAssertEqual(reused.status, 400)
        XCTAssertEqual(reused.json?["code"]?.stringValue, "invalid_authorization_code")
        // Apple down (500): the sign-in goes on without a refresh token.
        XCTAssertEqual(try signIn(sub: sub, code: "c500.\(unique())").status, 200)
    }

    func testRevokeIsRetriedPast500sFromTheAdminRoute() throws {
        let s = try srv()
        let tag = "fail2x" + unique().prefix(8)
        let r = try signIn(sub: "000300.\(unique())", code: "\(tag).1")
        XCTAssertEqual(r.status, 201, r.text)
        let uid = try XCTUnwrap(r.json?["user"]?["id"]?.stringValue)
        let (_, key, _) = try TestServer.runCLI(["admin-key", "create", "--name", "apple-\(unique().prefix(6))", "--data-dir", s.dataDir])
        let adminKey = key.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try s.request("DELETE", "/v1/admin/users/\(uid)", token: adminKey).status, 204)
        XCTAssertTrue(try waitForRevocation(tag), "revoked after two 500s")
        XCTAssertEqual(try mockState()["revokeAttempts"]?[tag]?.int64Value, 3)
        let metrics = try s.request("GET", "/metrics", token: adminKey).text
        XCTAssertTrue(metrics.contains("suplash_apple_revoke_attempts_total{outcome=\"retried\"}"), metrics)
    }

    // MARK: Account events

    func testConsentRevokedRevokesSessionsAndKeepsTheLink() throws {
        let s = try srv()
        let sub = "000400.\(unique())"
        let first = try signIn(sub: sub)
        let uid = try XCTUnwrap(first.json?["user"]?["id"]?.stringValue)
        let token = try XCTUnwrap(first.json?["session"]?["accessToken"]?.stringValue)
        let refresh = try XCTUnwrap(first.json?["session"]?["refreshToken"]?.stringValue)
        let jws = try sign(event("consent-revoked", sub: sub))
        XCTAssertEqual(try notify(jws).status, 200)
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: token).status, 401)
        XCTAssertEqual(try s.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(refresh)]).status, 401)
        // Signing in again finds the same account.
        let again = try signIn(sub: sub)
        XCTAssertEqual(again.json?["user"]?["id"]?.stringValue, uid)
        let fresh = try XCTUnwrap(again.json?["session"]?["accessToken"]?.stringValue)
        // The same notification again (Apple retries): 200, and it does not revoke the new session.
        XCTAssertEqual(try notify(jws).status, 200)
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: fresh).status, 200)
    }

    func testAccountDeleteErasesWithoutARevokeCall() throws {
        let s = try srv()
        let sub = "000500.\(unique())"
        let tag = "nodel" + unique().prefix(8)
        let r = try signIn(sub: sub, code: "\(tag).1")
        let token = try XCTUnwrap(r.json?["session"]?["accessToken"]?.stringValue)
        XCTAssertEqual(try notify(try sign(event("account-delete", sub: sub))).status, 200)
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: token).status, 401)
        // A later deletion's revoke job is sent; jobs go oldest first, so had the event queued
        // one, it would have been sent before this one.
        let laterTag = "later" + unique().prefix(8)
        let later = try signIn(sub: "000501.\(unique())", code: "\(laterTag).1")
        let laterID = try XCTUnwrap(later.json?["user"]?["id"]?.stringValue)
        let laterToken = try XCTUnwrap(later.json?["session"]?["accessToken"]?.stringValue)
        XCTAssertEqual(try s.request("DELETE", "/v1/users/\(laterID)", token: laterToken).status, 204)
        XCTAssertTrue(try waitForRevocation(laterTag))
        XCTAssertNil(try mockState()["revokeAttempts"]?[tag], "no revoke call for an account Apple deleted")
    }

    func testEmailDisabledHoldsMailUntilEmailEnabled() throws {
        let s = try srv()
        let sub = "000600.\(unique())"
        let email = "relay\(unique().prefix(10))@privaterelay.appleid.com"
        XCTAssertEqual(try signIn(sub: sub, email: email).status, 201)
        XCTAssertEqual(try notify(try sign(event("email-disabled", sub: sub, email: email))).status, 200)
        XCTAssertEqual(try s.request("POST", "/v1/auth/password/forgot", json: ["email": .string(email)]).status, 202)
        XCTAssertNil(MailFiles.latestCode(dataDir: s.dataDir, to: email, wait: 3), "mail to a held address waits")
        XCTAssertEqual(try notify(try sign(event("email-enabled", sub: sub, email: email))).status, 200)
        XCTAssertNotNil(MailFiles.latestCode(dataDir: s.dataDir, to: email, wait: 15), "released mail is sent")
    }

    func testAStaleEmailDisabledAfterEmailEnabledHoldsNothing() throws {
        let s = try srv()
        let sub = "000650.\(unique())"
        let email = "relay\(unique().prefix(10))@privaterelay.appleid.com"
        XCTAssertEqual(try signIn(sub: sub, email: email).status, 201)
        // Apple retries a failed delivery later: the user's older `email-disabled` arrives after
        // the newer `email-enabled`. The newer event decides: mail flows.
        let enabledAt = now * 1000
        XCTAssertEqual(try notify(try sign(event("email-enabled", sub: sub, email: email, eventTime: enabledAt))).status, 200)
        XCTAssertEqual(
            try notify(try sign(event("email-disabled", sub: sub, email: email, eventTime: enabledAt - 60_000))).status, 200)
        XCTAssertEqual(try s.request("POST", "/v1/auth/password/forgot", json: ["email": .string(email)]).status, 202)
        XCTAssertNotNil(MailFiles.latestCode(dataDir: s.dataDir, to: email, wait: 15), "a stale email-disabled holds nothing")
    }

    func testForgedMalformedAndUnknownNotifications() throws {
        let s = try srv()
        let sub = "000700.\(unique())"
        let r = try signIn(sub: sub)
        let token = try XCTUnwrap(r.json?["session"]?["accessToken"]?.stringValue)
        // Forged: another key under Apple's kid; another audience. 401 and nothing changes.
        for jws in [try sign(event("consent-revoked", sub: sub), forge: true), try sign(event("consent-revoked", sub: sub, aud: "x"))] {
            let answer = try notify(jws)
            XCTAssertEqual(answer.status, 401, answer.text)
            XCTAssertEqual(answer.json?["code"]?.stringValue, "unverified_apple_notification")
        }
        // Malformed: not a JWS; `events` not a JSON string; an unknown type. 400.
        var noEvents = event("consent-revoked", sub: sub)
        if case .object(var members) = noEvents {
            members.removeAll { $0.0 == "events" }
            members.append(("events", .object([("type", "consent-revoked"), ("sub", .string(sub))])))
            noEvents = .object(members)
        }
        for jws in ["not-a-jws", try sign(noEvents), try sign(event("other-type", sub: sub))] {
            let answer = try notify(jws)
            XCTAssertEqual(answer.status, 400, answer.text)
            XCTAssertEqual(answer.json?["code"]?.stringValue, "invalid_apple_notification")
        }
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: token).status, 200, "nothing changed")
        // An account this server does not know: 200 (Apple must not retry it).
        XCTAssertEqual(try notify(try sign(event("consent-revoked", sub: "unknown.\(unique())"))).status, 200)
    }

    // MARK: Start-up and key rotation

    func testStartupRefusesWithoutTheKeyAndResealMovesValuesToTheNewKey() throws {
        guard Self.mock != nil else { throw XCTSkip("needs the Apple mock: scripts/with-apple-mock") }
        let dir = TestServer.makeDataDir()
        var environment = Self.environment
        let own = try TestServer(dataDir: dir, environment: environment)
        let tag = "rot" + unique().prefix(8)
        let sub = "000800.\(unique())"
        let body: JSONValue = .object([
            ("identityToken", .string(try identityToken(sub: sub))), ("authorizationCode", .string("\(tag).1~\(sub)")),
        ])
        let r = try own.request("POST", "/v1/auth/apple", json: body)
        XCTAssertEqual(r.status, 201, r.text)
        let uid = try XCTUnwrap(r.json?["user"]?["id"]?.stringValue)
        let token = try XCTUnwrap(r.json?["session"]?["accessToken"]?.stringValue)
        own.stop()
        // Without the key: refused, exit 65, naming the setting.
        environment["SUPLASH_SECURITY_SEALING_KEY_FILE"] = ""
        environment["SUPLASH_APPLE_TEAM_ID"] = ""
        environment["SUPLASH_APPLE_KEY_ID"] = ""
        environment["SUPLASH_APPLE_PRIVATE_KEY_FILE"] = ""
        let (refused, _, message) = try TestServer.runCLI(
            ["serve", "--port", "0", "--data-dir", dir], environment: environment)
        XCTAssertEqual(refused, 65, message)
        XCTAssertTrue(message.contains("security.sealingKeyFile"), message)
        // Rotation: a new key, the old one listed as older; reseal moves the value.
        let newKey = dir + "/sealing-2.key"
        Self.writeKey(newKey)
        var rotated = Self.environment
        rotated["SUPLASH_SECURITY_SEALING_KEY_FILE"] = newKey
        rotated["SUPLASH_SECURITY_OLDER_SEALING_KEY_FILES"] = Self.keyFile
        let (resealStatus, out, err) = try TestServer.runCLI(["reseal", "--data-dir", dir], environment: rotated)
        XCTAssertEqual(resealStatus, 0, err)
        XCTAssertEqual(out.trimmingCharacters(in: .whitespacesAndNewlines), "resealed 1 of 1 sealed values")
        // The new key alone now opens everything: the server starts, and deletion revokes.
        rotated["SUPLASH_SECURITY_OLDER_SEALING_KEY_FILES"] = ""
        let restarted = try TestServer(dataDir: dir, environment: rotated)
        defer { restarted.stop() }
        XCTAssertEqual(try restarted.request("DELETE", "/v1/users/\(uid)", token: token).status, 204)
        XCTAssertTrue(try waitForRevocation(tag), "the resealed token opens with the new key and is revoked")
        // Logs hold no token, code or JWS.
        let log = (try? String(contentsOfFile: restarted.stderrPath, encoding: .utf8)) ?? ""
        XCTAssertFalse(log.contains("rt.\(tag)") || log.contains("\(tag).1") || log.contains("eyJ"), log)
    }
}
