import SuplashDomain
import SuplashStorage
import SuplashStoreCore

extension SQLiteStore {
    /// Every day document of the user, oldest first (`DayStatements.all`), for the account
    /// export until it is written once.
    static func loadDays(_ c: SQLiteConnection, userID: String) throws -> [DayContext] {
        try DayStatements.all(c, userID: userID)
    }
}
