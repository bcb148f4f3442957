/// A result row of any SQL driver the stores run on (`SQLiteRow` of `SuplashStorage`,
/// `PostgresRow` of `SuplashPostgres`): values by 0-based column index or by column name, as
/// `SQLValue`s. The shared row mappings of the store adapters (`SuplashStoreRows`) read rows
/// through it, with the `SQLValue` accessors (`int64`, `double`, `text`, `bytes`), so one
/// decoder serves both engines.
public protocol SQLRowValues {
    /// The value of column `index` (0-based). A driver may trap when `index` is out of range,
    /// like an array.
    subscript(_ index: Int) -> SQLValue { get }
    /// The value of the column called `name`, or `.null` when there is no such column.
    subscript(_ name: String) -> SQLValue { get }
}
