import SuplashDomain
import SuplashStorage
import SuplashStoreRows

extension SQLiteStore: AdminKeyRepository {
    public func createAdminKey(name: String, keyHash: [UInt8], now: Int64) throws {
        try write { ctx in
            let c = ctx.connection
            if !(try c.query("SELECT 1 FROM admin_keys WHERE name = ?", [.text(name)])).isEmpty {
                throw RepositoryError.conflict(code: "admin_key_exists")
            }
            _ = try c.run("INSERT INTO admin_keys (name, key_hash, created_at) VALUES (?, ?, ?)",
                          [.text(name), .blob(keyHash), .integer(now)])
        }
    }

    public func adminKeys() throws -> [AdminKeyRecord] {
        try read { c in
            try c.query("SELECT name, created_at, revoked_at FROM admin_keys ORDER BY created_at, name", []).map {
                AdminKeyRecord(name: $0["name"].text ?? "", createdAt: $0["created_at"].int64 ?? 0, revokedAt: $0["revoked_at"].int64)
            }
        }
    }

    public func revokeAdminKey(name: String, now: Int64) throws -> Bool {
        try write { ctx in
            try ctx.connection.run("UPDATE admin_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
                                   [.integer(now), .text(name)]) > 0
        }
    }

    public func activeAdminKeyHashes() throws -> [(hash: [UInt8], name: String)] {
        try read { c in
            try c.query("SELECT name, key_hash FROM admin_keys WHERE revoked_at IS NULL", []).compactMap { row in
                guard let hash = row["key_hash"].bytes, let name = row["name"].text else { return nil }
                return (hash, name)
            }
        }
    }
}
