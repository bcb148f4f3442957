import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// The device registry (spec §9 "Devices"; docs/push.md). A registration runs under the
/// user's lock (`UserLock`: registrations of one account one after the other, so the 20-device
/// bound holds) and reads the registering session `FOR SHARE` on PostgreSQL, so it and that
/// session's logout are ordered: a logout that commits first leaves the device without tokens,
/// one that commits after removes them. One round trip (a pipeline) before the commit; the
/// writes are queued and travel with it.
extension DeviceRepository where Self: SQLStore {
    public func registerDevice(
        userID: String, deviceID: String, sessionID: String?, registration r: DeviceRegistration,
        tokens sealed: [SealedPushToken], now: Int64
    ) throws -> DeviceRegisterOutcome {
        try transaction { tx in
            let key: [SQLValue] = [.text(userID), .text(deviceID)]
            var reads = [SQLStatement(UserLock.statement, [.text(userID)]), SQLStatement(DeviceSQL.createdAt, key)]
            if let sessionID { reads.append(SQLStatement(DeviceSQL.lockSession, [.text(sessionID)])) }
            let rows = try tx.pipeline(reads)
            guard !rows[0].isEmpty else { throw RepositoryError.notFound }
            let createdAt = rows[1].first?["created_at"].int64
            // The session's logout committed first: store the device as that logout left it.
            let sessionLive = sessionID == nil || rows[2].first.map { $0["revoked_at"].isNull } == true
            let tokens = sessionLive ? sealed : []
            try tx.enqueue(
                DeviceSQL.upsert,
                key + [
                    .text(r.platform.rawValue), .text(r.bundleID), .text(r.environment.rawValue), optional(r.locale),
                    optional(r.appVersion), optional(sessionID), .integer(now),
                ])
            try tx.enqueue(DeviceSQL.deleteTokens, key)
            for t in tokens {
                for index in t.lookupIndexes {
                    try tx.enqueue(DeviceSQL.takeToken, [.text(t.pushType.rawValue), .text(index)])
                }
                try tx.enqueue(
                    DeviceSQL.insertToken,
                    key + [.text(t.pushType.rawValue), .text(t.envelope), .text(t.blindIndex), .integer(now)])
            }
            // An alert token can receive reminders: plan the user's next one now (a reminder
            // that fell due while no device could receive it was cancelled, not sent).
            if tokens.contains(where: { $0.pushType == .alert }), let profile = rows[0].first.map({ StoreRows.user($0).profile }),
                profile.reminders.enabled
            {
                try ReminderPlanner.replan(tx, userID: userID, profile: profile, intakeWrittenAt: nil, now: now)
            }
            var device = Device(id: deviceID, registration: r, createdAt: createdAt ?? now, now: now)
            device.pushTypes = tokens.map(\.pushType).sorted()
            guard createdAt == nil else { return .replaced(device) }
            try tx.enqueue(DeviceSQL.evict, key + [.integer(Int64(DeviceRules.maxDevicesPerUser - 1))])
            return .created(device)
        }
    }

    public func devices(userID: String) throws -> [Device] {
        let u: [SQLValue] = [.text(userID)]
        let rows = try snapshotPipeline([SQLStatement(DeviceSQL.list, u), SQLStatement(DeviceSQL.listPushTypes, u)])
        return DeviceStatements.devices(rows[0], pushTypes: rows[1])
    }

    public func device(userID: String, id: String) throws -> Device? {
        let key: [SQLValue] = [.text(userID), .text(id)]
        let rows = try snapshotPipeline([SQLStatement(DeviceSQL.one, key), SQLStatement(DeviceSQL.onePushTypes, key)])
        return DeviceStatements.devices(rows[0], pushTypes: rows[1]).first
    }

    public func deleteDevice(userID: String, id: String) throws -> Bool {
        try transaction { tx in try tx.execute(DeviceSQL.delete, [.text(userID), .text(id)]) > 0 }
    }
}

private func optional(_ text: String?) -> SQLValue { text.map { .text($0) } ?? .null }

/// Device-registry statements other use cases run inside their own transactions.
public enum DeviceStatements {
    /// Deletes the push tokens of every device `sessionID` registered (the devices stay,
    /// without tokens): the session was logged out or revoked (spec §9). Queued with the
    /// transaction (no round trip on PostgreSQL).
    /// - Throws: the engine's error (SQLite runs it now).
    public static func removeTokens(_ tx: some StoreTransaction, sessionID: String) throws {
        try tx.enqueue(removeTokensOfSession, [.text(sessionID)])
    }

    /// Deletes the push tokens of every device of `userID` registered by a revoked session
    /// (a password reset or an Apple account takeover revoked them all). Queued like
    /// `removeTokens`.
    /// - Throws: the engine's error (SQLite runs it now).
    public static func removeTokensOfRevokedSessions(_ tx: some StoreTransaction, userID: String) throws {
        try tx.enqueue(removeTokensOfRevoked, [.text(userID)])
    }

    static let removeTokensOfRevoked = SQLText(
        """
        DELETE FROM device_tokens WHERE (user_id, device_id) IN (
            SELECT d.user_id, d.id FROM devices d JOIN sessions s ON s.id = d.session_id
            WHERE d.user_id = ?1 AND s.revoked_at IS NOT NULL)
        """)

    /// `removeTokens`' statement; binds `?1` = session id (index `devices_session`).
    public static let removeTokensOfSession = SQLText(
        """
        DELETE FROM device_tokens WHERE (user_id, device_id) IN (SELECT user_id, id FROM devices WHERE session_id = ?1)
        """)

    /// Devices from rows of `DeviceSQL.list` / `one`, with the push types of rows of
    /// `listPushTypes` / `onePushTypes`; rows with a value the domain does not know are skipped.
    static func devices<Row: SQLRowValues>(_ rows: [Row], pushTypes: [Row]) -> [Device] {
        var types: [String: [PushType]] = [:]
        for row in pushTypes {
            guard let id = row["device_id"].text, let type = row["push_type"].text.flatMap(PushType.init(rawValue:)) else {
                continue
            }
            types[id, default: []].append(type)
        }
        return rows.compactMap { row in
            guard let id = row["id"].text, let platform = row["platform"].text.flatMap(DevicePlatform.init(rawValue:)),
                let environment = row["environment"].text.flatMap(PushEnvironment.init(rawValue:)),
                let bundleID = row["bundle_id"].text
            else { return nil }
            return Device(
                id: id, platform: platform, bundleID: bundleID, environment: environment, locale: row["locale"].text,
                appVersion: row["app_version"].text, pushTypes: (types[id] ?? []).sorted(),
                createdAt: row["created_at"].int64 ?? 0, updatedAt: row["updated_at"].int64 ?? 0,
                lastSeenAt: row["last_seen_at"].int64 ?? 0)
        }
    }
}

/// The registry's statements (`devices`, `device_tokens`: migration 0008).
enum DeviceSQL {
    static let columns = "id, platform, bundle_id, environment, locale, app_version, created_at, updated_at, last_seen_at"

    static let createdAt = SQLText("SELECT created_at FROM devices WHERE user_id = ?1 AND id = ?2")
    /// The registering session, read `FOR SHARE` on PostgreSQL (its logout's `UPDATE` waits
    /// for the registration, or the registration for the logout).
    static let lockSession = SQLText { d in
        "SELECT revoked_at FROM sessions WHERE id = ?1\(d == .postgres ? " FOR SHARE" : "")"
    }
    /// Binds user, device, platform, bundle id, environment, locale, app version, session, now.
    static let upsert = SQLText(
        """
        INSERT INTO devices (user_id, id, platform, bundle_id, environment, locale, app_version, session_id,
                             created_at, updated_at, last_seen_at)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?9)
        ON CONFLICT (user_id, id) DO UPDATE SET platform = excluded.platform, bundle_id = excluded.bundle_id,
            environment = excluded.environment, locale = excluded.locale, app_version = excluded.app_version,
            session_id = excluded.session_id, updated_at = excluded.updated_at, last_seen_at = excluded.last_seen_at
        """)
    static let deleteTokens = SQLText("DELETE FROM device_tokens WHERE user_id = ?1 AND device_id = ?2")
    /// The token wherever it is registered for this push type, by its blind index (index
    /// `device_tokens_index`): it moves to the registering device.
    static let takeToken = SQLText("DELETE FROM device_tokens WHERE push_type = ?1 AND token_index = ?2")
    /// Binds user, device, push type, envelope, blind index, now; the plaintext column stays empty.
    static let insertToken = SQLText { d in
        """
        INSERT INTO device_tokens (user_id, device_id, push_type, token, sealed_token, token_index, registered_at)
        VALUES (?1, ?2, ?3, \(emptyToken(d)), ?4, ?5, ?6)
        """
    }
    /// The empty `token` of sealed rows, a zero-length blob (the column held plaintext before
    /// tokens were sealed).
    static func emptyToken(_ d: SQLDialect) -> String { d == .sqlite ? "X''" : "'\\x'::bytea" }
    /// Rows still holding their plaintext (`token_index` is set with the envelope).
    /// Binds the last key read (user, device, push type; empty texts for the first batch) and the batch size.
    static let plaintext = SQLText(
        """
        SELECT user_id, device_id, push_type, token FROM device_tokens
        WHERE token_index IS NULL AND (user_id, device_id, push_type) > (?1, ?2, ?3)
        ORDER BY user_id, device_id, push_type LIMIT ?4
        """)
    /// Binds envelope, blind index, user, device, push type, the plaintext it replaces.
    static let sealPlaintext = SQLText { d in
        """
        UPDATE device_tokens SET token = \(emptyToken(d)), sealed_token = ?1, token_index = ?2
        WHERE user_id = ?3 AND device_id = ?4 AND push_type = ?5 AND token = ?6 AND token_index IS NULL
        """
    }
    static let dropPlaintext = SQLText("DELETE FROM device_tokens WHERE token_index IS NULL")
    /// Keeps the registering device `?2` and the `?3` most recently seen others of user `?1`
    /// (index `devices_user_seen`); tokens go with their devices (`ON DELETE CASCADE`).
    static let evict = SQLText(
        """
        DELETE FROM devices WHERE user_id = ?1 AND id <> ?2 AND id NOT IN (
            SELECT id FROM devices WHERE user_id = ?1 AND id <> ?2 ORDER BY last_seen_at DESC, id DESC LIMIT ?3)
        """)
    static let list = SQLText("SELECT \(columns) FROM devices WHERE user_id = ?1 ORDER BY last_seen_at DESC, id")
    static let listPushTypes = SQLText("SELECT device_id, push_type FROM device_tokens WHERE user_id = ?1")
    static let one = SQLText("SELECT \(columns) FROM devices WHERE user_id = ?1 AND id = ?2")
    static let onePushTypes = SQLText("SELECT device_id, push_type FROM device_tokens WHERE user_id = ?1 AND device_id = ?2")
    static let delete = SQLText("DELETE FROM devices WHERE user_id = ?1 AND id = ?2")
}
