import SuplashDomain
import SuplashStorage
import SuplashStoreRows

extension SQLiteStore: BillRepository {
    static func fetchBill(_ c: SQLiteConnection, userID: String, id: String) throws -> Stamped<Bill>? {
        guard
            let row = try c.query(
                "SELECT \(StoreRows.billColumns), lww_device FROM bills WHERE user_id = ? AND id = ?",
                [.text(userID), .text(id)]
            ).first
        else { return nil }
        return Stamped(StoreRows.bill(row), deleted: StoreRows.billDeleted(row), stamp: StoreRows.stamp(row))
    }

    /// Throws `bill_exists` when another live bill holds the same subscription and period.
    static func checkUnique(_ c: SQLiteConnection, userID: String, excluding id: String, _ content: BillContent) throws {
        let rows = try c.query(
            """
            SELECT 1 FROM bills WHERE user_id = ? AND provider = ? AND subscriber_no = ? AND period = ? AND deleted = 0 AND id <> ?
            """,
            [
                .text(userID), .text(content.provider), .text(content.subscriberNo), .text(content.period.description),
                .text(id),
            ])
        if !rows.isEmpty { throw RepositoryError.conflict(code: "bill_exists") }
    }

    public func createBill(userID: String, id: String, content: BillContent, deviceID: String?, now: Int64) throws -> BillCreateOutcome {
        try write { ctx in
            let c = ctx.connection
            let stored = try SQLiteStore.fetchBill(c, userID: userID, id: id)
            if let existing = try DocumentWrites.existing(
                stored, content: content, storedContent: \.content,
                deletedCode: "bill_deleted", existsCode: "bill_id_exists")
            {
                return .existing(existing)
            }
            if (try c.query("SELECT 1 FROM users WHERE id = ?", [.text(userID)])).isEmpty { throw RepositoryError.notFound }
            try SQLiteStore.checkUnique(c, userID: userID, excluding: id, content)
            let position = try self.takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                INSERT INTO bills (provider, subscriber_no, period, consumption_milli_m3, amount_minor, currency, due_date,
                    paid_at, user_id, id, created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?)
                """,
                StoreRows.billValues(content) + [
                    .text(userID), .text(id), .integer(now), .integer(now), .integer(position), .integer(now),
                    .text(deviceID ?? ""),
                ])
            return .created(Bill(id: id, userID: userID, content: content, createdAt: now, updatedAt: now, version: 1))
        }
    }

    public func bill(userID: String, id: String) throws -> Bill? {
        try read { c in
            try c.query(
                "SELECT \(StoreRows.billColumns) FROM bills WHERE user_id = ? AND id = ? AND deleted = 0",
                [.text(userID), .text(id)]
            ).first.map(StoreRows.bill)
        }
    }

    public func updateBill(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (Bill) -> Bool,
        _ transform: @escaping @Sendable (BillContent) throws -> BillContent
    ) throws -> Bill {
        try write { ctx in
            let c = ctx.connection
            let stored = try SQLiteStore.fetchBill(c, userID: userID, id: id)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let content = try transform(current.content)
            try SQLiteStore.checkUnique(c, userID: userID, excluding: id, content)
            let next = DocumentWrites.revised(current, content: content, now: now)
            let position = try self.takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                UPDATE bills SET provider = ?, subscriber_no = ?, period = ?, consumption_milli_m3 = ?, amount_minor = ?,
                    currency = ?, due_date = ?, paid_at = ?, updated_at = ?, version = ?, change_position = ?, lww_at = ?,
                    lww_device = ?
                WHERE user_id = ? AND id = ?
                """,
                StoreRows.billValues(content) + [
                    .integer(now), .integer(next.version), .integer(position), .integer(stamp.at),
                    .text(stamp.device), .text(userID), .text(id),
                ])
            return next
        }
    }

    public func deleteBill(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (Bill) -> Bool
    ) throws {
        try write { ctx in
            let c = ctx.connection
            let stored = try SQLiteStore.fetchBill(c, userID: userID, id: id)
            _ = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let position = try self.takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                UPDATE bills SET deleted = 1, updated_at = ?, version = version + 1, change_position = ?, lww_at = ?,
                    lww_device = ?
                WHERE user_id = ? AND id = ?
                """,
                [
                    .integer(now), .integer(position), .integer(stamp.at), .text(stamp.device),
                    .text(userID), .text(id),
                ])
        }
    }

    /// The list query (served by `bills_list`); public to the tests.
    public static let listBillsSQL = """
        SELECT \(StoreRows.billColumns) FROM bills
        WHERE user_id = ?1 AND deleted = 0 AND period <= ?2 AND (period < ?2 OR id < ?3)
        ORDER BY period DESC, id DESC
        LIMIT ?4
        """

    public func listBills(userID: String, after cursor: BillCursor?, limit: Int) throws -> [Bill] {
        try read { c in
            try c.query(
                SQLiteStore.listBillsSQL,
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
                WHERE user_id = ? AND provider = ? AND subscriber_no = ? AND period = ? AND deleted = 0
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
                WHERE user_id = ? AND provider = ? AND subscriber_no = ? AND deleted = 0
                ORDER BY period DESC LIMIT ?
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
                WHERE user_id = ? AND deleted = 0 AND paid_at IS NULL AND due_date <= ?
                ORDER BY due_date, period, id
                """, [.text(userID), .text(dueThrough.description)]
            ).map(StoreRows.bill)
        }
    }
}
