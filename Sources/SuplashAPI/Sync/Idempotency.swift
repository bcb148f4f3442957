import Foundation
import SuplashCrypto
import SuplashDomain
import SuplashHTTP

/// Idempotency-Key handling (spec §7), applied once in `Application`'s dispatch for POST,
/// PATCH and DELETE (sync push and `/v1/auth/*` included).
///
/// Completed responses are persisted (`IdempotencyRepository`, table `idempotency_records`),
/// so a retry after a restart — or on another instance — replays. The "still running"
/// marker lives either in memory (`sharedClaims: false`: one process, the SQLite default;
/// no extra write per keyed request) or in the repository (`sharedClaims: true`: several
/// instances on one PostgreSQL database; a claim row with a lease of `leaseMillis`, so a
/// crashed instance's claim expires). The HTTP answers are the same either way.
///
/// `@unchecked Sendable`: `running` is guarded by `lock`.
public final class IdempotencyGuard: @unchecked Sendable {
    /// Retention of stored responses: 24 h, in ms.
    public static let retentionMillis: Int64 = 24 * 3600 * 1000
    /// Retention on `/v1/auth/*`: 5 min, in ms.
    public static let authRetentionMillis: Int64 = 5 * 60 * 1000
    /// Default lease of a claim in the repository: 60 s, in ms. A request still running
    /// after its lease may be run a second time by a retry (handlers finish far sooner: the
    /// longest, signup, waits at most 2 s for mail).
    public static let defaultLeaseMillis: Int64 = 60 * 1000
    /// Response headers stored and replayed.
    static let replayedHeaders = ["Content-Type", "Location", "Content-Location", "ETag"]

    private let repository: any IdempotencyRepository
    private let sharedClaims: Bool
    private let leaseMillis: Int64
    private let lock = NSLock()
    private var running: Set<String> = []

    /// - Parameters:
    ///   - sharedClaims: keep the "still running" claim in `repository` (several instances)
    ///     instead of in memory (one process).
    ///   - leaseMillis: how long a repository claim holds, in ms.
    public init(
        repository: any IdempotencyRepository, sharedClaims: Bool = false,
        leaseMillis: Int64 = IdempotencyGuard.defaultLeaseMillis
    ) {
        self.repository = repository
        self.sharedClaims = sharedClaims
        self.leaseMillis = max(1, leaseMillis)
    }

    /// What to do with a keyed request.
    enum Decision {
        /// Run the handler, then `complete` (or `abandon`) with `claim` (the repository
        /// claim's token; nil for an in-memory claim).
        case proceed(claim: Int64?)
        /// Answer with the stored response.
        case replay(HTTPResponse)
    }

    /// Validates an `Idempotency-Key` value: 1–255 visible ASCII characters.
    /// - Throws: 400 `invalid_idempotency_key`.
    static func validate(_ key: String) throws(APIError) -> String {
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError.badRequest(.invalidIdempotencyKey, "Idempotency-Key must be 1 to 255 visible ASCII characters.")
        }
        return key
    }

    /// SHA-256 over method, path and SHA-256(body).
    static func fingerprint(method: String, path: String, body: [UInt8]) -> [UInt8] {
        SHA256.hash(Array("\(method) \(path)\n".utf8) + SHA256.hash(body))
    }

    /// Starts a keyed request.
    /// - Throws: 409 `idempotency_key_in_use` while the same key runs; 422
    ///   `idempotency_key_mismatch` when the stored request differs; storage errors.
    func begin(caller: String, key: String, fingerprint: [UInt8], now: Int64) throws -> Decision {
        if sharedClaims {
            switch try repository.claimIdempotencyKey(
                caller: caller, key: key, fingerprint: fingerprint, now: now,
                leaseUntil: now + leaseMillis)
            {
            case .claimed(let token): return .proceed(claim: token)
            case .running: throw Self.inUse
            case .completed(let record): return .replay(try Self.replay(record, fingerprint: fingerprint))
            }
        }
        let slot = caller + "\u{0}" + key
        let claimed = lock.withLock { running.insert(slot).inserted }
        guard claimed else { throw Self.inUse }
        do {
            if let record = try repository.idempotencyRecord(caller: caller, key: key, now: now) {
                release(slot)
                return .replay(try Self.replay(record, fingerprint: fingerprint))
            }
        } catch {
            release(slot)
            throw error
        }
        return .proceed(claim: nil)
    }

    private static var inUse: APIError {
        APIError.conflict(.idempotencyKeyInUse, "A request with this Idempotency-Key is still running.")
    }

    /// The stored response, or 422 when `record` was stored for another request.
    private static func replay(_ record: IdempotencyRecord, fingerprint: [UInt8]) throws(APIError) -> HTTPResponse {
        guard constantTimeEquals(record.fingerprint, fingerprint) else {
            throw APIError(.idempotencyKeyMismatch, detail: "This Idempotency-Key was used for another request.")
        }
        var response = HTTPResponse(status: record.status, body: record.body)
        for pair in record.headers where pair.count == 2 { response.headers.add(name: pair[0], value: pair[1]) }
        response.headers.add(name: "Idempotent-Replayed", value: "true")
        return response
    }

    /// Stores the handler's response (not 5xx, 429 or 409 `idempotency_key_in_use`, which a
    /// retry should re-run) and releases the key.
    func complete(
        caller: String, key: String, fingerprint: [UInt8], claim: Int64?, response: HTTPResponse,
        path: String, now: Int64
    ) {
        guard response.status < 500, response.status != 429 else {
            abandon(caller: caller, key: key, claim: claim)
            return
        }
        let retention = path.hasPrefix("/v1/auth/") ? Self.authRetentionMillis : Self.retentionMillis
        var headers: [[String]] = []
        for name in Self.replayedHeaders {
            if let value = response.headers.first(name: name) { headers.append([name, value]) }
        }
        let record = IdempotencyRecord(
            fingerprint: fingerprint, status: response.status, headers: headers,
            body: response.body, expiresAt: now + retention)
        if let claim {
            // A failed save leaves the claim until its lease ends (retries get 409 until
            // then, and run again after); try to drop it at once.
            do {
                try repository.completeIdempotencyKey(caller: caller, key: key, token: claim, record: record)
            } catch {
                abandon(caller: caller, key: key, claim: claim)
            }
            return
        }
        defer { release(caller + "\u{0}" + key) }
        // A failed save only means a later retry re-runs the request.
        try? repository.saveIdempotencyRecord(caller: caller, key: key, record: record, now: now)
    }

    /// Releases a key whose handler did not complete (a retry will run it again).
    func abandon(caller: String, key: String, claim: Int64?) {
        if let claim {
            // On failure the claim simply expires with its lease.
            try? repository.abandonIdempotencyKey(caller: caller, key: key, token: claim)
        } else {
            release(caller + "\u{0}" + key)
        }
    }

    private func release(_ slot: String) {
        _ = lock.withLock { running.remove(slot) }
    }
}
