import Foundation
import SuplashDomain
import SuplashJSON
import SuplashLogging

/// Loads the tariff data files (`*.json` in `billing.tariffsDir`, spec §4 estimate) at start.
enum TariffFiles {
    /// The configured folder, else `config/tariffs` under the working directory or under a
    /// parent of the executable (found like `Migrations/sqlite`).
    static func locate(_ configured: String) throws -> String {
        try ResourceLocator.locate("config/tariffs", configured: configured, directory: true, configKey: "billing.tariffsDir")
    }

    /// Every tariff of the folder; a malformed file refuses start-up with a message naming it.
    static func load(_ configured: String, logger: Logger) throws -> TariffCatalog {
        let dir = try locate(configured)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".json") }.sorted()
        var tariffs: [Tariff] = []
        for file in files {
            guard let data = FileManager.default.contents(atPath: dir + "/" + file) else {
                throw Settings.LoadError(description: "cannot read tariff file \(file)")
            }
            do {
                tariffs.append(try Tariff(json: try JSONParser.parse(Array(data))))
            } catch let error as Tariff.FormatError {
                throw Settings.LoadError(description: "tariff file \(file): \(error.description)")
            } catch {
                throw Settings.LoadError(description: "tariff file \(file) is not valid JSON")
            }
        }
        do {
            let catalog = try TariffCatalog(tariffs)
            logger.info("tariffs_loaded", .count("tariffs", tariffs.count))
            return catalog
        } catch {
            throw Settings.LoadError(description: "tariffs: \(error.description)")
        }
    }
}
