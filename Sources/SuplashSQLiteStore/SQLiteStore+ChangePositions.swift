import SuplashDomain
import SuplashStorage

extension SQLiteStore {
    /// Takes the next change position (see `nextChangePosition`) and arranges for the users'
    /// long polls to be woken after the commit. Every write path uses this.
    func takeChangePosition(_ ctx: WriteContext, userID: String) throws -> Int64 {
        let position = try SQLiteStore.nextChangePosition(ctx.connection)
        let notifier = changeNotifier
        ctx.afterCommit { notifier.notify(userID: userID) }
        return position
    }
}
