import SuplashDomain
import SuplashSQL

/// The row mappings both repository adapters share (SQLite and PostgreSQL have the same
/// tables and column types): the column lists they select, row → model decoders, and
/// model → statement values. Only the SQL text (placeholders, locking) stays per adapter.
///
/// Times are ms since the epoch, amounts ml / milli-m³ / minor units as in the models;
/// booleans are stored as integers 0/1; a missing or NULL column decodes to the model's
/// default, never a crash.
public enum StoreRows {
    // MARK: - Columns

    /// The columns `user(_:)` reads from `users`.
    public static let userColumns = """
        id, email, email_verified, password_hash, display_name, weight_kg, activity_level, wake_time, sleep_time, \
        timezone, locale, daily_goal_ml, cup_sizes_ml, created_at, updated_at, version, reminders
        """

    /// The columns `entry(_:)` reads from `water_entries` (with `lww_at`).
    public static let entryColumns = """
        user_id, id, amount_ml, logged_at, source, health_kit_uuid, note, created_at, updated_at, version, deleted, lww_at
        """

    /// The columns `bill(_:)` reads from `bills` (with `deleted` and `lww_at`).
    public static let billColumns = """
        user_id, id, provider, subscriber_no, period, consumption_milli_m3, amount_minor, currency, due_date, paid_at, \
        created_at, updated_at, version, deleted, lww_at
        """

    /// The columns `day(_:)` reads from `days`.
    public static let dayColumns = "local_date, max_temperature_c, active_minutes, created_at, updated_at, version"

    /// The columns `achievements(_:)` reads from `achievements`.
    public static let achievementsColumns = """
        user_id, latest_run_end, latest_run_length, longest_streak, total_ml, days_goal_met, badges, updated_at, version
        """

    // MARK: - Rows → models

    /// A `users` row (`userColumns`) as a stored user.
    public static func user(_ row: some SQLRowValues) -> StoredUser {
        var p = UserProfile(
            id: row["id"].text ?? "", email: row["email"].text ?? "",
            displayName: row["display_name"].text, now: row["created_at"].int64 ?? 0)
        p.emailVerified = (row["email_verified"].int64 ?? 0) != 0
        p.weightKg = row["weight_kg"].double
        p.activityLevel = ActivityLevel(rawValue: row["activity_level"].text ?? "") ?? UserProfile.defaultActivityLevel
        p.wakeTime = row["wake_time"].text ?? UserProfile.defaultWakeTime
        p.sleepTime = row["sleep_time"].text ?? UserProfile.defaultSleepTime
        p.timezone = row["timezone"].text ?? UserProfile.defaultTimezone
        p.locale = row["locale"].text ?? UserProfile.defaultLocale
        p.dailyGoalMl = row["daily_goal_ml"].int64.map { Int($0) }
        p.cupSizesMl = (row["cup_sizes_ml"].text ?? "").utf8.split(separator: UInt8(ascii: ","))
            .compactMap { Int(Substring($0)) }
        p.reminders = ReminderSettings(stored: row["reminders"].text)
        p.updatedAt = row["updated_at"].int64 ?? p.createdAt
        p.version = row["version"].int64 ?? 1
        return StoredUser(profile: p, passwordHash: row["password_hash"].text)
    }

    /// A `water_entries` row (`entryColumns`) as an entry (live or tombstone).
    public static func entry(_ row: some SQLRowValues) -> WaterEntry {
        WaterEntry(
            id: row["id"].text ?? "", userID: row["user_id"].text ?? "",
            content: WaterEntryContent(
                amountMl: Int(row["amount_ml"].int64 ?? 0), loggedAt: row["logged_at"].int64 ?? 0,
                source: EntrySource(rawValue: row["source"].text ?? "") ?? .api,
                healthKitUUID: row["health_kit_uuid"].text, note: row["note"].text),
            createdAt: row["created_at"].int64 ?? 0, updatedAt: row["updated_at"].int64 ?? 0,
            version: row["version"].int64 ?? 1, deleted: (row["deleted"].int64 ?? 0) != 0)
    }

    /// A `bills` row (`billColumns`) as a bill; whether it is a tombstone is `billDeleted`.
    public static func bill(_ row: some SQLRowValues) -> Bill {
        let content = BillContent(
            provider: row["provider"].text ?? "", subscriberNo: row["subscriber_no"].text ?? "",
            period: row["period"].text.flatMap(YearMonth.init(parsing:)) ?? LocalDate(dayNumber: 0).yearMonth,
            consumptionMilliM3: row["consumption_milli_m3"].int64 ?? 0, amountMinor: row["amount_minor"].int64 ?? 0,
            currency: row["currency"].text ?? "TRY",
            dueDate: row["due_date"].text.flatMap(LocalDate.init(parsing:)) ?? LocalDate(dayNumber: 0),
            paidAt: row["paid_at"].int64)
        return Bill(
            id: row["id"].text ?? "", userID: row["user_id"].text ?? "", content: content,
            createdAt: row["created_at"].int64 ?? 0, updatedAt: row["updated_at"].int64 ?? 0,
            version: row["version"].int64 ?? 1)
    }

    /// True when a `bills` row is a tombstone.
    public static func billDeleted(_ row: some SQLRowValues) -> Bool {
        (row["deleted"].int64 ?? 0) != 0
    }

    /// A `days` row (`dayColumns`) as a day context.
    public static func day(_ row: some SQLRowValues) -> DayContext {
        DayContext(
            date: row["local_date"].text.flatMap(LocalDate.init(parsing:)) ?? LocalDate(dayNumber: 0),
            content: DayContextContent(
                maxTemperatureC: row["max_temperature_c"].double,
                activeMinutes: row["active_minutes"].int64.map { Int($0) }),
            createdAt: row["created_at"].int64 ?? 0, updatedAt: row["updated_at"].int64 ?? 0,
            version: row["version"].int64 ?? 1)
    }

    /// An `achievements` row (`achievementsColumns`) as the achievements state.
    public static func achievements(_ row: some SQLRowValues) -> Achievements {
        Achievements(
            latestRunEnd: row["latest_run_end"].text.flatMap(LocalDate.init(parsing:)),
            latestRunLength: Int(row["latest_run_length"].int64 ?? 0),
            longestStreakDays: Int(row["longest_streak"].int64 ?? 0), totalMl: row["total_ml"].int64 ?? 0,
            daysGoalMet: Int(row["days_goal_met"].int64 ?? 0), badges: badges(row["badges"].text ?? ""),
            updatedAt: row["updated_at"].int64 ?? 0, version: row["version"].int64 ?? 0)
    }

    /// The last-write-wins stamp of a row with `lww_at` and `lww_device` columns (spec §5).
    public static func stamp(_ row: some SQLRowValues) -> WriteStamp {
        WriteStamp(at: row["lww_at"].int64 ?? 0, device: row["lww_device"].text ?? "")
    }

    /// The `badges` column (`id:earnedAt,…`, earnedAt in ms) as earned badges; unknown or
    /// malformed items are skipped.
    public static func badges(_ text: String) -> [EarnedBadge] {
        // Split on UTF-8 bytes: a Character-wise `split` was ~10% of a create's instructions.
        text.utf8.split(separator: UInt8(ascii: ",")).compactMap { item in
            let parts = item.split(separator: UInt8(ascii: ":"))
            guard parts.count == 2, let badge = Badge(rawValue: String(Substring(parts[0]))),
                let at = Int64(Substring(parts[1]))
            else { return nil }
            return EarnedBadge(badge: badge, earnedAt: at)
        }
    }

    // MARK: - Feed rows → changes (spec §5)

    /// A `users` row (`userColumns` + `change_position`) as a `profile` change.
    public static func profileChange(_ row: some SQLRowValues) -> SyncChange {
        let profile = user(row).profile
        return SyncChange(
            collection: "profile", id: profile.id, version: profile.version,
            updatedAt: profile.updatedAt, deleted: false,
            position: row["change_position"].int64 ?? 0, document: .profile(profile))
    }

    /// A `water_entries` row (`entryColumns` + `change_position`) as a `water_entries`
    /// change (no document for a tombstone).
    public static func entryChange(_ row: some SQLRowValues) -> SyncChange {
        let entry = entry(row)
        return SyncChange(
            collection: "water_entries", id: entry.id, version: entry.version,
            updatedAt: entry.updatedAt, deleted: entry.deleted,
            position: row["change_position"].int64 ?? 0,
            document: entry.deleted ? nil : .waterEntry(entry))
    }

    /// A `bills` row (`billColumns` + `change_position`) as a `bills` change (no document
    /// for a tombstone).
    public static func billChange(_ row: some SQLRowValues) -> SyncChange {
        let bill = bill(row)
        let deleted = billDeleted(row)
        return SyncChange(
            collection: "bills", id: bill.id, version: bill.version, updatedAt: bill.updatedAt,
            deleted: deleted, position: row["change_position"].int64 ?? 0,
            document: deleted ? nil : .bill(bill))
    }

    /// A `days` row (`dayColumns` + `change_position`) as a `days` change (id: the date).
    public static func dayChange(_ row: some SQLRowValues) -> SyncChange {
        let day = day(row)
        return SyncChange(
            collection: "days", id: day.date.description, version: day.version,
            updatedAt: day.updatedAt, deleted: false, position: row["change_position"].int64 ?? 0,
            document: .day(day))
    }

    /// An `achievements` row (`achievementsColumns` + `change_position`) as an
    /// `achievements` change (id: the user id).
    public static func achievementsChange(_ row: some SQLRowValues) -> SyncChange {
        let a = achievements(row)
        return SyncChange(
            collection: "achievements", id: row["user_id"].text ?? "", version: a.version,
            updatedAt: a.updatedAt, deleted: false, position: row["change_position"].int64 ?? 0,
            document: .achievements(a))
    }

    // MARK: - Models → values

    /// The `badges` column of earned badges (`id:earnedAt,…`).
    public static func badgesText(_ badges: [EarnedBadge]) -> String {
        badges.map { "\($0.badge.rawValue):\($0.earnedAt)" }.joined(separator: ",")
    }

    /// The 14 profile values of the `users` insert and update statements, in this order:
    /// email, email_verified, display_name, weight_kg, activity_level, wake_time, sleep_time,
    /// timezone, locale, daily_goal_ml, cup_sizes_ml, updated_at, version, reminders.
    public static func profileValues(_ p: UserProfile) -> [SQLValue] {
        [
            .text(p.email), .integer(p.emailVerified ? 1 : 0), .optionalText(p.displayName),
            .optionalReal(p.weightKg), .text(p.activityLevel.rawValue), .text(p.wakeTime),
            .text(p.sleepTime), .text(p.timezone), .text(p.locale), .optionalInteger(p.dailyGoalMl.map { Int64($0) }),
            .text(p.cupSizesMl.map(String.init).joined(separator: ",")), .integer(p.updatedAt), .integer(p.version),
            .text(p.reminders.json.serializedString()),
        ]
    }

    /// The 8 content values of the `bills` insert and update statements, in this order:
    /// provider, subscriber_no, period, consumption_milli_m3, amount_minor, currency,
    /// due_date, paid_at.
    public static func billValues(_ b: BillContent) -> [SQLValue] {
        [
            .text(b.provider), .text(b.subscriberNo), .text(b.period.description), .integer(b.consumptionMilliM3),
            .integer(b.amountMinor), .text(b.currency), .text(b.dueDate.description), .optionalInteger(b.paidAt),
        ]
    }
}
