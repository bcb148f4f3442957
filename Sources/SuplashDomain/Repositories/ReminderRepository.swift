/// Smart reminders' storage (spec §9 "Reminders"; docs/reminders.md, "Storage"). So far the
/// per-hour drinking history the adaptive schedule reads; the reminder rows and their routes
/// come next.
public protocol ReminderRepository: Sendable {
    /// The user's drinking per local hour over the complete days of the last 14 (the adaptive
    /// curve's input), bucketed in the profile's zone as of the writes that stored it.
    /// - Parameter now: ms since the epoch (decides "today" in the profile's zone).
    /// - Returns: nil when the user does not exist.
    /// - Throws: `RepositoryError`.
    func hourlyDrinking(userID: String, now: Int64) throws -> HourlyDrinking?
}
