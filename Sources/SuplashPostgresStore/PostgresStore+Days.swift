import SuplashDomain
import SuplashPostgres
import SuplashStoreCore

extension PostgresStore {
    /// Every day document of the user, oldest first (`DayStatements.all`), for the account
    /// export until it is written once.
    static func loadDays(_ c: PostgresConnection, userID: String) throws -> [DayContext] {
        try DayStatements.all(c, userID: userID)
    }
}
