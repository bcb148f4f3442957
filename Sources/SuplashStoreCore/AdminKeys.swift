import SuplashDomain
import SuplashSQL

/// Admin keys (spec: admin API): a named key's hash, created once, revoked at most once.
/// Every change is announced (`StoreRevocation.adminKeys`) so that each instance re-reads
/// the table.
extension AdminKeyRepository where Self: SQLStore {
    public func createAdminKey(name: String, keyHash: [UInt8], now: Int64) throws {
        try transaction { tx in
            if try tx.queryOne(AdminKeySQL.exists, [.text(name)]) != nil {
                throw RepositoryError.conflict(code: "admin_key_exists")
            }
            try tx.execute(AdminKeySQL.insert, [.text(name), .blob(keyHash), .integer(now)])
            tx.announce(.adminKeys)
        }
    }

    public func adminKeys() throws -> [AdminKeyRecord] {
        try reading { c in
            try c.query(AdminKeySQL.all, []).map {
                AdminKeyRecord(
                    name: $0["name"].text ?? "", createdAt: $0["created_at"].int64 ?? 0,
                    revokedAt: $0["revoked_at"].int64)
            }
        }
    }

    public func revokeAdminKey(name: String, now: Int64) throws -> Bool {
        try transaction { tx in
            let revoked = try tx.execute(AdminKeySQL.revoke, [.integer(now), .text(name)]) > 0
            if revoked { tx.announce(.adminKeys) }
            return revoked
        }
    }

    public func activeAdminKeyHashes() throws -> [(hash: [UInt8], name: String)] {
        try reading { c in
            try c.query(AdminKeySQL.active, []).compactMap { row in
                guard let hash = row["key_hash"].bytes, let name = row["name"].text else { return nil }
                return (hash, name)
            }
        }
    }
}

enum AdminKeySQL {
    static let exists = SQLText("SELECT 1 FROM admin_keys WHERE name = ?1")
    static let insert = SQLText("INSERT INTO admin_keys (name, key_hash, created_at) VALUES (?1, ?2, ?3)")
    static let all = SQLText("SELECT name, created_at, revoked_at FROM admin_keys ORDER BY created_at, name")
    static let revoke = SQLText("UPDATE admin_keys SET revoked_at = ?1 WHERE name = ?2 AND revoked_at IS NULL")
    static let active = SQLText("SELECT name, key_hash FROM admin_keys WHERE revoked_at IS NULL")
}
