import SuplashDomain
import SuplashSQL

/// Revoke jobs for Apple refresh tokens (docs/apple.md, "Revocation"): queued by the erasure
/// (`AccountErasure`), claimed by the revoke thread of any instance with `OutboxClaim` (so two
/// instances never send one job at a time), ended by `recordRevokeAttempt`. A job that ends
/// (done or given up) has its sealed token blanked.
extension AppleRevokeJobRepository where Self: SQLStore {
    public func claimDueRevokeJobs(now: Int64, limit: Int, leaseMs: Int64) throws -> [AppleRevokeJob] {
        try transaction { tx in
            try AppleLifecycleSQL.claim.claim(tx, now: now, limit: limit, leaseMs: leaseMs).map { row in
                AppleRevokeJob(
                    id: row["id"].text ?? "", sub: row["sub"].text ?? "", clientID: row["client_id"].text ?? "",
                    sealedRefreshToken: row["refresh_token"].text ?? "", attempts: Int(row["attempts"].int64 ?? 0))
            }
        }
    }

    public func recordRevokeAttempt(id: String, attempts: Int, outcome: AppleRevokeOutcome, now: Int64) throws {
        _ = try transaction { tx in
            switch outcome {
            case .done:
                try tx.execute(AppleLifecycleSQL.done, [.integer(Int64(attempts)), .integer(now), .text(id)])
            case .retry(let at, let code):
                try tx.execute(AppleLifecycleSQL.retry, [.integer(Int64(attempts)), .integer(at), .text(code), .text(id)])
            case .failed(let code):
                try tx.execute(AppleLifecycleSQL.failed, [.integer(Int64(attempts)), .integer(now), .text(code), .text(id)])
            }
        }
    }

    public func nextRevokeAttemptTime() throws -> Int64? {
        try reading { c in try c.queryOne(AppleLifecycleSQL.nextAttempt, [])?["t"].int64 }
    }

    public func revokeJobCounts() throws -> (pending: Int, failed: Int) {
        try reading { c in
            let row = try c.queryOne(AppleLifecycleSQL.counts, [])
            return (Int(row?["pending"].int64 ?? 0), Int(row?["failed"].int64 ?? 0))
        }
    }

    public func purgeRevokeJobs(endedBefore: Int64) throws -> Int {
        try transaction { tx in try tx.execute(AppleLifecycleSQL.purgeJobs, [.integer(endedBefore)]) }
    }
}

/// The sealed columns (docs/apple.md, "Sealed secrets"): Apple refresh tokens on identities
/// and on revoke jobs, both bound to (`apple_identities`, `refresh_token`, `sub`); APNs device
/// tokens, bound to (`device_tokens`, `token`, `<user>/<device>/<push type>`) with their blind
/// index.
extension SealedValueRepository where Self: SQLStore {
    public func sealedKeyIDs() throws -> Set<String> {
        try reading { c in Set(try c.query(AppleLifecycleSQL.keyIDs, []).compactMap { $0["k"].text }) }
    }

    public func sealedValues() throws -> [SealedValue] {
        try reading { c in
            let identities = try c.query(AppleLifecycleSQL.identityTokens, []).map { row in
                let sub = row["sub"].text ?? ""
                return AppleLifecycleSQL.value(table: "apple_identities", rowKey: sub, sub: sub, row["refresh_token"].text)
            }
            let jobs = try c.query(AppleLifecycleSQL.jobTokens, []).map { row in
                AppleLifecycleSQL.value(
                    table: "apple_revoke_jobs", rowKey: row["id"].text ?? "", sub: row["sub"].text ?? "", row["refresh_token"].text)
            }
            let devices = try c.query(AppleLifecycleSQL.deviceTokens, []).map { row in
                let key = [row["user_id"].text, row["device_id"].text, row["push_type"].text].map { $0 ?? "" }.joined(separator: "/")
                return SealedValue(
                    table: DeviceTokenSealing.table, rowKey: key, contextTable: DeviceTokenSealing.table,
                    contextColumn: DeviceTokenSealing.column, contextRowID: key, envelope: row["sealed_token"].text ?? "")
            }
            return identities + jobs + devices
        }
    }

    public func replaceSealedValue(_ value: SealedValue, with envelope: String, blindIndex: String?) throws -> Bool {
        switch value.table {
        case DeviceTokenSealing.table:
            let key = value.rowKey.split(separator: "/", omittingEmptySubsequences: false).map { SQLValue.text(String($0)) }
            guard key.count == 3, let blindIndex else { return false }
            return try transaction { tx in
                try tx.execute(AppleLifecycleSQL.replaceDeviceToken, [.text(envelope), .text(blindIndex)] + key + [.text(value.envelope)])
                    > 0
            }
        default:
            let statement =
                value.table == "apple_identities" ? AppleLifecycleSQL.replaceIdentityToken : AppleLifecycleSQL.replaceJobToken
            return try transaction { tx in
                try tx.execute(statement, [.text(envelope), .text(value.rowKey), .text(value.envelope)]) > 0
            }
        }
    }

    public func plaintextDeviceTokens(after: PlaintextDeviceToken?, limit: Int) throws -> [PlaintextDeviceToken] {
        let key: [SQLValue] = [
            .text(after?.userID ?? ""), .text(after?.deviceID ?? ""), .text(after?.pushType.rawValue ?? ""),
            .integer(Int64(max(1, limit))),
        ]
        return try reading { c in
            try c.query(DeviceSQL.plaintext, key).compactMap { row in
                guard let type = row["push_type"].text.flatMap(PushType.init(rawValue:)) else { return nil }
                return PlaintextDeviceToken(
                    userID: row["user_id"].text ?? "", deviceID: row["device_id"].text ?? "", pushType: type,
                    token: row["token"].bytes ?? [])
            }
        }
    }

    public func sealPlaintextDeviceTokens(_ sealed: [(PlaintextDeviceToken, SealedPushToken)]) throws -> Int {
        try transaction { tx in
            var n = 0
            for (plain, token) in sealed {
                n += try tx.execute(
                    DeviceSQL.sealPlaintext,
                    [
                        .text(token.envelope), .text(token.blindIndex), .text(plain.userID), .text(plain.deviceID),
                        .text(plain.pushType.rawValue), .blob(plain.token),
                    ])
            }
            return n
        }
    }

    public func dropPlaintextDeviceTokens() throws -> Int {
        try transaction { tx in try tx.execute(DeviceSQL.dropPlaintext, []) }
    }
}

/// Apple's account events (spec §9): the `jti` is inserted first, so a duplicate changes
/// nothing; each event then acts on the account linked to its `sub`, in the same transaction.
/// `jti`s older than 8 days are forgotten as new events arrive.
extension AppleAccountEventRepository where Self: SQLStore {
    public func applyAppleEvent(jti: String, event: AppleAccountEvent, now: Int64) throws -> AppleEventOutcome {
        try transaction { tx in
            guard try tx.queryOne(AppleLifecycleSQL.rememberEvent, [.text(jti), .integer(now)]) != nil else { return .duplicate }
            try tx.execute(AppleLifecycleSQL.forgetOldEvents, [.integer(now - AppleRetention.eventMs)])
            let sub: String
            switch event {
            case .emailDisabled(let s, _, _), .emailEnabled(let s, _, _), .consentRevoked(let s), .accountDelete(let s): sub = s
            }
            guard let userID = try tx.queryOne(AppleLifecycleSQL.userOfSub, [.text(sub)])?["user_id"].text else {
                return .unknownAccount
            }
            switch event {
            case .emailDisabled(_, let email, let eventTime):
                try tx.execute(AppleLifecycleSQL.hold, [.text(email), .integer(eventTime)])
                return .mailHold(held: try Self.isHeld(tx, email))
            case .emailEnabled(_, let email, let eventTime):
                try tx.execute(AppleLifecycleSQL.release, [.text(email), .integer(eventTime)])
                return .mailHold(held: try Self.isHeld(tx, email))
            case .consentRevoked:
                let revoked = try tx.query(AppleLifecycleSQL.revokeSessions, [.integer(now), .text(userID)]).compactMap {
                    $0["id"].text
                }
                for id in revoked { tx.announce(.session(id: id)) }
                try DeviceStatements.removeTokensOfRevokedSessions(tx, userID: userID)
                tx.announce(.userCutoff(userID: userID, issuedBeforeSeconds: now / 1000))
                // Apple revoked the tokens itself: nothing is left to revoke.
                try tx.execute(AppleLifecycleSQL.forgetToken, [.text(sub)])
                return .sessionsRevoked(userID: userID, sessionIDs: revoked)
            case .accountDelete:
                _ = try AccountErasure.erase(tx, userID: userID, now: now, revokeAtApple: false)
                return .accountErased(userID: userID)
            }
        }
    }
}

extension AppleAccountEventRepository where Self: SQLStore {
    public func forgetAppleEvents(receivedBefore: Int64) throws -> Int {
        try transaction { tx in try tx.execute(AppleLifecycleSQL.forgetOldEvents, [.integer(receivedBefore)]) }
    }

    /// Whether mail to `address` is held now (`OutboxSQL.notHeld`).
    static func isHeld(_ tx: some StoreTransaction, _ address: String) throws -> Bool {
        try tx.queryOne(AppleLifecycleSQL.held, [.text(address)]) != nil
    }
}

/// The Apple lifecycle's statements (`apple_revoke_jobs`, `apple_notifications`, `mail_holds`:
/// migrations 0009, 0011, 0013).
public enum AppleLifecycleSQL {
    static let claim = OutboxClaim(
        table: "apple_revoke_jobs", returning: ["id", "sub", "client_id", "refresh_token", "created_at", "attempts"])
    static let done = SQLText(
        """
        UPDATE apple_revoke_jobs SET attempts = ?1, delivered_at = ?2, refresh_token = '', last_error = NULL
        WHERE id = ?3 AND delivered_at IS NULL AND failed_at IS NULL
        """)
    static let retry = SQLText(
        """
        UPDATE apple_revoke_jobs SET attempts = ?1, next_attempt_at = ?2, last_error = ?3
        WHERE id = ?4 AND delivered_at IS NULL AND failed_at IS NULL
        """)
    static let failed = SQLText(
        """
        UPDATE apple_revoke_jobs SET attempts = ?1, failed_at = ?2, last_error = ?3, refresh_token = ''
        WHERE id = ?4 AND delivered_at IS NULL AND failed_at IS NULL
        """)
    static let nextAttempt = SQLText(
        "SELECT min(next_attempt_at) AS t FROM apple_revoke_jobs WHERE delivered_at IS NULL AND failed_at IS NULL")
    static let counts = SQLText(
        """
        SELECT sum(CASE WHEN delivered_at IS NULL AND failed_at IS NULL THEN 1 ELSE 0 END) AS pending,
            sum(CASE WHEN failed_at IS NOT NULL THEN 1 ELSE 0 END) AS failed
        FROM apple_revoke_jobs
        """)

    /// The key id of `s1.<16 hex>.…` envelopes.
    static let keyIDs = SQLText(
        """
        SELECT substr(refresh_token, 4, 16) AS k FROM apple_identities WHERE refresh_token IS NOT NULL
        UNION SELECT substr(refresh_token, 4, 16) AS k FROM apple_revoke_jobs WHERE refresh_token <> ''
        UNION SELECT substr(sealed_token, 4, 16) AS k FROM device_tokens WHERE token_index IS NOT NULL
        """)
    static let identityTokens = SQLText("SELECT sub, refresh_token FROM apple_identities WHERE refresh_token IS NOT NULL")
    static let jobTokens = SQLText("SELECT id, sub, refresh_token FROM apple_revoke_jobs WHERE refresh_token <> ''")
    static let replaceIdentityToken = SQLText(
        "UPDATE apple_identities SET refresh_token = ?1 WHERE sub = ?2 AND refresh_token = ?3")
    static let replaceJobToken = SQLText("UPDATE apple_revoke_jobs SET refresh_token = ?1 WHERE id = ?2 AND refresh_token = ?3")
    static let deviceTokens = SQLText(
        "SELECT user_id, device_id, push_type, sealed_token FROM device_tokens WHERE token_index IS NOT NULL")
    /// Binds envelope, blind index, user, device, push type, the envelope it replaces.
    static let replaceDeviceToken = SQLText(
        """
        UPDATE device_tokens SET sealed_token = ?1, token_index = ?2
        WHERE user_id = ?3 AND device_id = ?4 AND push_type = ?5 AND sealed_token = ?6
        """)

    static func value(table: String, rowKey: String, sub: String, _ envelope: String?) -> SealedValue {
        SealedValue(
            table: table, rowKey: rowKey, contextTable: "apple_identities", contextColumn: "refresh_token",
            contextRowID: sub, envelope: envelope ?? "")
    }

    /// `jti`s received before ?1 (index `apple_notifications_received`); kept
    /// `AppleRetention.eventMs`.
    public static let forgetOldEvents = SQLText("DELETE FROM apple_notifications WHERE received_at < ?1")
    /// Jobs that ended before ?1 (the partial index `apple_revoke_jobs_ended`; its predicate is
    /// repeated so that SQLite uses it); pending jobs stay.
    public static let purgeJobs = SQLText(
        """
        DELETE FROM apple_revoke_jobs
        WHERE (delivered_at IS NOT NULL OR failed_at IS NOT NULL) AND coalesce(delivered_at, failed_at) < ?1
        """)
    static let rememberEvent = SQLText(
        "INSERT INTO apple_notifications (jti, received_at) VALUES (?1, ?2) ON CONFLICT (jti) DO NOTHING RETURNING jti")
    static let userOfSub = SQLText { d in "SELECT user_id FROM apple_identities WHERE sub = ?1 \(d.forUpdate())" }
    /// Each event time is kept when newer than the stored one: the newer of the latest
    /// `email-disabled` (`held_at`) and `email-enabled` (`released_at`) decides, whatever order
    /// they arrive in (an address first seen released gets `held_at` 0).
    static let hold = SQLText(
        """
        INSERT INTO mail_holds (address, held_at) VALUES (?1, ?2)
        ON CONFLICT (address) DO UPDATE SET held_at = excluded.held_at WHERE mail_holds.held_at < excluded.held_at
        """)
    static let release = SQLText(
        """
        INSERT INTO mail_holds (address, held_at, released_at) VALUES (?1, 0, ?2)
        ON CONFLICT (address) DO UPDATE SET released_at = excluded.released_at
        WHERE mail_holds.released_at IS NULL OR mail_holds.released_at < excluded.released_at
        """)
    static let held = SQLText(
        "SELECT 1 FROM mail_holds WHERE address = ?1 AND (released_at IS NULL OR released_at < held_at)")
    static let revokeSessions = SQLText(
        """
        UPDATE sessions SET revoked_at = ?1, revoked_reason = 'apple_consent_revoked'
        WHERE user_id = ?2 AND revoked_at IS NULL RETURNING id
        """)
    static let forgetToken = SQLText("UPDATE apple_identities SET refresh_token = NULL, client_id = NULL WHERE sub = ?1")
}
