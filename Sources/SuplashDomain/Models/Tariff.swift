import SuplashJSON

/// One progressive tier: the price of every m³ up to `upToM3` (from the previous tier's
/// cap), or of every remaining m³ when `upToM3` is nil.
public struct TariffTier: Sendable, Equatable {
    /// Upper bound of the tier in thousandths of a m³, or nil for "no cap".
    public var upToMilliM3: Int64?
    /// Price per m³ in minor units (kuruş).
    public var unitPriceMinor: Int64

    public init(upToMilliM3: Int64?, unitPriceMinor: Int64) {
        self.upToMilliM3 = upToMilliM3
        self.unitPriceMinor = unitPriceMinor
    }
}

/// A provider's water tariff in effect from `validFrom` (spec §4 estimate). Tariffs are data
/// files in `config/tariffs/` (docs/hydration.md, "Tariffs").
public struct Tariff: Sendable, Equatable {
    /// Unique id, e.g. `iski-residential-2025-06-01`.
    public var id: String
    /// Provider code, as on bills (`ISKI`).
    public var provider: String
    /// First local day the tariff applies.
    public var validFrom: LocalDate
    /// Ascending caps; only the last tier may be uncapped.
    public var tiers: [TariffTier]

    public init(id: String, provider: String, validFrom: LocalDate, tiers: [TariffTier]) {
        self.id = id
        self.provider = provider
        self.validFrom = validFrom
        self.tiers = tiers
    }

    /// Errors reading a tariff file; messages name fields only.
    public struct FormatError: Error, Sendable, CustomStringConvertible {
        /// Names the field at fault, never file contents.
        public var description: String
    }

    /// Reads `{id, provider, validFrom, tiers: [{upToM3 (number or null), unitPriceMinor}]}`.
    /// - Throws: `FormatError` when a field is missing or wrong, caps do not ascend, or a
    ///   tier other than the last is uncapped.
    public init(json: JSONValue) throws(FormatError) {
        guard case .object = json else { throw FormatError(description: "a tariff must be a JSON object") }
        guard let id = json["id"]?.stringValue, !id.isEmpty else { throw FormatError(description: "id is required") }
        guard let provider = json["provider"]?.stringValue, BillValidation.isProviderCode(provider) else {
            throw FormatError(description: "provider must be an upper-case code of 2-16 characters")
        }
        guard let vf = json["validFrom"]?.stringValue, let validFrom = LocalDate(parsing: vf) else {
            throw FormatError(description: "validFrom must be YYYY-MM-DD")
        }
        guard case .array(let rawTiers)? = json["tiers"], !rawTiers.isEmpty else {
            throw FormatError(description: "tiers must be a non-empty array")
        }
        var tiers: [TariffTier] = []
        var previousCap: Int64 = 0
        for (index, raw) in rawTiers.enumerated() {
            guard case .number(let price)? = raw["unitPriceMinor"], let p = price.int64Value, p >= 0 else {
                throw FormatError(description: "tiers[\(index)].unitPriceMinor must be an integer >= 0")
            }
            var cap: Int64?
            switch raw["upToM3"] {
            case .number(let n)?:
                guard let d = n.doubleValue, n.decimalPlaces <= 3, d > 0 else {
                    throw FormatError(description: "tiers[\(index)].upToM3 must be a positive number with at most 3 decimals")
                }
                let milli = Int64((d * 1000).rounded())
                guard milli > previousCap else {
                    throw FormatError(description: "tiers[\(index)].upToM3 must be above the previous cap")
                }
                cap = milli
                previousCap = milli
            case .null?, nil:
                guard index == rawTiers.count - 1 else {
                    throw FormatError(description: "only the last tier may have upToM3 null")
                }
            default:
                throw FormatError(description: "tiers[\(index)].upToM3 must be a number or null")
            }
            tiers.append(TariffTier(upToMilliM3: cap, unitPriceMinor: p))
        }
        self.init(id: id, provider: provider, validFrom: validFrom, tiers: tiers)
    }

    /// The price of `milliM3` thousandths of a m³ in minor units: each tier's share times its
    /// unit price, summed exactly and rounded half up once at the end. Consumption past a
    /// last capped tier is priced at the last tier's price.
    public func priceMinor(milliM3: Int64) -> Int64 {
        var left = max(0, milliM3)
        var floor: Int64 = 0
        var thousandths: Int64 = 0  // minor units × 1000
        for (index, tier) in tiers.enumerated() where left > 0 {
            let isLast = index == tiers.count - 1
            let size = (tier.upToMilliM3 == nil || isLast) ? left : tier.upToMilliM3.map { $0 - floor } ?? left
            let used = min(left, size)
            thousandths += used * tier.unitPriceMinor
            left -= used
            floor = tier.upToMilliM3 ?? floor
        }
        return (thousandths + 500) / 1000
    }
}

/// Every loaded tariff, by provider (spec §4 estimate).
public struct TariffCatalog: Sendable {
    /// Every tariff, by provider then `validFrom`.
    public let tariffs: [Tariff]

    /// - Throws: `Tariff.FormatError` when two tariffs share an id.
    public init(_ tariffs: [Tariff]) throws(Tariff.FormatError) {
        var ids = Set<String>()
        for t in tariffs where !ids.insert(t.id).inserted {
            throw Tariff.FormatError(description: "tariff id \(t.id) appears twice")
        }
        self.tariffs = tariffs.sorted { ($0.provider, $0.validFrom) < ($1.provider, $1.validFrom) }
    }

    /// True when at least one tariff names `provider`.
    public func knows(provider: String) -> Bool { tariffs.contains { $0.provider == provider } }

    /// The tariff of `provider` in effect on `day`: the one with the latest `validFrom` ≤ `day`.
    public func tariff(provider: String, on day: LocalDate) -> Tariff? {
        tariffs.last { $0.provider == provider && $0.validFrom <= day }
    }
}
