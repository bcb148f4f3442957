import Foundation
import SuplashDomain
import SuplashJSON

/// JSON of the sync feed and push results (spec §5): each document exactly as its REST
/// route returns it to its owner.
///
/// Some fields are computed from the owner's profile and the current local day — a bill's
/// `status`, a day's `goalMl`, the achievements' `currentStreakDays` — so a presenter is
/// made for one user at one instant.
struct SyncPresenter: Sendable {
    /// The owner's local today (bill `status`, current streak).
    var today: LocalDate
    /// The owner's base goal in ml (a day's `goalMl` = base goal + that day's context).
    var baseGoalMl: Int

    /// A presenter for `profile` at `now` (ms); without a profile (a user erased meanwhile)
    /// the defaults of a new profile apply.
    init(profile: UserProfile?, now: Int64, clocks: ZoneClocks = .shared) {
        let zone = profile?.timezone ?? UserProfile.defaultTimezone
        today = clocks.clock(zone).today(now: now)
        baseGoalMl = profile.map(HydrationRules.baseGoalMl) ?? 2500
    }

    /// `{collection, id, version, updatedAt, deleted, data}` (spec §5).
    func change(_ change: SyncChange) -> JSONValue {
        .object([
            ("collection", .string(change.collection)),
            ("id", .string(change.id)),
            ("version", .number(JSONNumber(change.version))),
            ("updatedAt", .string(RFC3339.format(change.updatedAt))),
            ("deleted", .bool(change.deleted)),
            ("data", change.document.map(document) ?? .null),
        ])
    }

    /// The document as its REST route shows it to its owner (no masking).
    func document(_ document: SyncDocument) -> JSONValue {
        switch document {
        case .profile(let p): Presenter.profile(p)
        case .waterEntry(let e): Presenter.entry(e)
        case .bill(let b): DomainPresenter.bill(b, today: today, masked: false)
        case .day(let d):
            DomainPresenter.day(d, goalMl: HydrationRules.dayGoalMl(baseGoalMl: baseGoalMl, context: d.content))
        case .achievements(let a): DomainPresenter.achievements(a, today: today)
        }
    }
}
