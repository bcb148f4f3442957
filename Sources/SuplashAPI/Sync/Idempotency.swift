import Foundation
import SuplashCrypto
import SuplashDomain
import SuplashHTTP

/// Idempotency-Key handling (spec §7), applied once in `Application`'s dispatch for POST,
/// PATCH and DELETE (sync push and `/v1/auth/*` included).
///
/// Completed responses are persisted (`IdempotencyRepository`, table `idempotency_records`),
/// so a retry after a restart replays. The "still running" marker is kept in memory: this
/// is correct for a single server instance (README, Decisions).
///
/// `@unchecked Sendable`: `running` is guarded by `lock`.
public final class IdempotencyGuard: @unchecked Sendable {
    /// Retention of stored responses: 24 h, in ms.
    public static let retentionMillis: Int64 = 24 * 3600 * 1000
    /// Retention on `/v1/auth/*`: 5 min, in ms.
    public static let authRetentionMillis: Int64 = 5 * 60 * 1000
    /// Response headers stored and replayed.
    static let replayedHeaders = ["Content-Type", "Location", "Content-Location", "ETag"]

    private let repository: any IdempotencyRepository
    private let lock = NSLock()
    private var running: Set<String> = []

    public init(repository: any IdempotencyRepository) {
        self.repository = repository
    }

    /// What to do with a keyed request.
    enum Decision {
        /// Run the handler, then `complete` (or `abandon`).
        case proceed
        /// Answer with the stored response.
        case replay(HTTPResponse)
    }

    /// Validates an `Idempotency-Key` value: 1–255 visible ASCII characters.
    /// - Throws: 400 `invalid_idempotency_key`.
    static func validate(_ key: String) throws(APIError) -> String {
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError.badRequest("invalid_idempotency_key", "Idempotency-Key must be 1 to 255 visible ASCII characters.")
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
        let slot = caller + "\u{0}" + key
        let claimed = lock.withLock { running.insert(slot).inserted }
        guard claimed else {
            throw APIError.conflict("idempotency_key_in_use", "A request with this Idempotency-Key is still running.")
        }
        do {
            if let record = try repository.idempotencyRecord(caller: caller, key: key, now: now) {
                release(slot)
                guard constantTimeEquals(record.fingerprint, fingerprint) else {
                    throw APIError(status: 422, code: "idempotency_key_mismatch", title: "Unprocessable Content",
                                   detail: "This Idempotency-Key was used for another request.")
                }
                var response = HTTPResponse(status: record.status, body: record.body)
                for pair in record.headers where pair.count == 2 { response.headers.add(name: pair[0], value: pair[1]) }
                response.headers.add(name: "Idempotent-Replayed", value: "true")
                return .replay(response)
            }
        } catch {
            release(slot)
            throw error
        }
        return .proceed
    }

    /// Stores the handler's response (not 5xx, 429 or 409 `idempotency_key_in_use`, which a
    /// retry should re-run) and releases the key.
    func complete(caller: String, key: String, fingerprint: [UInt8], response: HTTPResponse, path: String, now: Int64) {
        defer { release(caller + "\u{0}" + key) }
        guard response.status < 500, response.status != 429 else { return }
        let retention = path.hasPrefix("/v1/auth/") ? Self.authRetentionMillis : Self.retentionMillis
        var headers: [[String]] = []
        for name in Self.replayedHeaders {
            if let value = response.headers.first(name: name) { headers.append([name, value]) }
        }
        let record = IdempotencyRecord(fingerprint: fingerprint, status: response.status, headers: headers,
                                       body: response.body, expiresAt: now + retention)
        // A failed save only means a later retry re-runs the request.
        try? repository.saveIdempotencyRecord(caller: caller, key: key, record: record, now: now)
    }

    /// Releases a key whose handler did not complete.
    func abandon(caller: String, key: String) {
        release(caller + "\u{0}" + key)
    }

    private func release(_ slot: String) {
        _ = lock.withLock { running.remove(slot) }
    }
}
