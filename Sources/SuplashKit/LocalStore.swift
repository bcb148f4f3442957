import Foundation

/// One outbox row: a local write waiting to be pushed.
struct OutboxRow: Sendable {
    var seq: Int64
    var collection: String
    var documentID: String
    var op: String
    var data: String?
    var clientUpdatedAt: String

    /// The mutation as `POST /v1/sync` takes it (fixed member order: a retry sends the same bytes).
    var mutation: JSONText {
        var members: [(String, JSONText)] = [
            ("collection", .string(collection)), ("id", .string(documentID)),
            ("op", .string(op)),
        ]
        if let data { members.append(("data", .raw(data))) }
        members.append(("clientUpdatedAt", .string(clientUpdatedAt)))
        return .object(members)
    }
}

/// One pulled change, ready to store.
struct PulledChange: Sendable {
    var collection: String
    var id: String
    var deleted: Bool
    var data: String?
    var loggedAtMillis: Int64?
    /// The change's `updatedAt` (ms): the stamp of this version (healing compares it).
    var updatedAtMillis: Int64?
}

/// The server's verdict on one pushed mutation.
enum PushVerdict: Sendable {
    case applied
    /// The winner: its JSON (nil when the winner is a delete) and its `loggedAt`.
    case superseded(current: String?, loggedAtMillis: Int64?)
    case rejected(code: String, detail: String)
}

/// The SQLite file behind a ``SuplashClient``: documents (each with the local view `data`,
/// the last server-confirmed `server_data` and `stamp_ms`, the time of the write the local
/// view comes from), tombstones of deletes this device made or saw, the sync token, the
/// outbox, and rejected mutations. Every method is one transaction.
///
/// Stamps and tombstones let a device heal a server restored from a backup (410
/// `sync_history_changed`, spec §5): the snapshot it then reads is compared with the local
/// documents, and what the snapshot lacks or holds older is pushed back.
final class LocalStore {
    let db: SQLiteConnection

    init(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        db = try SQLiteConnection(path: path)
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS documents(
                collection TEXT NOT NULL, id TEXT NOT NULL,
                data TEXT, server_data TEXT, logged_at_ms INTEGER, stale INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY(collection, id));
            CREATE INDEX IF NOT EXISTS documents_logged ON documents(collection, logged_at_ms);
            CREATE TABLE IF NOT EXISTS outbox(
                seq INTEGER PRIMARY KEY AUTOINCREMENT, collection TEXT NOT NULL, doc_id TEXT NOT NULL,
                op TEXT NOT NULL, data TEXT, client_updated_at TEXT NOT NULL, device_id TEXT NOT NULL,
                idempotency_key TEXT NOT NULL, batch_key TEXT);
            CREATE INDEX IF NOT EXISTS outbox_doc ON outbox(collection, doc_id);
            CREATE TABLE IF NOT EXISTS rejected(
                seq INTEGER PRIMARY KEY, collection TEXT NOT NULL, doc_id TEXT NOT NULL, op TEXT NOT NULL,
                data TEXT, code TEXT NOT NULL, detail TEXT NOT NULL, rejected_at TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS tombstones(
                collection TEXT NOT NULL, id TEXT NOT NULL, stamp_ms INTEGER NOT NULL, PRIMARY KEY(collection, id));
            """)
        // Stores made before stamps existed gain the column (NULL: unknown, never pushed back
        // as newer than a snapshot's version).
        if (try db.query("SELECT 1 FROM pragma_table_info('documents') WHERE name = 'stamp_ms'")).isEmpty {
            try db.execute("ALTER TABLE documents ADD COLUMN stamp_ms INTEGER")
        }
        try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    // MARK: meta

    func meta(_ key: String) throws -> String? {
        try db.query("SELECT value FROM meta WHERE key = ?", [.text(key)]).first?.first?.string
    }

    func setMeta(_ key: String, _ value: String?) throws {
        if let value {
            try db.query(
                "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [.text(key), .text(value)])
        } else {
            try db.query("DELETE FROM meta WHERE key = ?", [.text(key)])
        }
    }

    /// Forgets everything but the device id (another user signed in on this install).
    func wipe() throws {
        try db.transaction {
            try db.execute(
                """
                DELETE FROM documents; DELETE FROM outbox; DELETE FROM rejected; DELETE FROM tombstones;
                DELETE FROM meta WHERE key <> 'device_id'
                """)
        }
    }

    // MARK: local writes

    /// Commits a local write: the outbox row and the new local view, in one transaction.
    /// `data` is the mutation's payload, `view` the document as the UI now sees it (nil: deleted).
    func recordLocalWrite(
        collection: String, id: String, op: String, data: String?, view: String?,
        loggedAtMillis: Int64?, clientUpdatedAt: String, deviceID: String
    ) throws {
        try db.transaction {
            try db.query(
                """
                INSERT INTO outbox(collection, doc_id, op, data, client_updated_at, device_id, idempotency_key)
                VALUES(?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(collection), .text(id), .text(op), data.map(SQLValue.text) ?? .null, .text(clientUpdatedAt),
                    .text(deviceID), .text(newUUID()),
                ])
            let stamp = Timestamp.parse(clientUpdatedAt).map(SQLValue.int) ?? .null
            try db.query(
                """
                INSERT INTO documents(collection, id, data, logged_at_ms, stamp_ms) VALUES(?, ?, ?, ?, ?)
                ON CONFLICT(collection, id) DO UPDATE SET data = excluded.data, logged_at_ms = excluded.logged_at_ms,
                  stamp_ms = excluded.stamp_ms
                """,
                [
                    .text(collection), .text(id), view.map(SQLValue.text) ?? .null,
                    loggedAtMillis.map(SQLValue.int) ?? .null, stamp,
                ])
            try recordTombstone(collection, id, deleted: op == "delete", stamp: stamp)
        }
    }

    /// Remembers (or forgets, for a live version) that `id` was deleted at `stamp`.
    private func recordTombstone(_ collection: String, _ id: String, deleted: Bool, stamp: SQLValue) throws {
        if deleted, stamp != .null {
            try db.query(
                """
                INSERT INTO tombstones(collection, id, stamp_ms) VALUES(?, ?, ?)
                ON CONFLICT(collection, id) DO UPDATE SET stamp_ms = max(stamp_ms, excluded.stamp_ms)
                """, [.text(collection), .text(id), stamp])
        } else if !deleted {
            try db.query("DELETE FROM tombstones WHERE collection = ? AND id = ?", [.text(collection), .text(id)])
        }
    }

    /// The `updatedAt` (ms) of a document in its server form, if it has one.
    private static func updatedAt(_ json: String?) -> SQLValue {
        guard let json, let object = JSONRead.object(json), let at = JSONRead.string(object["updatedAt"]).flatMap(Timestamp.parse) else {
            return .null
        }
        return .int(at)
    }

    func pendingCount() throws -> Int {
        Int(try db.query("SELECT count(*) FROM outbox").first?.first?.int ?? 0)
    }

    // MARK: push

    /// The next batch to push and its Idempotency-Key. A batch, once formed, is persisted
    /// (`batch_key`), so after a crash or a lost answer the same rows go again with the same
    /// key and the same bytes.
    func nextBatch(limit: Int) throws -> (key: String, rows: [OutboxRow])? {
        try db.transaction {
            var key = try db.query("SELECT batch_key FROM outbox WHERE batch_key IS NOT NULL ORDER BY seq LIMIT 1")
                .first?.first?.string
            if key == nil {
                let first = try db.query("SELECT seq, idempotency_key FROM outbox ORDER BY seq LIMIT 1")
                guard let row = first.first, let seq = row[0].int, let k = row[1].string else { return nil }
                try db.query(
                    """
                    UPDATE outbox SET batch_key = ? WHERE seq IN
                      (SELECT seq FROM outbox WHERE seq >= ? AND batch_key IS NULL ORDER BY seq LIMIT ?)
                    """, [.text(k), .int(seq), .int(Int64(limit))])
                key = k
            }
            guard let key else { return nil }
            let rows = try db.query(
                """
                SELECT seq, collection, doc_id, op, data, client_updated_at FROM outbox WHERE batch_key = ? ORDER BY seq
                """, [.text(key)]
            ).map { r in
                OutboxRow(
                    seq: r[0].int ?? 0, collection: r[1].string ?? "", documentID: r[2].string ?? "",
                    op: r[3].string ?? "", data: r[4].string, clientUpdatedAt: r[5].string ?? "")
            }
            return (key, rows)
        }
    }

    /// Gives a batch a fresh key (the server refused the old one as a mismatch).
    func rekeyBatch(_ key: String) throws {
        try db.query("UPDATE outbox SET batch_key = ? WHERE batch_key = ?", [.text(newUUID()), .text(key)])
    }

    private func hasPending(_ collection: String, _ id: String) throws -> Bool {
        try !db.query("SELECT 1 FROM outbox WHERE collection = ? AND doc_id = ? LIMIT 1", [.text(collection), .text(id)]).isEmpty
    }

    /// Settles a pushed batch: drops its rows from the outbox and applies each verdict.
    func applyPushResults(_ rows: [OutboxRow], _ verdicts: [PushVerdict], now: String) throws -> SyncReport {
        var report = SyncReport()
        try db.transaction {
            for (row, verdict) in zip(rows, verdicts) {
                try db.query("DELETE FROM outbox WHERE seq = ?", [.int(row.seq)])
                let laterWrites = try hasPending(row.collection, row.documentID)
                let key: [SQLValue] = [.text(row.collection), .text(row.documentID)]
                switch verdict {
                case .applied:
                    report.applied += 1
                    // The server now holds this write (the next pull brings its exact form).
                    if row.op == "delete" {
                        try db.query("UPDATE documents SET server_data = NULL WHERE collection = ? AND id = ?", key)
                    } else {
                        try db.query("UPDATE documents SET server_data = data WHERE collection = ? AND id = ?", key)
                    }
                case .superseded(let current, let loggedAt):
                    report.superseded += 1
                    try db.query(
                        "UPDATE documents SET server_data = ? WHERE collection = ? AND id = ?",
                        [current.map(SQLValue.text) ?? .null] + key)
                    if !laterWrites {
                        // The winner's stamp: its updatedAt; a winning delete is at least as late as ours.
                        let stamp =
                            current == nil
                            ? (Timestamp.parse(row.clientUpdatedAt).map(SQLValue.int) ?? .null)
                            : Self.updatedAt(current)
                        try db.query(
                            "UPDATE documents SET data = ?, logged_at_ms = ?, stamp_ms = ? WHERE collection = ? AND id = ?",
                            [current.map(SQLValue.text) ?? .null, loggedAt.map(SQLValue.int) ?? .null, stamp] + key)
                        try recordTombstone(row.collection, row.documentID, deleted: current == nil, stamp: stamp)
                    }
                case .rejected(let code, let detail):
                    report.rejected += 1
                    try db.query(
                        """
                        INSERT INTO rejected(seq, collection, doc_id, op, data, code, detail, rejected_at)
                        VALUES(?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                        [
                            .int(row.seq), .text(row.collection), .text(row.documentID), .text(row.op),
                            row.data.map(SQLValue.text) ?? .null, .text(code), .text(detail), .text(now),
                        ])
                    if !laterWrites {
                        // Back to what the server last confirmed (nothing, for a refused new entry).
                        let confirmed = try db.query("SELECT server_data FROM documents WHERE collection = ? AND id = ?", key)
                            .first?.first?.string
                        try db.query(
                            "UPDATE documents SET data = server_data, stamp_ms = ? WHERE collection = ? AND id = ?",
                            [Self.updatedAt(confirmed)] + key)
                        if row.op == "delete", confirmed != nil { try recordTombstone(row.collection, row.documentID, deleted: false, stamp: .null) }
                        if let confirmed = try db.query("SELECT server_data FROM documents WHERE collection = ? AND id = ?", key)
                            .first?.first?.string, let object = JSONRead.object(confirmed),
                            let at = JSONRead.string(object["loggedAt"]).flatMap(Timestamp.parse)
                        {
                            try db.query("UPDATE documents SET logged_at_ms = ? WHERE collection = ? AND id = ?", [.int(at)] + key)
                        }
                    }
                }
                try db.query("DELETE FROM documents WHERE collection = ? AND id = ? AND data IS NULL AND server_data IS NULL", key)
            }
        }
        return report
    }

    // MARK: pull

    /// Starts a full snapshot: every document is marked stale until the snapshot shows it.
    /// With `healing` (410 `sync_history_changed`: the server's history was replaced, e.g.
    /// by a restore) the local data is kept and compared with the snapshot instead
    /// (`applyPage`).
    func beginSnapshot(healing: Bool = false) throws {
        try db.transaction {
            try db.query("UPDATE documents SET stale = 1")
            try setMeta("sync_token", nil)
            try setMeta("snapshot_in_progress", healing ? "heal" : "1")
        }
    }

    /// The collection this library writes and so can push back when healing a server.
    static let healedCollection = "water_entries"

    /// Queues an upsert (or delete) of a local document to give a restored server back what
    /// it lost, stamped with the local version's own time: the server's last write wins
    /// decides against anything written there meanwhile.
    private func queueHeal(collection: String, id: String, view: String?, stamp: Int64, deviceID: String) throws {
        var data: SQLValue = .null
        if let view {
            guard let entry = WaterEntry(json: view) else { return }
            data = .text(entry.writableJSON(includeID: false).text)
        }
        try db.query(
            """
            INSERT INTO outbox(collection, doc_id, op, data, client_updated_at, device_id, idempotency_key)
            VALUES(?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(collection), .text(id), .text(view == nil ? "delete" : "upsert"), data,
                .text(Timestamp.format(millis: stamp)), .text(deviceID), .text(newUUID()),
            ])
    }

    /// Applies one page of changes and stores its token, in one transaction. A document
    /// with writes still in the outbox keeps its local view (only `server_data` moves).
    /// The last page of a snapshot removes what the snapshot did not show — except
    /// documents with unsent writes.
    ///
    /// While healing (`beginSnapshot(healing: true)`), for water entries without unsent
    /// writes: a stamped local version (or local delete) that differs from the snapshot's
    /// version is kept and queued for push with its own stamp (the server's last write wins
    /// decides; a superseded push takes the winner); on the last page, local entries and
    /// local deletes the snapshot did not show are queued too. Other collections follow the
    /// snapshot.
    /// - Returns: how many push-backs were queued.
    @discardableResult
    func applyPage(_ changes: [PulledChange], nextToken: String, hasMore: Bool) throws -> Int {
        try db.transaction {
            let healing = try meta("snapshot_in_progress") == "heal"
            let deviceID = try meta("device_id") ?? ""
            var queued = 0
            for change in changes {
                let key: [SQLValue] = [.text(change.collection), .text(change.id)]
                let pending = try hasPending(change.collection, change.id)
                let data = change.deleted ? SQLValue.null : (change.data.map(SQLValue.text) ?? .null)
                if healing, !pending, !change.deleted, change.collection == Self.healedCollection,
                    change.updatedAtMillis != nil
                {
                    let local = try db.query("SELECT data, stamp_ms FROM documents WHERE collection = ? AND id = ?", key).first
                    let tombstone = try db.query("SELECT stamp_ms FROM tombstones WHERE collection = ? AND id = ?", key)
                        .first?.first?.int
                    // The snapshot's `updatedAt` is when the restored server took that version (a
                    // version another device pushed back while healing carries the heal's time),
                    // not its last-write-wins stamp: a differing local version is pushed back with
                    // its own stamp, and the server's last write wins decides (a losing push is
                    // answered `superseded` and the winner replaces the local view).
                    if let row = local, let view = row[0].string, let stamp = row[1].int,
                        WaterEntry(json: view) != change.data.flatMap(WaterEntry.init(json:))
                    {
                        try db.query(
                            "UPDATE documents SET server_data = ?, stale = 0 WHERE collection = ? AND id = ?",
                            [data] + key)
                        try queueHeal(collection: change.collection, id: change.id, view: view, stamp: stamp, deviceID: deviceID)
                        queued += 1
                        continue
                    }
                    if local?[0].string == nil, let stamp = tombstone {
                        try db.query(
                            """
                            INSERT INTO documents(collection, id, data, server_data, stamp_ms, stale) VALUES(?, ?, NULL, ?, ?, 0)
                            ON CONFLICT(collection, id) DO UPDATE SET data = NULL, server_data = excluded.server_data,
                              stamp_ms = excluded.stamp_ms, stale = 0
                            """, key + [data, .int(stamp)])
                        try queueHeal(collection: change.collection, id: change.id, view: nil, stamp: stamp, deviceID: deviceID)
                        queued += 1
                        continue
                    }
                }
                if pending {
                    try db.query(
                        """
                        INSERT INTO documents(collection, id, data, server_data, stale) VALUES(?, ?, NULL, ?, 0)
                        ON CONFLICT(collection, id) DO UPDATE SET server_data = excluded.server_data, stale = 0
                        """, key + [data])
                } else {
                    let stamp = change.updatedAtMillis.map(SQLValue.int) ?? .null
                    try db.query(
                        """
                        INSERT INTO documents(collection, id, data, server_data, logged_at_ms, stamp_ms, stale)
                        VALUES(?, ?, ?, ?, ?, ?, 0)
                        ON CONFLICT(collection, id) DO UPDATE SET data = excluded.data, server_data = excluded.server_data,
                          logged_at_ms = excluded.logged_at_ms, stamp_ms = excluded.stamp_ms, stale = 0
                        """, key + [data, data, change.loggedAtMillis.map(SQLValue.int) ?? .null, stamp])
                    try recordTombstone(change.collection, change.id, deleted: change.deleted, stamp: stamp)
                }
                try db.query("DELETE FROM documents WHERE collection = ? AND id = ? AND data IS NULL AND server_data IS NULL", key)
            }
            if !hasMore, try meta("snapshot_in_progress") != nil {
                if healing {
                    // Entries the restored server lacks: keep them and give them back.
                    let lost = try db.query(
                        """
                        SELECT id, data, stamp_ms FROM documents d WHERE stale = 1 AND collection = ? AND data IS NOT NULL
                          AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.collection = d.collection AND o.doc_id = d.id)
                        """, [.text(Self.healedCollection)])
                    let now = Timestamp.millis(Date())
                    for row in lost {
                        guard let id = row[0].string, let view = row[1].string else { continue }
                        try queueHeal(
                            collection: Self.healedCollection, id: id, view: view,
                            stamp: min(row[2].int ?? now, now), deviceID: deviceID)
                        try db.query(
                            "UPDATE documents SET stale = 0 WHERE collection = ? AND id = ?",
                            [.text(Self.healedCollection), .text(id)])
                        queued += 1
                    }
                    // Deletes the restored server lacks: give them back too, so that a device that
                    // missed a delete and pushes the entry back loses to it (last write wins).
                    let deletes = try db.query(
                        """
                        SELECT id, stamp_ms FROM tombstones t WHERE collection = ?
                          AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.collection = t.collection AND d.id = t.id
                                          AND d.stale = 0)
                          AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.collection = t.collection AND o.doc_id = t.id)
                        """, [.text(Self.healedCollection)])
                    for row in deletes {
                        guard let id = row[0].string, let stamp = row[1].int else { continue }
                        try queueHeal(collection: Self.healedCollection, id: id, view: nil, stamp: stamp, deviceID: deviceID)
                        queued += 1
                    }
                }
                try db.query("UPDATE documents SET server_data = NULL WHERE stale = 1")
                try db.query(
                    """
                    DELETE FROM documents WHERE stale = 1 AND NOT EXISTS
                      (SELECT 1 FROM outbox o WHERE o.collection = documents.collection AND o.doc_id = documents.id)
                    """)
                try db.query("UPDATE documents SET stale = 0")
                try setMeta("snapshot_in_progress", nil)
            }
            if !hasMore {
                // Tombstones older than the server's default tombstone retention are of no more use.
                try db.query("DELETE FROM tombstones WHERE stamp_ms < ?", [.int(Timestamp.millis(Date()) - 90 * 86_400_000)])
            }
            try setMeta("sync_token", nextToken)
            return queued
        }
    }

    // MARK: reads

    /// Live water entries with `loggedAt` in [from, to), newest first.
    func entries(fromMillis: Int64, toMillis: Int64) throws -> [WaterEntry] {
        try db.query(
            """
            SELECT d.data, EXISTS(SELECT 1 FROM outbox o WHERE o.collection = d.collection AND o.doc_id = d.id)
            FROM documents d WHERE d.collection = 'water_entries' AND d.data IS NOT NULL
              AND d.logged_at_ms >= ? AND d.logged_at_ms < ?
            ORDER BY d.logged_at_ms DESC, d.id DESC
            """, [.int(fromMillis), .int(toMillis)]
        ).compactMap { row in
            guard let text = row[0].string, var entry = WaterEntry(json: text) else { return nil }
            entry.isPending = (row[1].int ?? 0) != 0
            return entry
        }
    }

    func document(_ collection: String, _ id: String) throws -> String? {
        try db.query("SELECT data FROM documents WHERE collection = ? AND id = ?", [.text(collection), .text(id)])
            .first?.first?.string
    }

    func firstDocument(_ collection: String) throws -> String? {
        try db.query("SELECT data FROM documents WHERE collection = ? AND data IS NOT NULL LIMIT 1", [.text(collection)])
            .first?.first?.string
    }

    func rejected() throws -> [RejectedMutation] {
        try db.query("SELECT collection, doc_id, code, detail FROM rejected ORDER BY seq").map {
            RejectedMutation(
                collection: $0[0].string ?? "", documentID: $0[1].string ?? "", code: $0[2].string ?? "",
                detail: $0[3].string ?? "")
        }
    }
}

extension WaterEntry {
    /// Reads the server's (or the local) JSON form of an entry.
    init?(json text: String) {
        guard let o = JSONRead.object(text), let id = JSONRead.string(o["id"]), let amount = JSONRead.int(o["amountMl"]),
            let at = JSONRead.string(o["loggedAt"]).flatMap(Timestamp.parse)
        else { return nil }
        self.init(
            id: id, amountMl: amount, loggedAt: Timestamp.date(millis: at),
            source: JSONRead.string(o["source"]).flatMap(EntrySource.init(rawValue:)) ?? .api,
            note: JSONRead.string(o["note"]), healthKitUUID: JSONRead.string(o["healthKitUUID"]))
    }

    /// The writable fields, as a sync upsert or a REST/batch create carries them.
    func writableJSON(includeID: Bool) -> JSONText {
        var members: [(String, JSONText)] = []
        if includeID { members.append(("id", .string(id))) }
        members += [
            ("amountMl", .int(Int64(amountMl))), ("loggedAt", .string(Timestamp.format(loggedAt))),
            ("source", .string(source.rawValue)),
        ]
        if let healthKitUUID { members.append(("healthKitUUID", .string(healthKitUUID))) }
        if let note { members.append(("note", .string(note))) }
        return .object(members)
    }
}
