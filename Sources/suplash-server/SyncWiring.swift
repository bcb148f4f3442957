import SuplashAPI
import SuplashCrypto

/// Wires offline sync into `serve`: the long-poll registry listens to the
/// store's commits.
enum SyncWiring {
    static func services(
        store: any SuplashStore, subscribe: (@escaping @Sendable (String) -> Void) -> Void,
        secret: [UInt8]
    ) -> SyncServices {
        let longPolls = LongPollRegistry()
        subscribe { userID in longPolls.wake(userID: userID) }
        return SyncServices(
            repository: store, batch: store,
            tokens: SyncTokenCodec(key: HMACSHA256.authenticationCode(key: secret, message: Array("suplash sync tokens v1".utf8))),
            longPolls: longPolls, idempotency: IdempotencyGuard(repository: store, sharedClaims: SharedStateWiring.isShared(store)))
    }
}
