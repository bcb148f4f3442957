import SuplashDomain
import SuplashSQL
import SuplashStorage
import SuplashStoreCore

/// `SQLiteStore` as a `SQLStore`: the use cases of `SuplashStoreCore` run as jobs of the single
/// writer's group commit (`transaction`, durable before it returns) and on the reader pool
/// (`reading`, `snapshot`).
extension SQLiteStore: SQLStore {
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (SQLiteStoreTransaction) throws -> T) throws -> T {
        let notifier = changeNotifier
        return try write { context in try body(SQLiteStoreTransaction(context: context, notifier: notifier)) }
    }

    public func transactionReportingPositions<T: Sendable>(
        _ body: @escaping @Sendable (SQLiteStoreTransaction) throws -> T
    ) throws -> (value: T, positions: CommittedPositions) {
        let notifier = changeNotifier
        return try write { context in
            let tx = SQLiteStoreTransaction(context: context, notifier: notifier)
            let value = try body(tx)
            return (value, CommittedPositions(stampBase: nil, highest: tx.highestPosition))
        }
    }

    public func reading<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try read(body)
    }

    public func snapshot<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try read { c in
            try c.execute("BEGIN")
            defer { try? c.execute("COMMIT") }
            return try body(c)
        }
    }

    public func snapshotPipeline(_ statements: [SQLStatement]) throws -> [[SQLiteRow]] {
        try snapshot { c in try c.pipeline(statements) }
    }
}

/// A reader's (or the writer's) connection runs the statements of a use case.
extension SQLiteConnection: SQLExecutor {
    /// Always `.sqlite`.
    public var dialect: SQLDialect { .sqlite }

    /// `run(sql, args)`: the rows changed.
    public func execute(_ sql: String, _ args: [SQLValue]) throws -> Int {
        try run(sql, args)
    }

    /// The statements one after the other.
    public func pipeline(_ statements: [SQLStatement]) throws -> [[SQLiteRow]] {
        try statements.map { try query($0.sql.sqlite, $0.args) }
    }
}

/// A write job of the group commit as the transaction of a use case: statements run at once on
/// the writer connection, positions are taken when asked (the single writer orders them), and
/// long polls are woken after the group's commit.
///
/// Valid only during the job's body, on the writer thread. Do not keep it.
public final class SQLiteStoreTransaction: StoreTransaction {
    private let context: WriteContext
    private let notifier: ChangeNotifier
    private var woken: Set<String> = []
    /// The highest change position this job took (nil: none).
    private(set) var highestPosition: Int64?

    init(context: WriteContext, notifier: ChangeNotifier) {
        self.context = context
        self.notifier = notifier
    }

    /// The writer connection.
    public var connection: SQLiteConnection { context.connection }

    /// A no-op: one process, whose routes update its revocation view themselves.
    public func announce(_ revocation: StoreRevocation) {}

    /// Runs the statement now.
    public func enqueue(_ sql: SQLText, _ args: [SQLValue]) throws {
        _ = try connection.run(sql.sqlite, args)
    }

    /// The next position of the change sequence, taken now (`SQLiteStore.nextChangePosition`).
    /// The first for `userID` also queues the background refresh of the user's other devices
    /// (`PushOutboxStatements.backgroundRefresh`) and the long-poll wake-up after the commit.
    public func changePosition(of row: ChangeRow, userID: String) throws -> Int64 {
        let position = try SQLiteStore.nextChangePosition(connection)
        highestPosition = position
        if woken.insert(userID).inserted {
            try PushOutboxStatements.backgroundRefresh(self, userID: userID)
            let notifier = notifier
            context.afterCommit { notifier.notify(userID: userID) }
        }
        return position
    }

    /// Takes the position now and runs the statement with it.
    public func positionedWrite(of row: ChangeRow, userID: String, _ sql: SQLText, _ args: [SQLValue]) throws {
        let position = try changePosition(of: row, userID: userID)
        _ = try connection.run(sql.sqlite, args + [.integer(position)])
    }

    /// No effect: SQLite runs every write when asked.
    public var defersPositionedWrites: Bool {
        get { false }
        set {}
    }

    /// The writer's device (`StoreTransaction.writerDeviceID`).
    public var writerDeviceID: String?

    /// `WriteContext.afterCommit`: after the group's durable commit.
    public func afterCommit(_ body: @escaping @Sendable () -> Void) {
        context.afterCommit(body)
    }
}

extension SQLiteStore: AdminKeyRepository {}
extension SQLiteStore: SessionRepository {}
extension SQLiteStore: EmailCodeRepository {}
extension SQLiteStore: OutboxRepository {}
extension SQLiteStore: IdempotencyRepository {}
extension SQLiteStore: OperationsRepository {}

/// Writes without a transaction of their own run as one job of the single writer.
extension SQLiteStore: AutocommitStore {
    public func autocommit<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) throws -> T {
        try write { context in try body(context.connection) }
    }
}

extension SQLiteStore: BillRepository {}
extension SQLiteStore: UserRepository {}
extension SQLiteStore: AppleIdentityRepository {}
extension SQLiteStore: AccountDataRepository {}

extension SQLiteStore: DeviceRepository {}
extension SQLiteStore: WaterEntryBatchRepository {}

/// Always granted: one process, whose single writer serialises the purge with every write.
extension SQLiteStoreTransaction: PurgeLocking {
    public func tryPurgeLock() -> Bool { true }
}
extension SQLiteStore: SyncRepository {}
extension SQLiteStore: WaterEntryRepository {}
extension SQLiteStore: HydrationRepository {}
extension SQLiteStore: AppleRevokeJobRepository {}
extension SQLiteStore: SealedValueRepository {}
extension SQLiteStore: AppleAccountEventRepository {}
extension SQLiteStore: PushOutboxRepository {}
extension SQLiteStore: ReminderRepository {}
extension SQLiteStore: CampaignRepository {}
