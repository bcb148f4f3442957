import Foundation

/// Where a water entry was logged (the server's `source` field).
public enum EntrySource: String, Sendable, Hashable, CaseIterable {
    case phone, watch, widget, notification, healthkit, `import`, api
}

/// One water entry as the local store holds it.
///
/// ```swift
/// let entry = try await client.logWater(250, source: .watch)
/// // entry.amountMl == 250, entry.isPending == true: shown at once, pushed later
/// ```
public struct WaterEntry: Sendable, Hashable, Identifiable {
    /// Lower-case UUID; chosen by the client, so offline creation needs no round trip.
    public var id: String
    public var amountMl: Int
    public var loggedAt: Date
    public var source: EntrySource
    public var note: String?
    public var healthKitUUID: String?
    /// True while a local write of this entry waits in the outbox.
    public var isPending: Bool

    public init(
        id: String = UUID().uuidString.lowercased(), amountMl: Int, loggedAt: Date = Date(),
        source: EntrySource = .phone, note: String? = nil, healthKitUUID: String? = nil
    ) {
        self.id = id.lowercased()
        self.amountMl = amountMl
        self.loggedAt = loggedAt
        self.source = source
        self.note = note
        self.healthKitUUID = healthKitUUID?.lowercased()
        self.isPending = false
    }
}

/// A signed-in session. Stored by a ``CredentialStore`` (a 0600 file, or the Keychain in an app).
public struct Session: Sendable, Hashable, Codable {
    public var serverURL: URL
    public var userID: String
    public var accessToken: String
    public var refreshToken: String
    public var accessTokenExpiresAt: Date

    public init(serverURL: URL, userID: String, accessToken: String, refreshToken: String, accessTokenExpiresAt: Date) {
        self.serverURL = serverURL
        self.userID = userID
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.accessTokenExpiresAt = accessTokenExpiresAt
    }
}

/// Errors of SuplashKit. Server problems keep the server's stable `code`.
public enum SuplashError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not signed in (no session in the credential store).
    case notSignedIn
    /// The server ended the session (`refresh_token_reused`, `invalid_refresh_token`): the
    /// stored credentials are gone; sign in again. Local data and the outbox are kept.
    case sessionEnded(code: String)
    /// An RFC 9457 problem from the server that retrying cannot fix.
    case server(status: Int, code: String, detail: String)
    /// The server could not be reached (offline, refused, timed out) after the retries.
    case offline(String)
    /// An answer the client does not understand.
    case invalidResponse(String)
    /// A caller mistake caught locally (e.g. an amount outside 1–5000 ml).
    case invalidArgument(String)
    /// The local SQLite store failed.
    case localStore(String)

    public var description: String {
        switch self {
        case .notSignedIn: "not signed in"
        case .sessionEnded(let code): "the session ended (\(code)); sign in again"
        case .server(let status, let code, let detail): "server error \(status) \(code): \(detail)"
        case .offline(let why): "server unreachable: \(why)"
        case .invalidResponse(let why): "unexpected server answer: \(why)"
        case .invalidArgument(let why): why
        case .localStore(let why): "local store: \(why)"
        }
    }
}

/// What one ``SuplashClient/sync()`` did.
public struct SyncReport: Sendable, Hashable {
    /// Outbox mutations the server applied.
    public var applied = 0
    /// Outbox mutations that lost to a later write elsewhere (the winner was taken locally).
    public var superseded = 0
    /// Outbox mutations the server refused; see ``SuplashClient/rejectedMutations()``.
    public var rejected = 0
    /// Changes pulled from the server and applied locally.
    public var pulled = 0
    /// True when the sync token had expired (410) and a full snapshot was read.
    public var restartedFromSnapshot = false
    /// True when the server's history had changed (410 `sync_history_changed`: restored from
    /// a backup): the local data was kept and compared with the server's snapshot.
    public var healedServer = false
    /// Local entries and deletes queued for push because the healed server lacked them or
    /// held older versions (last write wins decides on the server).
    public var pushedBack = 0

    public init() {}
}

/// A mutation the server refused (e.g. `validation_failed`): kept for the UI to show.
public struct RejectedMutation: Sendable, Hashable {
    public var collection: String
    public var documentID: String
    public var code: String
    public var detail: String
}

/// One entry for ``SuplashClient/uploadBatch(_:)`` (HealthKit backfill).
public typealias NewEntry = WaterEntry

/// The outcome of one `entries:batch` upload.
public struct BatchOutcome: Sendable, Hashable {
    public var created = 0
    /// Already on the server (same `healthKitUUID`): nothing was added.
    public var existing = 0
    /// Index in the batch and the problem `code` of each refused entry.
    public var rejected: [Int: String] = [:]
    public init() {}
}

/// Retry behaviour for transient failures: exponential backoff with full jitter, honouring
/// `Retry-After` on 429 and 503.
public struct RetryPolicy: Sendable, Hashable {
    public var maxAttempts: Int
    public var baseDelay: TimeInterval
    public var maxDelay: TimeInterval

    public init(maxAttempts: Int = 6, baseDelay: TimeInterval = 0.5, maxDelay: TimeInterval = 60) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// No retries (tests, or a CLI that reports at once).
    public static let none = RetryPolicy(maxAttempts: 1)

    /// The pause before attempt `attempt + 1` (attempt counts from 1).
    func delay(afterAttempt attempt: Int, retryAfter: TimeInterval?) -> TimeInterval {
        if let retryAfter { return min(maxDelay, max(0, retryAfter)) }
        let ceiling = min(maxDelay, baseDelay * pow(2, Double(attempt - 1)))
        return Double.random(in: (ceiling / 2)...max(ceiling / 2, ceiling))
    }
}
