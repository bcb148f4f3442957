import SuplashDomain
import SuplashPostgres
import SuplashSQL
import SuplashStoreCore

/// `PostgresStore` as a `SQLStore`: the use cases of `SuplashStoreCore` run in `write`'s
/// transactions (READ COMMITTED, re-run on unique violations, serialization failures and
/// deadlocks) and on `read`'s pooled connections.
extension PostgresStore: SQLStore {
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresStoreTransaction) throws -> T) throws -> T {
        try write { tx in try body(PostgresStoreTransaction(tx, store: self)) }
    }

    public func transactionReportingPositions<T: Sendable>(
        _ body: @escaping @Sendable (PostgresStoreTransaction) throws -> T
    ) throws -> (value: T, positions: CommittedPositions) {
        let (value, sequence) = try write { tx -> (T, PostgresChangeSequence) in
            (try body(PostgresStoreTransaction(tx, store: self)), PostgresChangeSequence.of(tx))
        }
        return (value, sequence.committedPositions)
    }

    public func reading<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try read(body)
    }

    public func snapshot<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try snapshotRead(body)
    }

    public func snapshotPipeline(_ statements: [SQLStatement]) throws -> [[PostgresRow]] {
        try snapshotPipeline(statements.map { PostgresStatement($0.sql.postgres, $0.args) })
    }
}

/// A pooled connection (or a transaction's) runs the statements of a use case.
extension PostgresConnection: SQLExecutor {
    /// Always `.postgres`.
    public var dialect: SQLDialect { .postgres }

    /// `update(sql, args)` (one round trip): the rows changed.
    public func execute(_ sql: String, _ args: [SQLValue]) throws -> Int {
        try update(sql, args)
    }

    /// One libpq pipeline (one round trip, with whatever is queued in front).
    public func pipeline(_ statements: [SQLStatement]) throws -> [[PostgresRow]] {
        try pipeline(statements.map { PostgresStatement($0.sql.postgres, $0.args) })
    }
}

/// A PostgreSQL transaction of the store as the transaction of a use case: positions are taken
/// at the commit (`PostgresChangeSequence`), long polls are woken on every
/// instance (`NOTIFY suplash_changes`) and in this process after the commit.
///
/// Valid only during the body. Do not keep it.
public final class PostgresStoreTransaction: StoreTransaction {
    /// The driver's transaction.
    public let transaction: PostgresTransaction
    private let store: PostgresStore
    /// The users whose long polls this transaction already wakes (once each, as on SQLite).
    private var woken: Set<String> = []

    init(_ transaction: PostgresTransaction, store: PostgresStore) {
        self.transaction = transaction
        self.store = store
    }

    /// The transaction's connection.
    public var connection: PostgresConnection { transaction.connection }

    /// `NOTIFY suplash_revocations` with the commit (`PostgresRevocationEvent`): delivered if
    /// and only if the transaction commits.
    public func announce(_ revocation: StoreRevocation) {
        let event: PostgresRevocationEvent =
            switch revocation {
            case .session(let id): .session(id: id)
            case .adminKeys: .adminKeys
            case .userCutoff(let userID, let seconds): .userCutoff(userID: userID, issuedBeforeSeconds: seconds)
            case .accountErased(let userID): .account(userID: userID)
            }
        transaction.notify(channel: PostgresClusterChannel.revocations, payload: event.payload)
    }

    /// Queued on the connection; sent with the next round trip.
    public func enqueue(_ sql: SQLText, _ args: [SQLValue]) throws {
        connection.enqueue(sql.postgres, args)
    }

    /// The row's position from the transaction's `PostgresChangeSequence` (provisional until
    /// the commit stamps the row); `userID`'s long polls are woken and the background refresh
    /// of the user's other devices is queued once per transaction (`arrangeOnce`).
    public func changePosition(of row: ChangeRow, userID: String) throws -> Int64 {
        try arrangeOnce(userID)
        return try PostgresChangeSequence.of(transaction).changePosition(for: row)
    }

    /// `PostgresChangeSequence.positionedWrite`: the statement runs inside the commit's
    /// statement; the wake-up and the background refresh as for `changePosition`.
    public func positionedWrite(of row: ChangeRow, userID: String, _ sql: SQLText, _ args: [SQLValue]) throws {
        try arrangeOnce(userID)
        try PostgresChangeSequence.of(transaction).positionedWrite(of: row, sql.postgres, args)
    }

    /// The first position of `userID` in this transaction: the background refresh of the user's
    /// other devices (`PushOutboxStatements.backgroundRefresh`, queued: no round trip) and the
    /// long-poll wake-up after the commit.
    private func arrangeOnce(_ userID: String) throws {
        guard woken.insert(userID).inserted else { return }
        try PushOutboxStatements.backgroundRefresh(self, userID: userID)
        store.wake(transaction, userID: userID)
    }

    /// The writer's device (`StoreTransaction.writerDeviceID`).
    public var writerDeviceID: String?

    /// `PostgresChangeSequence.defersWrites`.
    public var defersPositionedWrites: Bool {
        get { PostgresChangeSequence.of(transaction).defersWrites }
        set { PostgresChangeSequence.of(transaction).defersWrites = newValue }
    }

    /// `PostgresTransaction.afterCommit`.
    public func afterCommit(_ body: @escaping @Sendable () -> Void) {
        transaction.afterCommit(body)
    }
}

extension PostgresStore: AdminKeyRepository {}
extension PostgresStore: SessionRepository {}
extension PostgresStore: EmailCodeRepository {}
extension PostgresStore: OutboxRepository {}
extension PostgresStore: IdempotencyRepository {}
extension PostgresStore: OperationsRepository {}

/// Writes without a transaction of their own run in autocommit on a pooled connection (`read`).
extension PostgresStore: AutocommitStore {
    public func autocommit<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) throws -> T {
        try read(body)
    }
}

extension PostgresStore: BillRepository {}
extension PostgresStore: UserRepository {}
extension PostgresStore: AppleIdentityRepository {}
extension PostgresStore: AccountDataRepository {}

extension PostgresStore: DeviceRepository {}
extension PostgresStore: WaterEntryBatchRepository {}

/// The purge's transaction-level advisory lock (`PostgresStore.purgeLockKey`).
extension PostgresStoreTransaction: PurgeLocking {
    public func tryPurgeLock() throws -> Bool { try transaction.tryAdvisoryLock(PostgresStore.purgeLockKey) }
}
extension PostgresStore: SyncRepository {}
extension PostgresStore: WaterEntryRepository {}
extension PostgresStore: HydrationRepository {}
extension PostgresStore: AppleRevokeJobRepository {}
extension PostgresStore: SealedValueRepository {}
extension PostgresStore: AppleAccountEventRepository {}
extension PostgresStore: PushOutboxRepository {}
extension PostgresStore: ReminderRepository {}
extension PostgresStore: CampaignRepository {}
