import XCTest
final class PlaceholderSuplashStorageTests: XCTestCase { func testPlaceholder() {} }
