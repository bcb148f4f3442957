import SuplashDomain

/// The services of the hydration and bills domain (spec §4, §6), wired by the executable.
public struct DomainServices: Sendable {
    /// Days, per-day totals and achievements.
    public var hydration: any HydrationRepository
    /// Water bills.
    public var bills: any BillRepository
    /// Account export and erasure.
    public var accountData: any AccountDataRepository
    /// Tariffs loaded from `billing.tariffsDir` at start.
    public var tariffs: TariffCatalog
    /// One cached clock per IANA zone.
    public var clocks: ZoneClocks

    public init(
        hydration: any HydrationRepository, bills: any BillRepository, accountData: any AccountDataRepository,
        tariffs: TariffCatalog, clocks: ZoneClocks = .shared
    ) {
        self.hydration = hydration
        self.bills = bills
        self.accountData = accountData
        self.tariffs = tariffs
        self.clocks = clocks
    }

    /// The profile of `uid` and its clock.
    /// - Throws: 404 when the user does not exist.
    func profileAndClock(_ uid: String, _ services: Services) throws -> (UserProfile, ZoneClock) {
        guard let user = try services.users.user(id: uid) else { throw APIError.notFound }
        return (user.profile, clocks.clock(user.profile.timezone))
    }
}
