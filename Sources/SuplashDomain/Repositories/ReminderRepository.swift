/// Smart reminders' storage (spec §9 "Reminders"; docs/reminders.md, "Storage"): the per-hour
/// drinking history the adaptive schedule reads and the user's reminders with their outcomes.
public protocol ReminderRepository: Sendable {
    /// The user's drinking per local hour over the complete days of the last 14 (the adaptive
    /// curve's input), bucketed in the profile's zone as of the writes that stored it.
    /// - Parameter now: ms since the epoch (decides "today" in the profile's zone).
    /// - Returns: nil when the user does not exist.
    /// - Throws: `RepositoryError`.
    func hourlyDrinking(userID: String, now: Int64) throws -> HourlyDrinking?

    /// The user's next hydration reminder and the most recent reminders of every kind with
    /// their outcomes, newest first (spec §9 `GET /v1/users/{uid}/reminders`).
    /// - Parameter limit: how many recent ones (§9: 50).
    /// - Throws: `RepositoryError`.
    func reminderOverview(userID: String, limit: Int) throws -> ReminderOverview

    /// `:drink` (spec §9): logs the reminder's glass once — an entry with the reminder id as its
    /// id, `source: notification`, `loggedAt` = `now`, `amountMl` or else the suggested cup —
    /// marks the reminder `acted` and plans the next one, in one transaction under the user's
    /// lock. A repeat answers the same entry (`.existing`; the first call fixed amount and time).
    /// - Throws: `RepositoryError.notFound` (not the user's reminder), `.conflict(code:
    ///   "reminder_entry_deleted")` (its entry was deleted), `.conflict(code:
    ///   "reminder_not_hydration")` (a bill or campaign reminder).
    func drinkReminder(userID: String, reminderID: String, amountMl: Int?, deviceID: String?, now: Int64) throws
        -> EntryCreateOutcome

    /// `:snooze` (spec §9): marks the reminder `snoozed` and makes the user's next hydration
    /// reminder due at `now + minutes` (suggesting the snoozed one's cup); only an intake write
    /// (a new entry drunk from two days before the reminder day on) replaces it. Returns that next reminder.
    /// - Throws: `RepositoryError.notFound`, `.conflict(code: "reminder_not_hydration")`.
    func snoozeReminder(userID: String, reminderID: String, minutes: Int, now: Int64) throws -> NextReminder

    /// `:dismiss` / `:open` (spec §9): records `outcome` (`.dismissed` or `.opened`) on a reminder
    /// that has none yet (a later action does not overwrite an earlier one; `:drink` does);
    /// a pending one counts as seen now (`sentAt`: the gap to the next and `maxPerDay`), is
    /// taken out of the schedule and the next one planned.
    /// - Throws: `RepositoryError.notFound` (not the user's reminder).
    func recordReminderOutcome(userID: String, reminderID: String, outcome: ReminderOutcome, now: Int64) throws

    /// The scheduler's step (docs/reminders.md, "Scheduler"): claims up to `limit` pending
    /// reminders due at `now` through `reminders_due` (`SKIP LOCKED` on PostgreSQL: instances
    /// never claim one row together; a user whose row another transaction holds is left for the
    /// next step), and in the same transaction turns each into `alert` rows of the push outbox
    /// (text from `messages` in the profile's locale), marks it sent, marks the user's earlier
    /// sent hydration reminders without an answer `ignored`, and plans the next one.
    /// - Parameter now: ms since the epoch (the caller's clock).
    /// - Throws: `RepositoryError`.
    func dispatchDueReminders(now: Int64, limit: Int, messages: MessageCatalogue) throws -> ReminderDispatchReport
    /// The history's retention (docs/reminders.md, "History retention"): deletes up to `limit`
    /// ended hydration and bill reminders (any state but pending) due before `dueBefore`, oldest
    /// first, in one transaction; campaign reminders are kept (their campaign's counts). Several
    /// instances may run it at once.
    /// - Parameter dueBefore: ms since the epoch.
    /// - Returns: how many were deleted (fewer than `limit`: nothing older is left).
    /// - Throws: `RepositoryError`.
    func purgeReminderHistory(dueBefore: Int64, limit: Int) throws -> Int
}

/// What one scheduler step did (counts for `/metrics`).
public struct ReminderDispatchReport: Sendable, Equatable {
    /// Due rows claimed (re-plan marks and rows of users held by another writer included).
    public var claimed = 0
    /// Reminders turned into pushes (recorded as sent; a user with no alert device gets none).
    public var sent = 0
    /// Earlier hydration reminders found ignored.
    public var ignored = 0
    /// Next hydration reminders planned.
    public var scheduled = 0
    /// Claimed rows left pending because another transaction held their user.
    public var skipped = 0
    /// Reminders given up on unsent: hydration ones due longer ago than an alert lives (30
    /// minutes: every instance was down, or the scheduler off; cancelled), bills' with no waking,
    /// non-quiet hour left on their day (moved to the next reminder day), campaigns' with no
    /// instant outside quiet hours left in their segment (cancelled). docs/reminders.md, "Late
    /// alerts".
    public var expired = 0

    /// All zero.
    public init() {}
}

/// The pending hydration reminder (spec §9 `next`). Instants in ms since the epoch.
public struct NextReminder: Sendable, Equatable {
    /// The reminder id (lower-case UUID).
    public var id: String
    /// When it is due.
    public var dueAt: Int64
    /// The suggested cup, ml.
    public var suggestedAmountMl: Int

    /// See the properties.
    public init(id: String, dueAt: Int64, suggestedAmountMl: Int) {
        self.id = id
        self.dueAt = dueAt
        self.suggestedAmountMl = suggestedAmountMl
    }
}

/// What `GET /v1/users/{uid}/reminders` shows (spec §9).
public struct ReminderOverview: Sendable, Equatable {
    /// The pending hydration reminder, or nil.
    public var next: NextReminder?
    /// The most recent reminders, newest due first (a sent one without an outcome yet reads
    /// `pending`, with its `sentAt`).
    public var recent: [ReminderRecord]

    /// See the properties.
    public init(next: NextReminder?, recent: [ReminderRecord]) {
        self.next = next
        self.recent = recent
    }
}
