import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashStoreCore

/// The `LISTEN/NOTIFY` channels several server instances on one database share.
public enum PostgresClusterChannel {
    /// A committed write touched a user's synced data. Payload: `<instanceID> <userID>`
    /// (two opaque UUIDs; `instanceID` is the sending `PostgresStore.instanceID`).
    public static let changes = "suplash_changes"
    /// A committed revocation (`PostgresRevocationEvent.payload`).
    public static let revocations = "suplash_revocations"
    /// A committed write queued pushes (`PushSQL.wakeChannel`; payload: the user id): the push
    /// senders claim at once.
    public static let pushes = PushSQL.wakeChannel
}

/// A revocation committed on some instance, as broadcast on `suplash_revocations`.
/// Ids are opaque (UUIDs); no user content travels.
public enum PostgresRevocationEvent: Sendable, Equatable {
    /// One session was revoked (logout, refresh-token reuse, password reset, Apple takeover).
    case session(id: String)
    /// The account was erased: every token of it is refused.
    case account(userID: String)
    /// Access tokens of the user issued before `issuedBeforeSeconds` (Unix seconds) are revoked.
    case userCutoff(userID: String, issuedBeforeSeconds: Int64)
    /// An admin key was created or revoked: re-read the key table.
    case adminKeys

    /// The NOTIFY payload: `session <id>`, `account <id>`, `cutoff <id> <seconds>` or `admin_keys`.
    public var payload: String {
        switch self {
        case .session(let id): "session " + id
        case .account(let id): "account " + id
        case .userCutoff(let id, let seconds): "cutoff \(id) \(seconds)"
        case .adminKeys: "admin_keys"
        }
    }

    /// Parses `payload`; nil for anything else (a newer or foreign sender).
    public init?(payload: String) {
        let words = payload.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        switch (words.first, words.count) {
        case ("session", 2) where !words[1].isEmpty: self = .session(id: words[1])
        case ("account", 2) where !words[1].isEmpty: self = .account(userID: words[1])
        case ("cutoff", 3) where !words[1].isEmpty:
            guard let seconds = Int64(words[2]) else { return nil }
            self = .userCutoff(userID: words[1], issuedBeforeSeconds: seconds)
        case ("admin_keys", 1): self = .adminKeys
        default: return nil
        }
    }
}

/// What one server instance hears from the others: ONE listening connection and ONE thread
/// (`PostgresListener`) for the whole process, whatever the number of waiting long polls.
///
/// - `suplash_changes`: `onChange(userID)` for commits made by *other* instances. This
///   instance's own commits are skipped by their `instanceID`: `PostgresStore.changeNotifier`
///   already reported them right after the commit, and a second wake would make each woken
///   long poll read the feed twice (harmless — a woken request re-reads and answers only
///   when it finds changes — but useless work on the hottest path).
/// - `suplash_revocations`: `onRevocation(event)` for every revocation, this instance's
///   included (applying one twice is a no-op, and the store may revoke more than the
///   route that called it reports).
/// - `suplash_pushes`: `onPushesQueued()` for every commit that queued pushes, this
///   instance's included (the store cannot tell without a round trip whether its insert
///   queued a row; the statement's `pg_notify` can).
/// - `onResync(reconnect)` after each time `LISTEN` takes effect, the first included: events
///   sent while no listener was connected (before start-up's `LISTEN`, or while
///   reconnecting) are lost, so the caller re-reads its state from the database (the
///   revocation view) and wakes every waiting long poll (a spurious wake is safe).
///   It runs on the listener thread; notifications queue in the socket meanwhile.
public final class PostgresClusterListener: Sendable {
    private let listener: PostgresListener

    /// - Parameters:
    ///   - store: this instance's store (its `instanceID` marks its own changes).
    ///   - onChange: a user whose data another instance committed.
    ///   - onRevocation: a committed revocation.
    ///   - onResync: `LISTEN` is in effect (again); `reconnect` is false the first time.
    ///   - onConnectionLost: the connection failed (`kind`: a `PostgresError.Kind` raw value);
    ///     the next attempt comes after `retryInSeconds`.
    ///   - onPushesQueued: a commit on any instance queued pushes.
    /// - Throws: `PostgresError` `.invalidParameter` if a channel name were not an identifier
    ///   (they are constants; kept as an error rather than a trap).
    public init(
        store: PostgresStore, minBackoff: Double = 0.1, maxBackoff: Double = 5,
        onChange: @escaping @Sendable (_ userID: String) -> Void,
        onRevocation: @escaping @Sendable (PostgresRevocationEvent) -> Void,
        onResync: @escaping @Sendable (_ reconnect: Bool) -> Void,
        onConnectionLost: @escaping @Sendable (_ kind: String, _ retryInSeconds: Double) -> Void = { _, _ in },
        onPushesQueued: @escaping @Sendable () -> Void = {}
    ) throws {
        let ownPrefix = store.instanceID + " "
        listener = try PostgresListener(
            url: store.database.url,
            channels: [PostgresClusterChannel.changes, PostgresClusterChannel.revocations, PostgresClusterChannel.pushes],
            minBackoff: minBackoff, maxBackoff: maxBackoff,
            onNotification: { channel, payload in
                switch channel {
                case PostgresClusterChannel.changes:
                    guard !payload.hasPrefix(ownPrefix), let space = payload.firstIndex(of: " ") else { return }
                    let userID = payload[payload.index(after: space)...]
                    if !userID.isEmpty { onChange(String(userID)) }
                case PostgresClusterChannel.revocations:
                    if let event = PostgresRevocationEvent(payload: payload) { onRevocation(event) }
                case PostgresClusterChannel.pushes:
                    onPushesQueued()
                default:
                    return
                }
            },
            onConnection: { event in
                switch event {
                case .listening(let reconnect): onResync(reconnect)
                case .lost(let kind, let delay): onConnectionLost(kind, delay)
                }
            })
    }

    /// Starts the listener thread; the first `LISTEN` is reported through `onResync(false)`.
    /// - Throws: `PostgresError` when the thread's wake-up pipe cannot be made.
    public func start() throws { try listener.start() }

    /// Stops the thread and closes its connection (shutdown).
    public func stop() { listener.stop() }
}

extension PostgresStore {
    /// True when session `id` of `userID` exists and is not revoked (logout, refresh reuse,
    /// password reset, Apple takeover set `revoked_at`; erasure deletes the row). One
    /// primary-key lookup, at READ COMMITTED: it sees every revocation committed before it
    /// starts, on any instance — the guarantee `NOTIFY` cannot give (its delivery is
    /// asynchronous).
    /// - Throws: `RepositoryError.unavailable`.
    public func isSessionLive(id: String, userID: String) throws -> Bool {
        try read { c in
            !(try c.query(
                "SELECT 1 FROM sessions WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL",
                [.text(id), .text(userID)])).isEmpty
        }
    }

    /// The secret every instance signs tokens with, shared through the database (table
    /// `server_secrets`, migration 0007): the first instance to start stores `candidate`
    /// (`INSERT … ON CONFLICT DO NOTHING`), every instance then reads the stored value, so
    /// instances with separate data directories agree — a token issued by one is accepted
    /// by all. Pass the data dir's `jwt-secret` as the candidate when it exists, so tokens
    /// issued before a move from SQLite stay valid.
    /// - Parameters:
    ///   - name: which secret (`jwt`).
    ///   - candidate: ≥ 32 random bytes, used only if none is stored yet.
    ///   - now: ms since the epoch.
    /// - Throws: `RepositoryError.unavailable`.
    public func sharedSecret(name: String, candidate: [UInt8], now: Int64) throws -> [UInt8] {
        try write { tx in
            let c = tx.connection
            try c.update(
                "INSERT INTO server_secrets (name, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
                [.text(name), .blob(candidate), .integer(now)])
            guard
                let secret = try c.query("SELECT secret FROM server_secrets WHERE name = $1", [.text(name)])
                    .first?["secret"].bytes
            else { throw RepositoryError.unavailable }
            return secret
        }
    }
}

extension PostgresStore {
    /// Advisory-lock key (bigint) of the tombstone purge (`pg_try_advisory_xact_lock`): ASCII "SUPLPURG".
    /// The migrator's session lock uses another key.
    public static let purgeLockKey: Int64 = 0x5355_504C_5055_5247
}
