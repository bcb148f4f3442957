import SuplashDomain
import SuplashSQL

/// The user's distinct entry amounts (`entry_amounts`, docs/decisions.md, "Summary reads a
/// bounded number of rows"): per amount the number of live entries and the newest of them
/// (`logged_at`, then id), so the summary's `recentAmountsMl` (spec §4) reads a handful of
/// rows instead of the day's entries. Maintained by `EntryBookkeeping.entriesChanged` in the
/// transaction of every entry write (REST, batches, reminder drinks, sync pushes) from the
/// write's deltas alone — no statement reads an entry the same transaction writes, since on
/// PostgreSQL the entry's own write joins the commit. A removal that may have taken an
/// amount's newest entry marks the row `stale` (its newest is then an upper bound), as does an
/// entry added without its id; the user's next entry write re-reads stale rows, and the
/// summary seeks them itself. The callers hold the user's lock.
public enum EntryAmounts {
    /// Re-reads the user's stale rows, then applies `deltas` (each entry version that appeared
    /// or disappeared) per amount. Every statement is `enqueue`d (no round trip of its own on
    /// PostgreSQL).
    /// - Throws: the engine's error.
    @inlinable public static func entriesChanged(_ tx: some StoreTransaction, userID: String, deltas: [EntryDelta]) throws {
        guard !deltas.isEmpty else { return }
        try tx.enqueue(refreshStaleSQL, [.text(userID)])
        for change in changes(deltas) {
            let (added, removed) = (change.newestAdded ?? Change.none, change.newestRemoved ?? Change.none)
            let new = Change.precedes(added, removed) ? removed : added
            try tx.enqueue(
                EntryAmountsSQL.apply,
                [
                    .text(userID), .integer(Int64(change.amountMl)), .integer(Int64(change.count)), .integer(added.at),
                    .text(added.id), .integer(removed.at), .text(removed.id), .integer(new.at), .text(new.id),
                    .integer(change.idUnknown || !Change.precedes(removed, added) ? 1 : 0), .integer(change.idUnknown ? 1 : 0),
                    .integer(Change.precedes(removed, added) ? 0 : 1),
                ])
            if change.newestRemoved != nil {
                try tx.enqueue(EntryAmountsSQL.dropEmpty, [.text(userID), .integer(Int64(change.amountMl))])
            }
        }
    }

    /// What `deltas` do to one amount: the live-count change and the newest entry added and
    /// removed (`logged_at`, id; nil: none).
    @usableFromInline struct Change: Equatable {
        @usableFromInline typealias Key = (at: Int64, id: String)
        @usableFromInline var amountMl: Int
        @usableFromInline var count = 0
        @usableFromInline var addedAt: Int64?
        @usableFromInline var addedID = ""
        @usableFromInline var removedAt: Int64?
        @usableFromInline var removedID = ""
        /// An entry was added without its id (its newest is then only an upper bound).
        @usableFromInline var idUnknown = false

        @usableFromInline init(amountMl: Int) { self.amountMl = amountMl }

        /// Below every entry.
        @usableFromInline static let none: Key = (Int64.min, "")
        /// Above every id (U+10FFFF leads in UTF-8 byte order): an unknown id's upper bound.
        @usableFromInline static let unknownID = "\u{10FFFF}"

        @usableFromInline var newestAdded: Key? { addedAt.map { ($0, addedID) } }
        @usableFromInline var newestRemoved: Key? { removedAt.map { ($0, removedID) } }

        /// `a` orders before `b`: `logged_at`, then the id's UTF-8 bytes (SQLite's BINARY and
        /// PostgreSQL's "C" collation, as the stores order entries).
        @usableFromInline static func precedes(_ a: Key, _ b: Key) -> Bool {
            a.at != b.at ? a.at < b.at : a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }
    }

    /// `deltas` folded per amount, in ascending amount order (a stable statement order).
    @usableFromInline static func changes(_ deltas: [EntryDelta]) -> [Change] {
        var byAmount: [Int: Change] = [:]
        for d in deltas where d.count != 0 {
            let amount = d.amountMl * d.count  // the delta's amount is signed by its count (±1)
            var c = byAmount[amount] ?? Change(amountMl: amount)
            c.count += d.count
            let key: Change.Key = (d.loggedAt, d.id ?? Change.unknownID)
            if d.count > 0 {
                if d.id == nil { c.idUnknown = true }
                if c.newestAdded.map({ Change.precedes($0, key) }) ?? true { (c.addedAt, c.addedID) = key }
            } else if c.newestRemoved.map({ Change.precedes($0, key) }) ?? true {
                (c.removedAt, c.removedID) = key
            }
            byAmount[amount] = c
        }
        return byAmount.values.sorted { $0.amountMl < $1.amountMl }
    }

    /// Re-reads the user's stale rows from their live entries through `water_entries_amounts`
    /// (a row whose amount has none left stays stale until its removal drops it): binds `?1`
    /// user id.
    public static let refreshStaleSQL = SQLText(
        """
        UPDATE entry_amounts SET stale = 0, last_logged_at = (\(newest("logged_at"))), last_id = (\(newest("id")))
        WHERE user_id = ?1 AND stale = 1 AND EXISTS (
            SELECT 1 FROM water_entries w
            WHERE w.user_id = entry_amounts.user_id AND w.amount_ml = entry_amounts.amount_ml AND w.deleted = 0)
        """)

    /// The summary's recent amounts (spec §4 `recentAmountsMl`): the ≤ 3 distinct amounts of the
    /// user's live entries logged before the day's end, ordered by each amount's newest such
    /// entry (`logged_at DESC, id DESC`), where an amount whose newest entry is before the day
    /// counts only when that entry is among the `?4 + 1` newest live entries before the day
    /// (the window the summary has always looked back over). Binds `?1` user id, `?2` / `?3`
    /// the day's range (ms, `[start, end)`), `?4` the window − 1, `?5` `Int64.min` (the
    /// look-back's floor when fewer entries precede the day). Rows: `amount_ml`, newest first.
    ///
    /// Reads: through `entry_amounts_recent` the three newest fresh rows below the day's end and
    /// every row that is stale or newer than the day's end, then for each of those amounts one
    /// seek of `water_entries_amounts` for its newest entry before the day's end, and (only when
    /// an amount's newest entry is before the day) the window's oldest entry through
    /// `water_entries_list`. An amount left out has a fresh row whose newest entry is older than
    /// three others' — it cannot be among the three.
    public static let recentSQL = SQLText(
        """
        SELECT e.amount_ml FROM (
            SELECT (SELECT w.id FROM water_entries w
                    WHERE w.user_id = ?1 AND w.amount_ml = c.amount_ml AND w.deleted = 0 AND w.logged_at < ?3
                    ORDER BY w.logged_at DESC, w.id DESC LIMIT 1) AS newest
            FROM (
                SELECT amount_ml FROM (
                    SELECT amount_ml FROM entry_amounts WHERE user_id = ?1 AND stale = 0 AND last_logged_at < ?3
                    ORDER BY last_logged_at DESC, last_id DESC LIMIT 3
                ) AS f
                UNION ALL
                SELECT amount_ml FROM entry_amounts WHERE user_id = ?1 AND stale = 0 AND last_logged_at >= ?3
                UNION ALL
                SELECT amount_ml FROM entry_amounts WHERE user_id = ?1 AND stale = 1
            ) AS c
        ) AS n
        JOIN water_entries e ON e.user_id = ?1 AND e.id = n.newest
        WHERE e.logged_at >= ?2 OR e.logged_at > COALESCE((\(lookBack("logged_at"))), ?5)
            OR (e.logged_at = (\(lookBack("logged_at"))) AND e.id >= (\(lookBack("id"))))
        ORDER BY e.logged_at DESC, e.id DESC LIMIT 3
        """)
}

/// `column` of the newest live entry of the updated row's amount (`refreshStaleSQL`).
private func newest(_ column: String) -> String {
    """
    SELECT w.\(column) FROM water_entries w
    WHERE w.user_id = entry_amounts.user_id AND w.amount_ml = entry_amounts.amount_ml AND w.deleted = 0
    ORDER BY w.logged_at DESC, w.id DESC LIMIT 1
    """
}

/// `column` of the oldest entry of the summary's look-back: the `?4 + 1`-th newest live entry
/// before `?2` (none when there are fewer). Uncorrelated, so each engine evaluates it at most
/// once per statement, and only when a candidate lies before the day.
private func lookBack(_ column: String) -> String {
    """
    SELECT \(column) FROM water_entries WHERE user_id = ?1 AND deleted = 0 AND logged_at < ?2
    ORDER BY logged_at DESC, id DESC LIMIT 1 OFFSET ?4
    """
}

@usableFromInline enum EntryAmountsSQL {
    /// One amount's change: binds `?1` user, `?2` amount, `?3` live-count change, `?4` / `?5`
    /// the newest entry added (`logged_at`, id), `?6` / `?7` the newest removed (`Int64.min`, ''
    /// for none), `?8` / `?9` / `?10` a new row's newest and `stale`, `?11` 1 when an entry was
    /// added without its id, `?12` 1 when the newest added does not order after the newest
    /// removed (computed by the caller in byte order). The stored newest rises to the newest
    /// added; the row turns stale when a removal reaches the new stored newest (it may have been
    /// the newest) and fresh again when the newest added is at or after the stored newest (an
    /// upper bound even when stale) and after every removal (so it survived this write).
    @usableFromInline static let apply = SQLText(
        """
        INSERT INTO entry_amounts (user_id, amount_ml, live_count, last_logged_at, last_id, stale)
        VALUES (?1, ?2, ?3, ?8, ?9, ?10)
        ON CONFLICT (user_id, amount_ml) DO UPDATE SET
            live_count = entry_amounts.live_count + excluded.live_count,
            last_logged_at = CASE WHEN (entry_amounts.last_logged_at, entry_amounts.last_id) < (?4, ?5) THEN ?4
                ELSE entry_amounts.last_logged_at END,
            last_id = CASE WHEN (entry_amounts.last_logged_at, entry_amounts.last_id) < (?4, ?5) THEN ?5
                ELSE entry_amounts.last_id END,
            stale = CASE
                WHEN ?11 = 1 THEN 1
                WHEN (entry_amounts.last_logged_at, entry_amounts.last_id) <= (?6, ?7) AND ?12 = 1 THEN 1
                WHEN (entry_amounts.last_logged_at, entry_amounts.last_id) <= (?4, ?5) AND ?12 = 0 THEN 0
                ELSE entry_amounts.stale END
        """)
    /// Drops the amount's row once no live entry has it: binds `?1` user, `?2` amount.
    @usableFromInline static let dropEmpty = SQLText(
        "DELETE FROM entry_amounts WHERE user_id = ?1 AND amount_ml = ?2 AND live_count <= 0")
}
