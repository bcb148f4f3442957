import Foundation
import SuplashAPI
import SuplashLogging
import SuplashPostgresStore

/// Makes several `serve` processes on one PostgreSQL database behave as one:
/// one `LISTEN` connection per process feeds the long-poll registry (commits of other
/// instances), the revocation view and the admin-key cache (revocations of any instance), and
/// wakes the push sender (pushes queued on any instance).
enum ClusterWiring {
    /// Starts the listener thread; stop it on shutdown.
    /// - Parameters:
    ///   - revocationWindowMs: how far back a resync reads revocations (one access-token
    ///     lifetime plus a minute, as at start-up).
    /// - Throws: `PostgresError` when the listener cannot start its thread.
    static func start(
        store: PostgresStore, longPolls: LongPollRegistry?, revocations: RevocationView,
        adminKeys: AdminKeyCache, revocationWindowMs: Int64, pushSender: PushSender?, logger: Logger
    ) throws -> PostgresClusterListener {
        let listener = try PostgresClusterListener(
            store: store,
            onChange: { userID in longPolls?.wake(userID: userID) },
            onRevocation: { event in
                switch event {
                case .session(let id): revocations.revoke(sessionID: id)
                case .account(let id): revocations.revoke(userID: id)
                case .userCutoff(let id, let seconds): revocations.revokeUser(id, issuedBefore: seconds)
                case .adminKeys: adminKeys.invalidate()
                }
            },
            onResync: { reconnect in
                // Anything broadcast while no listener was connected is re-read from the
                // database (the start-up reads); every long poll re-reads its feed.
                let since = Int64(Date().timeIntervalSince1970 * 1000) - revocationWindowMs
                do {
                    revocations.merge(
                        revokedSessions: try store.sessionsRevoked(since: since),
                        revokedUsers: try store.accountsErased(since: since))
                } catch {
                    logger.warning("cluster_resync_failed", .errorType(String(reflecting: type(of: error))))
                }
                adminKeys.invalidate()
                longPolls?.wakeAll()
                pushSender?.wake()
                logger.info("cluster_listening", .number("reconnect", reconnect ? 1 : 0))
            },
            onConnectionLost: { kind, retry in
                logger.warning("cluster_listener_lost", .errorType(kind), .number("retryMs", Int(retry * 1000)))
            },
            onPushesQueued: { pushSender?.wake() })
        try listener.start()
        return listener
    }
}
