import SuplashAPI
import SuplashCrypto
import SuplashSQLiteStore

/// Wires issue 3 (offline sync) into `serve`: the long-poll registry listens to the
/// store's commits.
enum SyncWiring {
    static func services(store: SQLiteStore, secret: [UInt8]) -> SyncServices {
        let longPolls = LongPollRegistry()
        store.changeNotifier.subscribe { userID in longPolls.wake(userID: userID) }
        return SyncServices(
            repository: store, batch: store,
            tokens: SyncTokenCodec(key: HMACSHA256.authenticationCode(key: secret, message: Array("suplash sync tokens v1".utf8))),
            longPolls: longPolls, idempotency: IdempotencyGuard(repository: store))
    }
}
