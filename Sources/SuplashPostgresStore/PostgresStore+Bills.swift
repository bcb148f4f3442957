import SuplashDomain
import SuplashPostgres
import SuplashStoreRows

extension PostgresStore: BillRepository {
    static func fetchBill(_ c: PostgresConnection, userID: String, id: String, lock: Bool = false) throws
        -> Stamped<Bill>?
    {
        let sql =
            lock
            ? "SELECT \(StoreRows.billColumns), lww_device FROM bills WHERE user_id = $1 AND id = $2 FOR UPDATE"
            : "SELECT \(StoreRows.billColumns), lww_device FROM bills WHERE user_id = $1 AND id = $2"
        guard let row = try c.query(sql, [.text(userID), .text(id)]).first else { return nil }
        return Stamped(StoreRows.bill(row), deleted: StoreRows.billDeleted(row), stamp: StoreRows.stamp(row))
    }

    /// Locks the user's row (`lockUser`: writers of one user queue there; `.notFound` when
    /// there is no such user), then reads the bill, in one round trip.
    static func lockUserAndFetchBill(_ c: PostgresConnection, userID: String, id: String, lock: Bool) throws
        -> Stamped<Bill>?
    {
        let results = try c.pipeline([
            lockUserStatement(userID),
            PostgresStatement(
                lock
                    ? "SELECT \(StoreRows.billColumns), lww_device FROM bills WHERE user_id = $1 AND id = $2 FOR UPDATE"
                    : "SELECT \(StoreRows.billColumns), lww_device FROM bills WHERE user_id = $1 AND id = $2",
                [.text(userID), .text(id)]),
        ])
        if results[0].isEmpty { throw RepositoryError.notFound }
        return results[1].first.map { Stamped(StoreRows.bill($0), deleted: StoreRows.billDeleted($0), stamp: StoreRows.stamp($0)) }
    }

    /// Throws `bill_exists` when another live bill holds the same subscription and period.
    static func checkUnique(_ c: PostgresConnection, userID: String, excluding id: String, _ content: BillContent) throws {
        let rows = try c.query(
            """
            SELECT 1 FROM bills WHERE user_id = $1 AND provider = $2 AND subscriber_no = $3 AND period = $4 AND deleted = 0 AND id <> $5
            """,
            [
                .text(userID), .text(content.provider), .text(content.subscriberNo), .text(content.period.description),
                .text(id),
            ])
        if !rows.isEmpty { throw RepositoryError.conflict(code: "bill_exists") }
    }

    public func createBill(userID: String, id: String, content: BillContent, deviceID: String?, now: Int64) throws -> BillCreateOutcome {
        try write { tx in
            let c = tx.connection
            let stored = try PostgresStore.lockUserAndFetchBill(c, userID: userID, id: id, lock: false)
            if let existing = try DocumentWrites.existing(
                stored, content: content, storedContent: \.content,
                deletedCode: "bill_deleted", existsCode: "bill_id_exists")
            {
                return .existing(existing)
            }
            try PostgresStore.checkUnique(c, userID: userID, excluding: id, content)
            // Written by the commit's statement, with its position (`positionedWrite`).
            try self.positionedWrite(
                tx, userID: userID, row: ChangeRows.bill(userID, id),
                """
                INSERT INTO bills (provider, subscriber_no, period, consumption_milli_m3, amount_minor, currency, due_date,
                    paid_at, user_id, id, created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1, 0, $position, $13, $14)
                """,
                StoreRows.billValues(content) + [
                    .text(userID), .text(id), .integer(now), .integer(now), .integer(now), .text(deviceID ?? ""),
                ])
            return .created(Bill(id: id, userID: userID, content: content, createdAt: now, updatedAt: now, version: 1))
        }
    }

    public func bill(userID: String, id: String) throws -> Bill? {
        try read { c in
            try c.query(
                "SELECT \(StoreRows.billColumns) FROM bills WHERE user_id = $1 AND id = $2 AND deleted = 0",
                [.text(userID), .text(id)]
            ).first.map(StoreRows.bill)
        }
    }

    public func updateBill(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (Bill) -> Bool,
        _ transform: @escaping @Sendable (BillContent) throws -> BillContent
    ) throws -> Bill {
        try write { tx in
            let c = tx.connection
            let stored = try PostgresStore.lockUserAndFetchBill(c, userID: userID, id: id, lock: true)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let content = try transform(current.content)
            try PostgresStore.checkUnique(c, userID: userID, excluding: id, content)
            let next = DocumentWrites.revised(current, content: content, now: now)
            try self.positionedWrite(
                tx, userID: userID, row: ChangeRows.bill(userID, id),
                """
                UPDATE bills SET provider = $1, subscriber_no = $2, period = $3, consumption_milli_m3 = $4, amount_minor = $5,
                    currency = $6, due_date = $7, paid_at = $8, updated_at = $9, version = $10, change_position = $position,
                    lww_at = $11, lww_device = $12
                WHERE user_id = $13 AND id = $14
                """,
                StoreRows.billValues(content) + [
                    .integer(now), .integer(next.version), .integer(stamp.at), .text(stamp.device), .text(userID), .text(id),
                ])
            return next
        }
    }

    public func deleteBill(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (Bill) -> Bool
    ) throws {
        try write { tx in
            let c = tx.connection
            let stored = try PostgresStore.lockUserAndFetchBill(c, userID: userID, id: id, lock: true)
            _ = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            try self.positionedWrite(
                tx, userID: userID, row: ChangeRows.bill(userID, id),
                """
                UPDATE bills SET deleted = 1, updated_at = $1, version = version + 1, change_position = $position,
                    lww_at = $2, lww_device = $3
                WHERE user_id = $4 AND id = $5
                """, [.integer(now), .integer(stamp.at), .text(stamp.device), .text(userID), .text(id)])
        }
    }

    /// The list query (served by `bills_list`); public to the tests.
    public static let listBillsSQL = """
        SELECT \(StoreRows.billColumns) FROM bills
        WHERE user_id = $1 AND deleted = 0 AND period <= $2 AND (period < $2 OR id < $3)
        ORDER BY period DESC, id DESC
        LIMIT $4
        """

    public func listBills(userID: String, after cursor: BillCursor?, limit: Int) throws -> [Bill] {
        try read { c in
            try c.query(
                PostgresStore.listBillsSQL,
                [
                    .text(userID), .text(cursor?.period.description ?? "9999-99"), .text(cursor?.id ?? "\u{10FFFF}"),
                    .integer(Int64(limit)),
                ]
            ).map(StoreRows.bill)
        }
    }

    public func bill(userID: String, provider: String, subscriberNo: String, period: YearMonth) throws -> Bill? {
        try read { c in
            try c.query(
                """
                SELECT \(StoreRows.billColumns) FROM bills
                WHERE user_id = $1 AND provider = $2 AND subscriber_no = $3 AND period = $4 AND deleted = 0
                """, [.text(userID), .text(provider), .text(subscriberNo), .text(period.description)]
            )
            .first.map(StoreRows.bill)
        }
    }

    public func latestBills(userID: String, provider: String, subscriberNo: String, limit: Int) throws -> [Bill] {
        try read { c in
            try c.query(
                """
                SELECT \(StoreRows.billColumns) FROM bills
                WHERE user_id = $1 AND provider = $2 AND subscriber_no = $3 AND deleted = 0
                ORDER BY period DESC LIMIT $4
                """, [.text(userID), .text(provider), .text(subscriberNo), .integer(Int64(limit))]
            )
            .map(StoreRows.bill)
        }
    }

    public func unpaidBills(userID: String, dueThrough: LocalDate) throws -> [Bill] {
        try read { c in
            try c.query(
                """
                SELECT \(StoreRows.billColumns) FROM bills
                WHERE user_id = $1 AND deleted = 0 AND paid_at IS NULL AND due_date <= $2
                ORDER BY due_date, period, id
                """, [.text(userID), .text(dueThrough.description)]
            ).map(StoreRows.bill)
        }
    }
}
