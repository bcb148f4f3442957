import Foundation
import SuplashDomain
import SuplashHTTP
import XCTest

@testable import SuplashAPI

/// The in-memory state each instance keeps, as the PostgreSQL cluster listener drives it:
/// a resync merges the database's revocations, wakes every long poll, and forgets the
/// admin-key snapshot.
final class ClusterStateTests: XCTestCase {
    func testMergeAddsDatabaseRevocationsAndKeepsLocalOnes() {
        let view = RevocationView(revokedSessions: ["s1"], revokedUsers: [])
        view.revoke(sessionID: "s2")
        view.revokeUser("u9", issuedBefore: 100)
        view.merge(revokedSessions: ["s3"], revokedUsers: ["u1"])
        XCTAssertTrue(view.isRevoked(sessionID: "s1"))
        XCTAssertTrue(view.isRevoked(sessionID: "s2"), "a revocation heard before the resync stays")
        XCTAssertTrue(view.isRevoked(sessionID: "s3"))
        XCTAssertTrue(view.isRevoked(userID: "u1"))
        XCTAssertTrue(view.isRevoked(userID: "u9", issuedAt: 99))
        XCTAssertFalse(view.isRevoked(sessionID: "s4"))
        XCTAssertFalse(view.isRevoked(userID: "u2"))
    }

    func testWakeAllWakesEveryWaiterOnceAndEmptiesTheRegistry() {
        let registry = LongPollRegistry()
        let a1 = FakeWaiter()
        let a2 = FakeWaiter()
        let b = FakeWaiter()
        registry.add(a1, userID: "a")
        registry.add(a2, userID: "a")
        registry.add(b, userID: "b")
        registry.wakeAll()
        registry.wakeAll()
        XCTAssertEqual([a1.wakes, a2.wakes, b.wakes], [1, 1, 1])
        XCTAssertEqual(registry.waitingCount, 0)
    }

    func request(token: String, now: Int64) throws -> APIRequest {
        let head = HTTPRequestHead(
            method: "GET", target: "/v1/users/me", path: "/v1/users/me", query: nil, version: .http1_1,
            headers: ["Authorization": "Bearer " + token])
        return try APIRequest(
            http: HTTPRequest(head: head, body: [], requestID: "r", remoteAddress: "127.0.0.1"),
            parameters: [:], route: "/v1/users/{uid}", now: now)
    }

    /// With a session check (PostgreSQL), a token whose session the database no longer holds
    /// live is refused even though this instance's view has not heard of the revocation yet.
    func testSessionCheckRefusesWhatTheViewHasNotHeardOf() throws {
        let tokens = TokenService(secret: [UInt8](repeating: 7, count: 32))
        let now: Int64 = 1_790_000_000_000
        let live = Locked(Set(["s-live"]))
        struct Down: Error {}
        let failing = Locked(false)
        let view = RevocationView()
        let auth = Authenticator(
            tokens: tokens, revocations: view, adminKeys: AdminKeyCache(repository: FakeAdminKeys()),
            sessionCheck: { session, user in
                if failing.current { throw Down() }
                return user == "u1" && live.current.contains(session)
            })
        let good = tokens.accessToken(userID: "u1", sessionID: "s-live", now: now)
        let gone = tokens.accessToken(userID: "u1", sessionID: "s-gone", now: now)
        guard case .user(let id, let session) = try auth.authenticate(try request(token: good, now: now)) else {
            return XCTFail("not a user")
        }
        XCTAssertEqual([id, session], ["u1", "s-live"])
        XCTAssertThrowsError(try auth.authenticate(try request(token: gone, now: now))) { error in
            XCTAssertEqual((error as? APIError)?.status, 401)
        }
        XCTAssertTrue(view.isRevoked(sessionID: "s-gone"), "the refusal enters the view")
        failing.withLock { $0 = true }
        XCTAssertThrowsError(try auth.authenticate(try request(token: good, now: now))) { error in
            XCTAssertEqual((error as? APIError)?.status, 503)
        }
    }

    func testInvalidatedAdminKeyCacheRereadsAtOnce() throws {
        let keys = FakeAdminKeys()
        let (key, hash) = AdminKeyFormat.generate()
        try keys.createAdminKey(name: "ops", keyHash: hash, now: 0)
        // A snapshot that would otherwise be used for an hour.
        let cache = AdminKeyCache(repository: keys, maxAge: 3600)
        XCTAssertEqual(try cache.name(forKey: key), "ops")
        XCTAssertTrue(try keys.revokeAdminKey(name: "ops", now: 1))
        XCTAssertEqual(try cache.name(forKey: key), "ops", "the snapshot is still fresh")
        cache.invalidate()
        XCTAssertNil(try cache.name(forKey: key))
    }
}

/// A value shared between threads of a test. `@unchecked Sendable`: `value` is guarded by `lock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
    var current: Value { lock.withLock { value } }
}

/// Admin keys in memory. `@unchecked Sendable`: `records` is guarded by `lock`.
final class FakeAdminKeys: AdminKeyRepository, @unchecked Sendable {
    private let lock = NSLock()
    private var records: [(name: String, hash: [UInt8], revoked: Bool)] = []

    func createAdminKey(name: String, keyHash: [UInt8], now: Int64) throws {
        lock.withLock { records.append((name, keyHash, false)) }
    }

    func adminKeys() throws -> [AdminKeyRecord] {
        lock.withLock { records.map { AdminKeyRecord(name: $0.name, createdAt: 0, revokedAt: $0.revoked ? 1 : nil) } }
    }

    func revokeAdminKey(name: String, now: Int64) throws -> Bool {
        lock.withLock {
            guard let i = records.firstIndex(where: { $0.name == name && !$0.revoked }) else { return false }
            records[i].revoked = true
            return true
        }
    }

    func activeAdminKeyHashes() throws -> [(hash: [UInt8], name: String)] {
        lock.withLock { records.filter { !$0.revoked }.map { ($0.hash, $0.name) } }
    }
}
