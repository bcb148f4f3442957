import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// Water bills (spec §4, "Bills"): create, read, revise, delete and list a user's bills, with
/// tariffs as stored. Every write locks the user's row first (`UserLock`, sent in one round
/// trip with the bill's read on PostgreSQL) and writes the bill with its change position
/// (`positionedWrite`: on PostgreSQL inside the commit's statement). A live bill's
/// (provider, subscriberNo, period) is unique per user: `bill_exists` (409).
extension BillRepository where Self: SQLStore {
    public func createBill(userID: String, id: String, content: BillContent, deviceID: String?, now: Int64) throws -> BillCreateOutcome {
        try transaction { tx in
            tx.writerDeviceID = deviceID
            let (profile, stored) = try BillStatements.lockUserAndFetch(tx, userID: userID, id: id, lock: false)
            if let existing = try DocumentWrites.existing(
                stored, content: content, storedContent: \.content,
                deletedCode: "bill_deleted", existsCode: "bill_id_exists")
            {
                return .existing(existing)
            }
            try BillStatements.checkUnique(tx.connection, userID: userID, excluding: id, content)
            try tx.positionedWrite(
                of: .bill(userID, id), userID: userID, BillSQL.insert,
                StoreRows.billValues(content) + [
                    .text(userID), .text(id), .integer(now), .integer(now), .integer(now), .text(deviceID ?? ""),
                ])
            try BillReminders.billChanged(tx, userID: userID, profile: profile, billID: id, bill: content, deleted: false, now: now)
            return .created(Bill(id: id, userID: userID, content: content, createdAt: now, updatedAt: now, version: 1))
        }
    }

    public func bill(userID: String, id: String) throws -> Bill? {
        try reading { c in try c.queryOne(BillSQL.live, [.text(userID), .text(id)]).map(StoreRows.bill) }
    }

    public func updateBill(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (Bill) -> Bool,
        _ transform: @escaping @Sendable (BillContent) throws -> BillContent
    ) throws -> Bill {
        try transaction { tx in
            tx.writerDeviceID = deviceID
            let (profile, stored) = try BillStatements.lockUserAndFetch(tx, userID: userID, id: id, lock: true)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let content = try transform(current.content)
            try BillStatements.checkUnique(tx.connection, userID: userID, excluding: id, content)
            let next = DocumentWrites.revised(current, content: content, now: now)
            try tx.positionedWrite(
                of: .bill(userID, id), userID: userID, BillSQL.update,
                StoreRows.billValues(content) + [
                    .integer(now), .integer(next.version), .integer(stamp.at), .text(stamp.device), .text(userID), .text(id),
                ])
            try BillReminders.billChanged(
                tx, userID: userID, profile: profile, billID: id, bill: content, previous: current.content, deleted: false, now: now)
            return next
        }
    }

    public func deleteBill(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (Bill) -> Bool
    ) throws {
        try transaction { tx in
            tx.writerDeviceID = deviceID
            let (profile, stored) = try BillStatements.lockUserAndFetch(tx, userID: userID, id: id, lock: true)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            try tx.positionedWrite(
                of: .bill(userID, id), userID: userID, BillSQL.delete,
                [.integer(now), .integer(stamp.at), .text(stamp.device), .text(userID), .text(id)])
            try BillReminders.billChanged(
                tx, userID: userID, profile: profile, billID: id, bill: current.content, deleted: true, now: now)
        }
    }

    public func listBills(userID: String, after cursor: BillCursor?, limit: Int) throws -> [Bill] {
        try reading { c in
            try c.query(
                BillStatements.list,
                [
                    .text(userID), .text(cursor?.period.description ?? "9999-99"), .text(cursor?.id ?? "\u{10FFFF}"),
                    .integer(Int64(limit)),
                ]
            ).map(StoreRows.bill)
        }
    }

    public func bill(userID: String, provider: String, subscriberNo: String, period: YearMonth) throws -> Bill? {
        try reading { c in
            try c.queryOne(BillSQL.ofPeriod, [.text(userID), .text(provider), .text(subscriberNo), .text(period.description)])
                .map(StoreRows.bill)
        }
    }

    public func latestBills(userID: String, provider: String, subscriberNo: String, limit: Int) throws -> [Bill] {
        try reading { c in
            try c.query(BillSQL.latest, [.text(userID), .text(provider), .text(subscriberNo), .integer(Int64(limit))])
                .map(StoreRows.bill)
        }
    }

    public func unpaidBills(userID: String, dueThrough: LocalDate) throws -> [Bill] {
        try reading { c in
            try c.query(BillSQL.unpaid, [.text(userID), .text(dueThrough.description)]).map(StoreRows.bill)
        }
    }
}

/// Bill statements other use cases run inside their own transactions (the sync push's bill
/// mutations), and the list query the query-plan tests check.
public enum BillStatements {
    /// A page of live bills, newest period first (served by the `bills_list` index): binds
    /// `?1` user id, `?2` cursor period `YYYY-MM` (`9999-99` for the first page), `?3` cursor id
    /// (U+10FFFF for the first page), `?4` limit. Decode with `StoreRows.bill`.
    public static let list = SQLText(
        """
        SELECT \(StoreRows.billColumns) FROM bills
        WHERE user_id = ?1 AND deleted = 0 AND period <= ?2 AND (period < ?2 OR id < ?3)
        ORDER BY period DESC, id DESC
        LIMIT ?4
        """)

    /// The bill `id` of `userID`, live or tombstone, with its last-write-wins stamp; nil when
    /// there is none. On `connection` of an open transaction.
    /// - Throws: the engine's error.
    public static func fetch(_ connection: some SQLExecutor, userID: String, id: String) throws -> Stamped<Bill>? {
        try connection.queryOne(BillSQL.stamped, [.text(userID), .text(id)]).map { stamped($0) }
    }

    /// Throws `RepositoryError.conflict(code: "bill_exists")` when a live bill of `userID` other
    /// than `id` holds `content`'s provider, subscriber number and period (one round trip).
    /// - Throws: that conflict, or the engine's error.
    public static func checkUnique(_ connection: some SQLExecutor, userID: String, excluding id: String, _ content: BillContent)
        throws
    {
        let args: [SQLValue] = [
            .text(userID), .text(content.provider), .text(content.subscriberNo), .text(content.period.description), .text(id),
        ]
        if try connection.queryOne(BillSQL.heldByAnother, args) != nil { throw RepositoryError.conflict(code: "bill_exists") }
    }

    /// Locks the user's row (`UserLock`; `RepositoryError.notFound` when there is no such
    /// user), then reads the bill — locked with `FOR UPDATE` on PostgreSQL when `lock` — in one
    /// pipeline (one round trip on PostgreSQL). Returns the profile too (bill reminders read it).
    static func lockUserAndFetch(_ tx: some StoreTransaction, userID: String, id: String, lock: Bool) throws
        -> (profile: UserProfile, stored: Stamped<Bill>?)
    {
        let results = try tx.pipeline([
            SQLStatement(UserLock.statement, [.text(userID)]),
            SQLStatement(lock ? BillSQL.stampedForUpdate : BillSQL.stamped, [.text(userID), .text(id)]),
        ])
        guard let profile = results[0].first.map({ StoreRows.user($0).profile }) else { throw RepositoryError.notFound }
        return (profile, results[1].first.map { stamped($0) })
    }

    private static func stamped(_ row: some SQLRowValues) -> Stamped<Bill> {
        Stamped(StoreRows.bill(row), deleted: StoreRows.billDeleted(row), stamp: StoreRows.stamp(row))
    }
}

enum BillSQL {
    static let stamped = SQLText("SELECT \(StoreRows.billColumns), lww_device FROM bills WHERE user_id = ?1 AND id = ?2")
    static let stampedForUpdate = SQLText { d in
        "SELECT \(StoreRows.billColumns), lww_device FROM bills WHERE user_id = ?1 AND id = ?2 \(d.forUpdate())"
    }
    static let heldByAnother = SQLText(
        """
        SELECT 1 FROM bills WHERE user_id = ?1 AND provider = ?2 AND subscriber_no = ?3 AND period = ?4 AND deleted = 0 AND id <> ?5
        """)
    /// ?15: the change position.
    static let insert = SQLText(
        """
        INSERT INTO bills (provider, subscriber_no, period, consumption_milli_m3, amount_minor, currency, due_date,
            paid_at, user_id, id, created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 1, 0, ?15, ?13, ?14)
        """)
    /// ?15: the change position.
    static let update = SQLText(
        """
        UPDATE bills SET provider = ?1, subscriber_no = ?2, period = ?3, consumption_milli_m3 = ?4, amount_minor = ?5,
            currency = ?6, due_date = ?7, paid_at = ?8, updated_at = ?9, version = ?10, change_position = ?15,
            lww_at = ?11, lww_device = ?12
        WHERE user_id = ?13 AND id = ?14
        """)
    /// ?6: the change position.
    static let delete = SQLText(
        """
        UPDATE bills SET deleted = 1, updated_at = ?1, version = version + 1, change_position = ?6,
            lww_at = ?2, lww_device = ?3
        WHERE user_id = ?4 AND id = ?5
        """)
    static let live = SQLText("SELECT \(StoreRows.billColumns) FROM bills WHERE user_id = ?1 AND id = ?2 AND deleted = 0")
    static let ofPeriod = SQLText(
        """
        SELECT \(StoreRows.billColumns) FROM bills
        WHERE user_id = ?1 AND provider = ?2 AND subscriber_no = ?3 AND period = ?4 AND deleted = 0
        """)
    static let latest = SQLText(
        """
        SELECT \(StoreRows.billColumns) FROM bills
        WHERE user_id = ?1 AND provider = ?2 AND subscriber_no = ?3 AND deleted = 0
        ORDER BY period DESC LIMIT ?4
        """)
    static let unpaid = SQLText(
        """
        SELECT \(StoreRows.billColumns) FROM bills
        WHERE user_id = ?1 AND deleted = 0 AND paid_at IS NULL AND due_date <= ?2
        ORDER BY due_date, period, id
        """)
}
